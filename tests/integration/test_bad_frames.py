"""Random and mutated frames thrown at a real `kafpy server`: it never dies, each bad
connection is answered or closed, and a well-behaved client on another connection is
unaffected."""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Callable

from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.records.builder import build_batch
from tests.fixtures.broker import KafpyBroker

MAX_REQUEST = 1 << 20


def _frames() -> list[bytes]:
    def req(key: ApiKey, version: int, body: dict[str, object]) -> bytes:
        return encode_request(RequestHeader(key, version, 1, "fuzz"), body)

    batch = build_batch([b"a", b"b"])
    return [
        req(ApiKey.API_VERSIONS, 2, {}),
        req(ApiKey.METADATA, 8, {"topics": [{"name": "fuzz"}], "allow_auto_topic_creation": False}),
        req(ApiKey.PRODUCE, 8, {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "fuzz", "partition_data": [{"index": 0, "records": batch}]}]}),
        req(ApiKey.FETCH, 11, {"replica_id": -1, "max_wait_ms": 10, "min_bytes": 1, "max_bytes": 1000,
                               "topics": [{"topic": "fuzz", "partitions": [
                                   {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}]}]}),
        req(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "topics": [
            {"name": "fuzz", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
    ]  # fmt: skip


FRAMES = _frames()


@st.composite
def mutated_frame(draw: st.DrawFn) -> bytes:
    frame = bytearray(draw(st.sampled_from(FRAMES)))
    for _ in range(draw(st.integers(0, 6))):
        pos = draw(st.integers(0, len(frame) - 1))
        frame[pos] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        frame = frame[: draw(st.integers(0, len(frame)))]
    if draw(st.booleans()):
        # keep the size prefix consistent so the damage reaches the decoder
        frame[:4] = struct.pack(">i", max(0, len(frame) - 4))
    return bytes(frame) + draw(st.binary(max_size=16))


garbage = st.one_of(
    st.binary(max_size=200),
    st.binary(min_size=1, max_size=200).map(lambda b: struct.pack(">i", len(b)) + b),
    mutated_frame(),
)


def throw(port: int, data: bytes) -> None:
    """Send `data`, half-close, and read until the broker closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass  # answers (if any) then the close; a hang fails with socket.timeout


class GoodClient:
    """A well-behaved client on its own connection: Metadata requests, answered in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.correlation_id = 0

    def metadata(self) -> dict[str, object]:
        self.correlation_id += 1
        self.sock.sendall(encode_request(RequestHeader(ApiKey.METADATA, 8, self.correlation_id, "good"),
                                         {"topics": None}))  # fmt: skip
        size = struct.unpack(">i", self._read(4))[0]
        cid, body = decode_response(ApiKey.METADATA, 8, self._read(size))
        assert cid == self.correlation_id
        return body

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "the broker closed the well-behaved client's connection"
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def test_bad_frames_never_hurt_the_broker(kafpy_broker_factory: Callable[..., KafpyBroker]) -> None:
    broker = kafpy_broker_factory({"socket.request.max.bytes": str(MAX_REQUEST)})
    good = GoodClient(broker.port)
    assert good.metadata()["brokers"]

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(garbage)
    def one(data: bytes) -> None:
        throw(broker.port, data)
        assert broker.process is not None and broker.process.poll() is None, broker.log_tail()
        assert good.metadata()["brokers"]

    try:
        one()
    finally:
        good.close()
    # a normal producer still works after all that
    topic = f"after-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    producer.produce(topic, value=b"fine")
    assert producer.flush(30) == 0
    assert "Traceback" not in broker.log_path.read_text(errors="replace"), broker.log_tail(80)
