"""Batch reads through the kafpy data source against a real `kafpy server`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.broker import KafpyBroker
from tests.spark.fixtures import create_topic, produce, send_with_kafpy, topic_name

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


def offsets_of(df: Any) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def test_assign_and_subscribe_pattern(spark: Any, loaded: dict[str, Any]) -> None:
    t = loaded["topic"]
    df = read(spark, loaded["bootstrap"], assign=json.dumps({t: [1]}))
    assert offsets_of(df) == [(1, o) for o in range(20)]
    df = read(spark, loaded["bootstrap"], subscribePattern=t.replace("read-", "rea.-"))
    assert len(offsets_of(df)) == 60


def test_starting_timestamp_and_by_timestamp_forms(spark: Any, loaded: dict[str, Any]) -> None:
    t, boot = loaded["topic"], loaded["bootstrap"]
    # record i is at partition i % 3, offset i // 3, timestamp BASE_TS + i
    df = read(spark, boot, subscribe=t, startingTimestamp=str(BASE_TS + 30))
    assert offsets_of(df) == [(p, o) for p in range(3) for o in range(10, 20)]
    df = read(
        spark,
        boot,
        subscribe=t,
        startingOffsetsByTimestamp=json.dumps({t: {"0": BASE_TS + 3, "1": 0, "2": BASE_TS + 59}}),
        endingOffsetsByTimestamp=json.dumps(
            {t: {"0": BASE_TS + 9, "1": BASE_TS + 4, "2": BASE_TS + 10**9}}
        ),
    )
    assert offsets_of(df) == [(0, 1), (0, 2), (1, 0), (2, 19)]
    df = read(spark, boot, subscribe=t, endingTimestamp=str(BASE_TS + 3))  # offsets before ts
    assert offsets_of(df) == [(0, 0), (1, 0), (2, 0)]


def test_starting_timestamp_after_every_record(spark: Any, loaded: dict[str, Any]) -> None:
    t, boot = loaded["topic"], loaded["bootstrap"]
    late = str(BASE_TS + 10**9)
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy=latest"):
        read(spark, boot, subscribe=t, startingTimestamp=late).collect()
    df = read(spark, boot, subscribe=t, startingTimestamp=late,
              startingOffsetsByTimestampStrategy="latest")  # fmt: skip
    assert df.count() == 0


def test_timestamps_are_utc_whatever_the_time_zones(spark: Any, loaded: dict[str, Any]) -> None:
    from tests.spark.fixtures import SESSION_TZ, WORKER_TZ

    assert spark.conf.get("spark.sql.session.timeZone") == SESSION_TZ
    worker_tz = (
        spark.sparkContext.parallelize([0], 1)
        .map(lambda _: __import__("os").environ.get("TZ"))
        .collect()
    )
    assert worker_tz == [WORKER_TZ]
    df = read(spark, loaded["bootstrap"], subscribe=loaded["topic"])
    got = sorted(r.ms for r in df.selectExpr("unix_millis(timestamp) AS ms").collect())
    assert got == [BASE_TS + i for i in range(60)]
    shown = (
        df.selectExpr("date_format(timestamp, 'yyyy-MM-dd HH:mm:ss.SSS XXX') AS s")
        .where("offset = 0 AND partition = 0")
        .collect()
    )
    assert shown[0].s == "2023-11-15 03:43:20.000 +05:30"  # 2023-11-14 22:13:20 UTC in Kolkata


def test_headers(spark: Any, kafpy_module_broker: KafpyBroker) -> None:
    boot = kafpy_module_broker.bootstrap
    t = create_topic(boot, topic_name("headers"))
    send_with_kafpy(boot, t, [
        (None, b"a", [("x", b"1"), ("y", None)]),  # kafka-python cannot send a null header value
        (None, b"b", []),
        (None, b"c", [("\u00e9", b"\x00\xff")]),
    ])  # fmt: skip
    df = read(spark, boot, subscribe=t, includeHeaders="true")
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    got = [(r.offset, [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers])
           for r in df.orderBy("offset").collect()]  # fmt: skip
    assert got == [(0, [("x", b"1"), ("y", None)]), (1, []), (2, [("\u00e9", b"\x00\xff")])]
    assert "headers" not in read(spark, boot, subscribe=t).columns


def test_min_partitions_splits_ranges(spark: Any, loaded: dict[str, Any]) -> None:
    df = read(spark, loaded["bootstrap"], subscribe=loaded["topic"], minPartitions="7")
    assert df.rdd.getNumPartitions() == 7
    assert offsets_of(df) == sorted((p, o) for p in range(3) for o in range(20))
    per_task = df.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
    assert sorted(per_task) == [6, 7, 7, 10, 10, 10, 10]


def test_missing_topic_fails_a_batch_read(spark: Any, loaded: dict[str, Any]) -> None:
    absent = topic_name("absent")
    with pytest.raises(Exception, match=rf"topic '{absent}' named in option 'subscribe' does not"):
        read(spark, loaded["bootstrap"], subscribe=absent).count()


@pytest.mark.parametrize(("option", "edge"), [("startingOffsets", -2), ("endingOffsets", -1)])
def test_offsets_naming_a_partition_that_does_not_exist_fail(
    spark: Any, loaded: dict[str, Any], option: str, edge: int
) -> None:
    t = loaded["topic"]
    offsets = json.dumps({t: {"0": edge, "1": edge, "2": edge, "7": 5}})
    with pytest.raises(Exception, match=rf"names partitions {t}-7, which the query does not read"):
        read(spark, loaded["bootstrap"], subscribe=t, **{option: offsets}).collect()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "Exactly one of the options 'subscribe'"),
        (
            {"subscribe": "a", "startingOffsets": "{nope"},
            "Option 'startingOffsets' is not valid JSON",
        ),
        (
            {"assign": '{"no-such-topic-x": [0]}'},
            "Topic 'no-such-topic-x' named in option 'assign' does not exist",
        ),
        (
            {"subscribe": "a", "kafka.auto.offset.reset": "earliest"},
            "Option 'kafka.auto.offset.reset' is not supported: set the source option "
            "'startingOffsets'",
        ),
        (
            {"subscribe": "a", "kafka.security.protocol": "SASL_SSL"},
            r"kafka.sasl.mechanism in the kafka.\* options is GSSAPI, which needs a Kerberos",
        ),
    ],
)
def test_bad_options_give_clear_errors(
    spark: Any, loaded: dict[str, Any], options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, loaded["bootstrap"], **options).collect()


def test_json_offsets_must_name_every_partition(spark: Any, loaded: dict[str, Any]) -> None:
    t = loaded["topic"]
    with pytest.raises(Exception, match=rf"no offset for partitions {t}-1, {t}-2"):
        read(
            spark, loaded["bootstrap"], subscribe=t, startingOffsets=json.dumps({t: {"0": 1}})
        ).collect()
