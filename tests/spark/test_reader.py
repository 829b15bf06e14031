"""Batch reads through the kafpy data source against a real `kafpy server`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.broker import KafpyBroker
from tests.spark.fixtures import create_topic, produce, topic_name

BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def loaded(kafpy_module_broker: KafpyBroker) -> dict[str, Any]:
    """A 3-partition topic with 20 keyed records per partition, known timestamps."""
    bootstrap = kafpy_module_broker.bootstrap
    topic = create_topic(bootstrap, topic_name("read"), 3)
    records = [
        {"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 3, "timestamp_ms": BASE_TS + i}
        for i in range(60)
    ]
    produce(bootstrap, topic, records)
    return {"bootstrap": bootstrap, "topic": topic}


def read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("kafpy").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_reads_everything_with_spark_kafka_schema(spark: Any, loaded: dict[str, Any]) -> None:
    df = read(spark, loaded["bootstrap"], subscribe=loaded["topic"])
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>"
    )
    rows = df.collect()
    assert len(rows) == 60
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in rows)
    want = sorted((i % 3, i // 3, b"k%d" % i, b"v%d" % i) for i in range(60))
    assert got == want
    assert {r.topic for r in rows} == {loaded["topic"]}
    assert {r.timestampType for r in rows} == {0}


def test_exact_ranges_from_json_offsets(spark: Any, loaded: dict[str, Any]) -> None:
    t = loaded["topic"]
    df = read(
        spark,
        loaded["bootstrap"],
        subscribe=t,
        startingOffsets=json.dumps({t: {"0": 5, "1": -2, "2": 19}}),
        endingOffsets=json.dumps({t: {"0": 7, "1": 3, "2": -1}}),
    )
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, 5), (0, 6), (1, 0), (1, 1), (1, 2), (2, 19)]
