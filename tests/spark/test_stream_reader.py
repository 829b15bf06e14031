"""Streaming reads: Trigger.AvailableNow with and without limits, restart from a
checkpoint, partition and topic discovery, rate limits and offset commits to a group."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kafpy.client.admin_client import AdminClient
from kafpy.spark.options import ReadOptions
from kafpy.spark.reader import KafkaStreamReader
from tests.fixtures.broker import KafpyBroker
from tests.spark.fixtures import create_topic, produce, topic_name


def run_available_now(
    spark: Any, bootstrap: str, checkpoint: Path, **options: str
) -> list[list[tuple[str, int, int]]]:
    """One availableNow run into a foreachBatch sink; the (topic, partition, offset) rows of
    each non-empty micro-batch, in batch order."""
    batches: dict[int, list[tuple[str, int, int]]] = {}

    def sink(df: Any, batch_id: int) -> None:
        rows = [
            (r.topic, r.partition, r.offset)
            for r in df.select("topic", "partition", "offset").collect()
        ]
        if rows:
            batches[batch_id] = sorted(rows)

    reader = spark.readStream.format("kafpy").option("kafka.bootstrap.servers", bootstrap)
    for k, v in {"startingOffsets": "earliest", **options}.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the availableNow query did not finish"
    assert query.exception() is None
    return [batches[i] for i in sorted(batches)]


def keyed(n: int, partitions: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"value": b"v%d" % i, "partition": i % partitions} for i in range(start, start + n)]


def test_available_now_with_limits_then_restart_resumes_exactly(
    spark: Any, kafpy_module_broker: KafpyBroker, tmp_path: Path
) -> None:
    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("stream"), 2)
    produce(boot, topic, keyed(30, 2))
    checkpoint = tmp_path / "checkpoint"

    first = run_available_now(spark, boot, checkpoint, subscribe=topic, maxOffsetsPerTrigger="8")
    assert len(first) >= 4
    assert all(len(b) <= 8 for b in first)
    seen = [row for b in first for row in b]
    assert sorted(seen) == sorted((topic, p, o) for p in range(2) for o in range(15))

    produce(boot, topic, keyed(20, 2, start=30))
    second = run_available_now(spark, boot, checkpoint, subscribe=topic, maxOffsetsPerTrigger="8")
    resumed = [row for b in second for row in b]
    assert sorted(resumed) == sorted((topic, p, o) for p in range(2) for o in range(15, 25))
    assert not set(seen) & set(resumed)

    third = run_available_now(spark, boot, checkpoint, subscribe=topic)
    assert third == []  # nothing new: no duplicates on a restart with no data


def test_new_partitions_and_pattern_topics_are_read_from_earliest(
    spark: Any, kafpy_module_broker: KafpyBroker, tmp_path: Path
) -> None:
    boot = kafpy_module_broker.bootstrap
    prefix = topic_name("pat")
    first_topic = create_topic(boot, prefix + "-a", 1)
    produce(boot, first_topic, keyed(5, 1))
    checkpoint = tmp_path / "checkpoint"
    pattern = prefix + "-.*"
    got = run_available_now(spark, boot, checkpoint, subscribePattern=pattern)
    assert sorted(r for b in got for r in b) == [(first_topic, 0, o) for o in range(5)]

    async def add_partition() -> None:
        async with AdminClient.connect(boot) as admin:
            await admin.create_partitions({first_topic: 2})

    asyncio.run(add_partition())
    second_topic = create_topic(boot, prefix + "-b", 1)
    produce(boot, first_topic, [{"value": b"new", "partition": 1}] * 3)
    produce(boot, second_topic, keyed(4, 1))
    got = run_available_now(spark, boot, checkpoint, subscribePattern=pattern)
    assert sorted(r for b in got for r in b) == sorted(
        [(first_topic, 1, o) for o in range(3)] + [(second_topic, 0, o) for o in range(4)]
    )


def stream_reader(boot: str, **options: str) -> KafkaStreamReader:
    opts = {"kafka.bootstrap.servers": boot, "startingoffsets": "earliest", **options}
    return KafkaStreamReader(ReadOptions.parse(opts, streaming=True))


def test_latest_offset_min_offsets_and_max_trigger_delay(kafpy_module_broker: KafpyBroker) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("limits"), 3)
    produce(boot, topic, keyed(30, 3))
    reader = stream_reader(
        boot, subscribe=topic, minOffsetsPerTrigger="100", maxOffsetsPerTrigger="1000"
    )
    try:
        start = reader.initialOffset()
        assert json.dumps(start) == json.dumps({topic: {"0": 0, "1": 0, "2": 0}})
        assert reader.getDefaultReadLimit() == ReadMaxRows(1000)
        # 30 < 100 new offsets and maxTriggerDelay (15m) not passed: no batch yet
        assert reader.latestOffset(start, ReadMaxRows(1000)) == start
        assert reader.latestOffset(start, ReadMinRows(100)) == start
        # ReadAllAvailable overrides the options' limits
        assert reader.latestOffset(start, ReadAllAvailable()) == {
            topic: {"0": 10, "1": 10, "2": 10}
        }
    finally:
        reader.stop()
    reader = stream_reader(boot, subscribe=topic, minOffsetsPerTrigger="100", maxTriggerDelay="0ms")
    try:
        start = reader.initialOffset()
        # maxTriggerDelay passed: the batch goes ahead, capped by maxOffsetsPerTrigger
        assert reader.latestOffset(start, ReadMinRows(100)) == {topic: {"0": 10, "1": 10, "2": 10}}
        assert reader.latestOffset(start, ReadMaxRows(9)) == {topic: {"0": 3, "1": 3, "2": 3}}
    finally:
        reader.stop()


def test_partitions_of_a_micro_batch_split_by_min_partitions(
    kafpy_module_broker: KafpyBroker,
) -> None:
    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("split"), 1)
    produce(boot, topic, keyed(40, 1))
    reader = stream_reader(boot, subscribe=topic, minPartitions="4")
    try:
        parts = reader.partitions({topic: {"0": 0}}, {topic: {"0": 40}})
        assert [(p.range.start, p.range.end) for p in parts] == [
            (0, 10),
            (10, 20),
            (20, 30),
            (30, 40),
        ]
        assert reader.partitions({topic: {"0": 40}}, {topic: {"0": 40}}) == []
    finally:
        reader.stop()


def test_commit_offsets_to_group(
    spark: Any, kafpy_module_broker: KafpyBroker, tmp_path: Path
) -> None:
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTP

    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("commit"), 2)
    produce(boot, topic, keyed(10, 2))
    group = topic_name("pipeline")
    run_available_now(spark, boot, tmp_path / "cp", subscribe=topic, commitOffsetsToGroup=group)
    admin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        committed = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert {tp: meta.offset for tp, meta in committed.items()} == {
        KTP(topic, 0): 5,
        KTP(topic, 1): 5,
    }


@pytest.mark.parametrize("option", ["endingOffsets", "endingTimestamp"])
def test_ending_options_are_refused_for_streams(
    kafpy_module_broker: KafpyBroker, option: str
) -> None:
    from kafpy.spark.options import OptionError

    with pytest.raises(OptionError, match="batch queries only"):
        stream_reader(kafpy_module_broker.bootstrap, subscribe="t", **{option.lower(): "1"})


def test_stop_and_restart_a_running_query(
    spark: Any, kafpy_module_broker: KafpyBroker, tmp_path: Path
) -> None:
    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("running"), 2)
    produce(boot, topic, keyed(20, 2))
    seen: list[tuple[int, int]] = []

    def start() -> Any:
        return (
            spark.readStream.format("kafpy")
            .option("kafka.bootstrap.servers", boot)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "12")
            .load()
            .writeStream.foreachBatch(
                lambda df, _: seen.extend((r.partition, r.offset) for r in df.collect())
            )
            .option("checkpointLocation", str(tmp_path / "cp"))
            .start()
        )

    query = start()
    query.processAllAvailable()
    query.stop()
    assert sorted(seen) == [(p, o) for p in range(2) for o in range(10)]
    produce(boot, topic, keyed(20, 2, start=20))
    query = start()
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    assert sorted(seen) == [(p, o) for p in range(2) for o in range(20)]  # no duplicates, no gaps
