"""Clients of message format v0/v1 against a real `kafpy server`: kafka-python pinned to old
`api_version`s (Produce v0–v2, Fetch v0–v3, ListOffsets v0) and librdkafka without
ApiVersions (`api.version.request=false` with an old `broker.version.fallback`)."""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.records.compression import CompressionType
from kafpy.records.legacy_record import build_message_set
from kafpy.records.memory_records import MemoryRecords
from tests.fixtures.broker import KafpyBroker

OLD_VERSIONS = [(0, 9), (0, 10, 1), (0, 11), (1, 0), (2, 0)]


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, config: dict[str, str] | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, 1, topic_configs=config or {})])
    finally:
        admin.close()


def stored_batches(broker: KafpyBroker, topic: str) -> list[int]:
    """The magic of every batch in the partition's segment files."""
    data = b"".join(
        p.read_bytes() for p in sorted((broker.data_dir / "logs" / f"{topic}-0").glob("*.log"))
    )
    return [b.magic for b in MemoryRecords(data).batches()]


def old_consume(
    bootstrap: str, topic: str, api_version: tuple[int, ...], count: int
) -> list[tuple[int, bytes | None, bytes | None, int]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version,
                             enable_auto_commit=False, consumer_timeout_ms=10000,
                             auto_offset_reset="earliest")  # fmt: skip
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        out = []
        for msg in consumer:
            out.append((msg.offset, msg.key, msg.value, msg.timestamp))
            if len(out) == count:
                break
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("api_version", OLD_VERSIONS, ids=lambda v: ".".join(map(str, v)))
@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4"])
def test_kafka_python_old_api_versions_round_trip(
    kafpy_module_broker: KafpyBroker, api_version: tuple[int, ...], compression: str | None
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = topic_name("old")
    create_topic(bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version,
                             compression_type=compression, linger_ms=200)  # fmt: skip
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0,
                             timestamp_ms=1_700_000_000_000 + i) for i in range(30)]  # fmt: skip
    producer.flush(30)
    metas = [f.get(timeout=30) for f in futures]
    producer.close()
    assert [m.offset for m in metas] == list(range(30))
    assert set(stored_batches(kafpy_module_broker, topic)) == {2}  # converted on the way in
    got = old_consume(bootstrap, topic, api_version, 30)
    assert [(o, k, v) for o, k, v, _t in got] == [(i, b"k%d" % i, b"v%d" % i) for i in range(30)]
    if api_version >= (0, 10, 1):
        assert [t for *_x, t in got] == [1_700_000_000_000 + i for i in range(30)]
    # a current client reads what the old one wrote
    assert len(old_consume(bootstrap, topic, (2, 5), 30)) == 30


def test_old_consumer_reads_what_a_current_producer_wrote_from_the_middle(
    kafpy_module_broker: KafpyBroker,
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = topic_name("down")
    create_topic(bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", linger_ms=200)
    for i in range(20):
        producer.send(topic, value=b"%d" % i, partition=0)
    producer.flush(30)
    producer.close()
    for api_version in [(0, 9), (0, 10, 1)]:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version,
                                 consumer_timeout_ms=10000)  # fmt: skip
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 7)  # inside the one stored batch
            values = []
            for msg in consumer:
                values.append((msg.offset, msg.value))
                if len(values) == 13:
                    break
            assert values == [(i, b"%d" % i) for i in range(7, 20)]
            # ListOffsets v0 (0.9) and v1 both find the ends
            assert consumer.end_offsets([tp])[tp] == 20
            assert consumer.beginning_offsets([tp])[tp] == 0
        finally:
            consumer.close()


@pytest.mark.parametrize("fallback", ["0.9.0", "0.8.2"])
@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4"])
def test_librdkafka_without_api_version_request(
    kafpy_module_broker: KafpyBroker, fallback: str, compression: str
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = topic_name("rdk")
    create_topic(bootstrap, topic)
    old = {"bootstrap.servers": bootstrap, "api.version.request": False,
           "broker.version.fallback": fallback}  # fmt: skip
    producer = Producer({**old, "compression.type": compression, "linger.ms": 50})
    errors: list[object] = []
    for i in range(40):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0,
                         on_delivery=lambda err, _msg: errors.append(err) if err else None)  # fmt: skip
    assert producer.flush(30) == 0 and errors == []
    consumer = Consumer({**old, "group.id": topic, "enable.auto.commit": False})
    try:
        consumer.assign([CkTopicPartition(topic, 0, 0)])
        got = []
        while len(got) < 40:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(got)} of 40 records arrived"
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(40)]


def test_down_conversion_disabled_and_zstd_are_refused_per_partition(
    kafpy_module_broker: KafpyBroker,
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    disabled, zstd = topic_name("nodown"), topic_name("zstd")
    create_topic(bootstrap, disabled, {"message.downconversion.enable": "false"})
    create_topic(bootstrap, zstd)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(disabled, b"x", partition=0)
    producer.flush(30)
    producer.close()
    zproducer = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd"})
    zproducer.produce(zstd, b"y" * 100, partition=0)
    assert zproducer.flush(30) == 0
    for topic, error in [(disabled, KafkaError.UNSUPPORTED_VERSION),
                         (zstd, KafkaError.UNSUPPORTED_COMPRESSION_TYPE)]:  # fmt: skip
        consumer = Consumer({"bootstrap.servers": bootstrap, "api.version.request": False,
                             "broker.version.fallback": "0.9.0", "group.id": topic})  # fmt: skip
        try:
            consumer.assign([CkTopicPartition(topic, 0, 0)])
            seen = None
            for _ in range(20):
                msg = consumer.poll(1)
                if msg is not None and msg.error() is not None:
                    seen = msg.error().code()
                    break
                assert msg is None, "an old consumer got records it cannot be given"
            assert seen == error
        finally:
            consumer.close()
    # the same topics still serve current consumers
    assert len(old_consume(bootstrap, disabled, (2, 5), 1)) == 1


def _roundtrip(port: int, key: ApiKey, version: int, body: dict[str, object]) -> dict[str, Any]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode_request(RequestHeader(key, version, 7, "old"), body))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        _cid, answer = decode_response(key, version, sock.recv(size, socket.MSG_WAITALL))
    return answer


def test_a_damaged_message_set_is_refused_and_nothing_is_written(
    kafpy_module_broker: KafpyBroker,
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    port = int(bootstrap.rpartition(":")[2])
    topic = topic_name("bad")
    create_topic(bootstrap, topic)
    good = build_message_set(1, [(0, 1000, b"k", b"v")])
    damaged = bytearray(build_message_set(1, [(0, 1000, b"k", b"v")], CompressionType.GZIP))
    damaged[-1] ^= 0xFF
    too_small = struct.pack(">qi", 0, 5) + good[12:]
    for records, error in [(bytes(damaged), Errors.CORRUPT_MESSAGE), (b"\x00" * 40, Errors.CORRUPT_MESSAGE),
                           (too_small, Errors.CORRUPT_MESSAGE), (good, Errors.NONE)]:  # fmt: skip
        answer = _roundtrip(port, ApiKey.PRODUCE, 2, {"acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": records}]}]})  # fmt: skip
        [partition] = answer["responses"][0]["partition_responses"]
        assert partition["error_code"] == error, records
    # only the good message was stored, and ListOffsets v0 says so
    answer = _roundtrip(port, ApiKey.LIST_OFFSETS, 0, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}]}]})  # fmt: skip
    assert answer["topics"][0]["partitions"][0]["old_style_offsets"] == [1]
