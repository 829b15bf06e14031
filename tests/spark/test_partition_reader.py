"""KafkaPartitionReader and failOnDataLoss: reading offsets that retention already deleted,
against a broker whose retention check runs every 100 ms."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from kafka import KafkaProducer

from kafpy.client.fetcher import EARLIEST_TIMESTAMP, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.topic_partition import TopicPartition
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.spark.fixtures import create_topic, topic_name

RECORDS = 12


def earliest(bootstrap: str, topic: str) -> int:
    async def run() -> int:
        async with KafkaClient(bootstrap) as client:
            tp = TopicPartition(topic, 0)
            return (await Fetcher(client).list_offsets([tp], EARLIEST_TIMESTAMP))[tp]

    return asyncio.run(run())


@pytest.fixture(scope="module")
def truncated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A topic of one-record segments whose old segments retention has deleted: every
    record but the last (offset RECORDS - 1) is a day old, past retention.ms of an hour."""
    broker = KafpyBroker(
        tmp_path_factory.mktemp("retention-broker"),
        {"log.retention.check.interval.ms": "100", "log.initial.task.delay.ms": "0"},
    )
    broker.start()
    try:
        topic = create_topic(
            broker.bootstrap,
            topic_name("loss"),
            1,
            {"segment.bytes": "100", "retention.ms": "3600000"},
        )
        now = int(time.time() * 1000)
        # not idempotent: retention deletes the first segments while this still produces, and
        # that race (UNKNOWN_PRODUCER_ID, then a producer-id reset) is not what this tests
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
        for i in range(RECORDS):  # one batch each: every batch rolls a new segment
            ts = now if i == RECORDS - 1 else now - 86_400_000
            producer.send(topic, value=b"v%d" % i, timestamp_ms=ts).get(timeout=30)
        producer.close()
        wait_until(
            lambda: earliest(broker.bootstrap, topic) >= RECORDS - 1,
            30,
            "retention to delete the old segments",
        )
        yield broker.bootstrap, topic
    finally:
        broker.stop()


def read(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (
        spark.read.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {"0": 0}}))
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_fail_on_data_loss_names_partition_and_offsets(spark: Any, truncated: Any) -> None:
    bootstrap, topic = truncated
    with pytest.raises(Exception) as info:
        read(spark, bootstrap, topic).collect()
    message = str(info.value)
    assert f"Partition {topic}-0: offsets 0 to {RECORDS - 2} are no longer available" in message
    assert f"the log now starts at offset {RECORDS - 1}" in message
    assert "failOnDataLoss=false" in message


def test_without_fail_on_data_loss_reads_what_is_left(spark: Any, truncated: Any) -> None:
    bootstrap, topic = truncated
    rows = read(spark, bootstrap, topic, failOnDataLoss="false").collect()
    assert [(r.offset, bytes(r.value)) for r in rows] == [(RECORDS - 1, b"v%d" % (RECORDS - 1))]


def test_streaming_fail_on_data_loss(spark: Any, truncated: Any, tmp_path: Any) -> None:
    bootstrap, topic = truncated
    seen: list[int] = []

    def start(**options: str) -> Any:
        reader = (
            spark.readStream.format("kafpy")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", json.dumps({topic: {"0": 0}}))
        )
        for k, v in options.items():
            reader = reader.option(k, v)
        return (
            reader.load()
            .writeStream.foreachBatch(lambda df, _: seen.extend(r.offset for r in df.collect()))
            .trigger(availableNow=True)
            .start()
        )

    failing = start()
    with pytest.raises(
        Exception, match=f"Partition {topic}-0: offsets 0 to {RECORDS - 2} are no longer"
    ):
        failing.awaitTermination(120)
    skipping = start(failOnDataLoss="false")
    assert skipping.awaitTermination(120) and skipping.exception() is None
    assert seen == [RECORDS - 1]
