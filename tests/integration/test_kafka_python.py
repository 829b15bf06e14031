"""kafka-python 3.0.12 against a real `kafpy server`: the default (idempotent) producer,
KafkaConsumer with assign/seek, offsets lookups, and KafkaAdminClient."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

from kafpy.records.compression import CompressionType
from kafpy.records.memory_records import MemoryRecords
from tests.fixtures.broker import KafpyBroker


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def consume(bootstrap: str, tp: TopicPartition, offset: int, count: int) -> list[Any]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000
    )
    try:
        consumer.assign([tp])
        consumer.seek(tp, offset)
        out = []
        for msg in consumer:
            out.append(msg)
            if len(out) == count:
                break
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_default_producer_and_consumer_assign_seek(
    kafpy_module_broker: KafpyBroker, compression: str | None
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = topic_name("kp")
    # linger so that the 50 records travel as one batch: kafka-python sends a batch that
    # compression would not shrink (a lone small record) uncompressed
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5000
    )
    assert producer.config["enable_idempotence"]  # the default: needs InitProducerId
    futures = [
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("n", str(i).encode())],
                      timestamp_ms=1_700_000_000_000 + i)
        for i in range(50)
    ]  # fmt: skip
    producer.flush(30)
    metas = [f.get(timeout=30) for f in futures]
    producer.close()
    assert [m.offset for m in metas] == list(range(50))
    assert {m.partition for m in metas} == {0}
    # the broker stored the batches as kafka-python compressed them
    segment = kafpy_module_broker.log_dir / f"{topic}-0" / "00000000000000000000.log"
    codecs = {batch.compression_type for batch in MemoryRecords(segment.read_bytes()).batches()}
    assert codecs == {CompressionType[(compression or "none").upper()]}

    tp = TopicPartition(topic, 0)
    msgs = consume(bootstrap, tp, 0, 50)
    assert [(m.offset, m.key, m.value) for m in msgs] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(50)
    ]
    assert [m.headers for m in msgs] == [[("n", str(i).encode())] for i in range(50)]
    assert [m.timestamp for m in msgs] == [1_700_000_000_000 + i for i in range(50)]
    # seek into the middle
    assert [m.offset for m in consume(bootstrap, tp, 42, 8)] == list(range(42, 50))


def test_offsets_lookups(kafpy_module_broker: KafpyBroker) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = topic_name("off")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(10):
        producer.send(topic, value=b"x", timestamp_ms=1_000_000 + 1000 * i)
    producer.flush(30)
    producer.close()
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 10}
        found = consumer.offsets_for_times({tp: 1_004_500})[tp]
        assert (found.offset, found.timestamp) == (5, 1_005_000)
        assert consumer.offsets_for_times({tp: 9_999_999})[tp] is None
    finally:
        consumer.close()


def test_admin_client(kafpy_module_broker: KafpyBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafpy_module_broker.bootstrap)
    topic = topic_name("adm")
    try:
        admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"})])
        assert topic in admin.list_topics()
        admin.create_partitions({topic: NewPartitions(4)})
        [desc] = admin.describe_topics([topic])
        assert len(desc["partitions"]) == 4
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        entry = configs["topic"][topic]["retention.ms"]
        assert (entry["value"], entry["config_source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
        admin.delete_topics([topic])
        assert topic not in admin.list_topics()
    finally:
        admin.close()
