"""A real `kafpy server` validates the records of every produced batch as Kafka's LogValidator
does: forged batches (correct CRC, lying contents) sent as raw Produce requests are refused
with CORRUPT_MESSAGE, INVALID_RECORD or INVALID_TIMESTAMP and per-record errors (Produce
v8, KIP-467), and a confluent-kafka consumer reads every record produced before and after
them. A zstd bomb (a 1 GiB record in 32 KB) is refused without the broker expanding it."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.records import RecordBatchBuilder, build_batch
from kafpy.testing.wait import WaitTimeout, wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.forged_batches import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    MESSAGE_TOO_LARGE,
    lying_batches,
    zstd_bomb,
)


def produce_raw(port: int, topic: str, batch: bytes, version: int = 8) -> dict[str, Any]:
    """Send one Produce request holding `batch` for partition 0; its partition response."""
    body = {"acks": 1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(encode_request(RequestHeader(ApiKey.PRODUCE, version, 7, "forger"), body))
        (size,) = struct.unpack(">i", _read(s, 4))
        cid, answer = decode_response(ApiKey.PRODUCE, version, _read(s, size))
    assert cid == 7
    response: dict[str, Any] = answer["responses"][0]["partition_responses"][0]
    return response


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "the broker closed the connection"
        buf += chunk
    return buf


def create_topics(bootstrap: str, topics: dict[str, dict[str, str]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=1, replication_factor=1, config=c) for t, c in topics.items()]
    )
    for future in futures.values():
        future.result(30)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for v in values:
        producer.produce(topic, key=v, value=v)
    assert producer.flush(30) == 0


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    got: list[bytes] = []

    def all_read() -> bool:
        if len(got) < count:
            msg = consumer.poll(1.0)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append(msg.value())
        return len(got) >= count

    try:
        # what came within 60 s: the test compares it with what it expects
        with contextlib.suppress(WaitTimeout):
            wait_until(all_read, 60, f"{count} records", interval_s=0)
    finally:
        consumer.close()
    return got


def test_forged_batches_are_refused_and_consumers_get_past_them(
    kafpy_broker: KafpyBroker,
) -> None:
    plain, compacted, timed = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("plain", "compact", "timed"))
    create_topics(
        kafpy_broker.bootstrap,
        {
            plain: {},
            compacted: {"cleanup.policy": "compact"},
            timed: {"message.timestamp.difference.max.ms": "60000"},
        },
    )
    produce(kafpy_broker.bootstrap, plain, [b"before-%d" % i for i in range(3)])
    now = int(time.time() * 1000)

    for name, forged in lying_batches(now).items():
        for version in (3, 8):
            answer = produce_raw(kafpy_broker.port, plain, forged, version)
            assert answer["error_code"] == CORRUPT_MESSAGE, (name, version, answer)
            assert answer["base_offset"] == -1

    keyless = build_batch([(b"k", b"1"), (None, b"2"), (b"k", b"3")], timestamp=now)
    answer = produce_raw(kafpy_broker.port, compacted, keyless)
    assert answer["error_code"] == INVALID_RECORD, answer
    assert [e["batch_index"] for e in answer["record_errors"]] == [1]
    assert "without key" in answer["record_errors"][0]["batch_index_error_message"]

    builder = RecordBatchBuilder()
    builder.append(now, b"k", b"now")
    builder.append(now - 3_600_000, b"k", b"an hour ago")  # the header's timestamps stay at now
    answer = produce_raw(kafpy_broker.port, timed, builder.build())
    assert answer["error_code"] == INVALID_TIMESTAMP, answer
    assert [e["batch_index"] for e in answer["record_errors"]] == [1]

    produce(kafpy_broker.bootstrap, plain, [b"after-%d" % i for i in range(3)])
    expected = [b"before-%d" % i for i in range(3)] + [b"after-%d" % i for i in range(3)]
    assert consume_all(kafpy_broker.bootstrap, plain, len(expected)) == expected
    assert kafpy_broker.process is not None and kafpy_broker.process.poll() is None
    assert "Traceback" not in kafpy_broker.log_path.read_text(errors="replace")


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM): a buffer expanded and freed again before
    the answer still shows."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmHWM for process {pid}")


def test_a_zstd_bomb_is_refused_without_the_broker_expanding_it(kafpy_broker: KafpyBroker) -> None:
    topic = f"bomb-{uuid.uuid4().hex[:6]}"
    create_topics(kafpy_broker.bootstrap, {topic: {}})
    produce(kafpy_broker.bootstrap, topic, [b"before"])
    assert kafpy_broker.process is not None
    pid = kafpy_broker.process.pid
    bomb = zstd_bomb(int(time.time() * 1000))  # ~32 KB holding a 1 GiB record
    assert len(bomb) < 64 * 1024
    before = peak_rss_kib(pid)
    answer = produce_raw(kafpy_broker.port, topic, bomb)
    grown_kib = peak_rss_kib(pid) - before
    assert grown_kib < 128 * 1024, f"the broker's peak RSS grew by {grown_kib} KiB"
    assert answer["error_code"] == MESSAGE_TOO_LARGE, answer
    assert "decompresses to more than" in answer["error_message"]
    produce(kafpy_broker.bootstrap, topic, [b"after"])
    assert consume_all(kafpy_broker.bootstrap, topic, 2) == [b"before", b"after"]
