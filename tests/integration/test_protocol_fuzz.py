"""Schema-driven fuzzing of every API the broker advertises, against a real `kafpy server`.

Hypothesis builds a well-formed request for a random advertised API and version straight
from kafpy's message tables (every field of that version, random values of its type),
then maybe damages its bytes. Each request goes on its own connection. Meanwhile a
well-behaved producer and consumer work on a topic of their own. The broker must never
die, must answer or close only the fuzzed connection, and the side pair must lose nothing.

Topic names the fuzzer draws never name the side topic. The fuzzer never speaks as the
controller: kafpy, like Kafka while no ACL demands ClusterAction, obeys any well-formed
LeaderAndIsr, UpdateMetadata or StopReplica whose controller epoch is current (it could tell
this broker that no broker is alive), so those carry a stale controller epoch and reach the
decoder and the epoch check only; ControlledShutdown names some other broker.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.headers import RequestHeader, encode_request
from kafpy.protocol.messages import REQUESTS
from kafpy.protocol.schema import Array, Field, Message, Struct
from kafpy.records.builder import build_batch
from kafpy.testing.wait import WaitTimeout, wait_until
from tests.fixtures.broker import KafpyBroker

pytestmark = pytest.mark.timeout(280)

SIDE_TOPIC = f"side-{uuid.uuid4().hex[:8]}"

# Small numbers mostly (counts, partitions, ids), with the edges of each width now and then.
_EDGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _int(kind: str) -> st.SearchStrategy[int]:
    lo, hi = _EDGES[kind]
    small = st.integers(max(lo, -3), min(hi, 40))
    return st.one_of(small, small, small, st.sampled_from([lo, hi, 0, -1]))


# Names never start with "side-": the side topic is out of the fuzzer's reach.
_name = st.text(alphabet="abcfuzz-_.", min_size=0, max_size=12).map(lambda s: "f" + s)
_records = st.one_of(
    st.none(),
    st.binary(max_size=80),
    st.lists(st.binary(max_size=20), min_size=1, max_size=4).map(lambda vs: build_batch(vs)),
)


def _primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in _EDGES:
        return _int(kind)
    if kind == "float64":
        return st.floats(allow_nan=True)
    if kind == "bool":
        return st.booleans()
    if kind == "uuid":
        return st.uuids()
    if kind == "string":
        return st.one_of(_name, st.text(max_size=20).map(lambda s: "f" + s))
    if kind == "bytes":
        return st.binary(max_size=40)
    if kind == "records":
        return _records
    raise AssertionError(f"no strategy for the field type {kind!r}")


def _value(field: Field, version: int) -> st.SearchStrategy[Any]:
    ft = field.type
    if isinstance(ft, Array):
        elem = _struct(ft.element, version) if isinstance(ft.element, Struct) else None
        inner = elem if elem is not None else _primitive(str(ft.element))
        values: st.SearchStrategy[Any] = st.lists(inner, max_size=3)
    elif isinstance(ft, Struct):
        values = _struct(ft, version)
    else:
        values = _primitive(ft)
    if field.nullable is not None and field.nullable[0] <= version <= field.nullable[1]:
        values = st.one_of(st.none(), values)
    return values


def _struct(struct_type: Struct, version: int) -> st.SearchStrategy[dict[str, Any]]:
    fields = [f for f in struct_type.fields if f.in_version(version)]
    return st.fixed_dictionaries({f.name: _value(f, version) for f in fields})


def _body(message: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return _struct(Struct([f for f in message.fields if f.in_version(version)]), version)


_FROM_CONTROLLER = {ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA}


@st.composite
def well_formed_request(draw: st.DrawFn, api_key: ApiKey | None = None) -> bytes:
    if api_key is None:
        api_key = draw(st.sampled_from(sorted(SUPPORTED_VERSIONS)))
    lo, hi = SUPPORTED_VERSIONS[api_key]
    version = draw(st.integers(lo, hi))
    body = draw(_body(REQUESTS[api_key], version))
    if api_key in _FROM_CONTROLLER:
        body["controller_epoch"] = draw(st.integers(-(2**31), -1))
    elif api_key == ApiKey.CONTROLLED_SHUTDOWN:
        body["broker_id"] = draw(st.integers(1, 2**31 - 1))
    elif api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        # a real quota (a default one holds every client) would rightly throttle the
        # well-behaved client beside the fuzzing: quotas are validated, not set
        body["validate_only"] = True
    header = RequestHeader(api_key, version, draw(st.integers(0, 2**31 - 1)), "fuzz")
    return encode_request(header, body)


@st.composite
def fuzzed_request(draw: st.DrawFn, api_key: ApiKey | None = None) -> bytes:
    frame = bytearray(draw(well_formed_request(api_key)))
    if draw(st.booleans()):
        return bytes(frame)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(4, len(frame) - 1))
        frame[pos] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        frame = frame[: draw(st.integers(4, len(frame)))]
        frame[:4] = struct.pack(">i", len(frame) - 4)
    return bytes(frame)


def exchange(port: int, frame: bytes) -> None:
    """Send one frame, half-close, and read answers until the broker closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(frame)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass  # an answer, then the close; a hang fails with socket.timeout


class SidePair:
    """A producer (acks=all) and a consumer on SIDE_TOPIC, running beside the fuzzer."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.acked: list[bytes] = []
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._produce, daemon=True)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.append(msg.value())
            else:
                self.failed.append(str(err))

        n = 0
        while not self.stop.is_set():
            producer.produce(SIDE_TOPIC, value=b"side-%06d" % n, on_delivery=on_delivery)
            producer.poll(0)
            n += 1
            time.sleep(0.005)
        assert producer.flush(30) == 0

    def consume_all(self) -> list[bytes]:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "unused", "enable.auto.commit": False}
        )
        partitions = consumer.list_topics(SIDE_TOPIC, timeout=30).topics[SIDE_TOPIC].partitions
        consumer.assign([TopicPartition(SIDE_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
        got: list[bytes] = []

        def all_read() -> bool:
            if len(got) < len(self.acked):
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
            return len(got) >= len(self.acked)

        try:
            # what came by then: the test compares it with what was acknowledged
            with contextlib.suppress(WaitTimeout):
                wait_until(all_read, 60, "every acknowledged record", interval_s=0)
        finally:
            consumer.close()
        return got


def test_fuzzed_requests_of_every_api_hurt_nobody(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory({"socket.request.max.bytes": str(1 << 20)})
    side = SidePair(broker.bootstrap)
    side.thread.start()
    # a head start for the side producer, not a condition: the test judges what it got
    with contextlib.suppress(WaitTimeout):
        wait_until(lambda: side.acked, 30, "a first acknowledgement", interval_s=0.05)
    seen_apis: set[int] = set()

    @settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
    @given(fuzzed_request())
    def one(frame: bytes) -> None:
        if len(frame) >= 6:
            seen_apis.add(struct.unpack_from(">h", frame, 4)[0])
        exchange(broker.port, frame)
        assert broker.process is not None and broker.process.poll() is None, broker.log_tail()

    def each_missed(missed: list[ApiKey]) -> None:
        # the random draw covers the ~60 APIs only probably: every API it missed gets
        # requests of its own (a fixed list, so hypothesis can replay the examples)
        @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            for api_key in missed:
                exchange(broker.port, data.draw(fuzzed_request(api_key)))
                assert broker.process is not None and broker.process.poll() is None, (
                    broker.log_tail()
                )

        if missed:
            run()
        seen_apis.update(missed)

    try:
        one()
        each_missed(sorted(set(SUPPORTED_VERSIONS) - seen_apis))
    finally:
        side.stop.set()
        side.thread.join(60)
    assert not side.thread.is_alive()
    assert seen_apis >= set(SUPPORTED_VERSIONS), sorted(set(SUPPORTED_VERSIONS) - seen_apis)
    assert side.failed == [], side.failed[:5]
    assert side.acked, "the side producer got nothing acknowledged"
    got = side.consume_all()
    assert sorted(got) == sorted(side.acked), (len(got), len(side.acked), broker.log_tail(60))
    assert broker.process is not None and broker.process.poll() is None, broker.log_tail()
    assert "Traceback" not in broker.log_path.read_text(errors="replace"), broker.log_tail(120)
