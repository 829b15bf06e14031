"""Batch and streaming writes through the kafpy data source, read back with kafka-python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafpy.client.partitioner import partition_for_key
from tests.fixtures.broker import KafpyBroker
from tests.spark.fixtures import consume_all, create_topic, produce, topic_name


def writer(df: Any, bootstrap: str, **options: str) -> Any:
    w = df.write.format("kafpy").mode("append").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        w = w.option(k, v)
    return w


def test_keyed_rows_land_on_murmur2_partitions(
    spark: Any, kafpy_module_broker: KafpyBroker
) -> None:
    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("write"), 4)
    rows = [(f"key-{i}", f"value-{i}") for i in range(200)]
    df = spark.createDataFrame(rows, "key string, value string").repartition(2)
    writer(df, boot, topic=topic).save()
    got = consume_all(boot, topic, 4)
    assert sorted((m.key, m.value) for m in got) == sorted(
        (k.encode(), v.encode()) for k, v in rows
    )
    for m in got:
        assert m.partition == partition_for_key(m.key, 4)
    # the Java client's murmur2, as kafka-python implements it, agrees
    from kafka.partitioner.default import murmur2

    assert all((murmur2(m.key) & 0x7FFFFFFF) % 4 == m.partition for m in got)


def test_topic_column_partition_column_headers_and_binary(
    spark: Any, kafpy_module_broker: KafpyBroker
) -> None:
    boot = kafpy_module_broker.bootstrap
    a = create_topic(boot, topic_name("wa"), 2)
    b = create_topic(boot, topic_name("wb"), 1)
    df = spark.createDataFrame(
        [
            (a, 1, None, bytearray(b"\x00\x01"), [("h", bytearray(b"1"))]),
            (b, None, "k", bytearray(b"\xff"), []),
            (a, 0, None, None, None),
        ],
        "topic string, partition int, key string, value binary, headers array<struct<key:string,value:binary>>",
    ).coalesce(1)
    writer(df, boot).save()
    got_a = consume_all(boot, a, 2)
    assert sorted((m.partition, m.value, m.headers) for m in got_a if m.value is not None) == [
        (1, b"\x00\x01", [("h", b"1")])
    ]
    assert [(m.partition, m.value) for m in got_a if m.value is None] == [(0, None)]
    got_b = consume_all(boot, b, 1)
    assert [(m.key, m.value) for m in got_b] == [(b"k", b"\xff")]
    # the topic option wins over the column
    c = create_topic(boot, topic_name("wc"), 1)
    writer(df.select("topic", "value"), boot, topic=c, **{"kafka.compression.type": "gzip"}).save()
    assert sorted(m.value or b"" for m in consume_all(boot, c, 1)) == [b"", b"\x00\x01", b"\xff"]


def test_write_errors(spark: Any, kafpy_module_broker: KafpyBroker) -> None:
    boot = kafpy_module_broker.bootstrap
    df = spark.createDataFrame([("x",)], "v string")
    with pytest.raises(Exception, match="no 'value' column"):
        writer(df, boot, topic="t").save()
    ok = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="No topic to write to"):
        writer(ok, boot).save()
    with pytest.raises(Exception, match="cannot overwrite a topic"):
        ok.write.format("kafpy").mode("overwrite").option("kafka.bootstrap.servers", boot).option(
            "topic", "t"
        ).save()
    with pytest.raises(Exception, match="Column 'value' has type int"):
        writer(spark.createDataFrame([(1,)], "value int"), boot, topic="t").save()
    with pytest.raises(Exception, match="Option 'kafka.value.serializer' is not supported"):
        writer(ok, boot, topic="t", **{"kafka.value.serializer": "x.StringSerializer"}).save()
    with pytest.raises(Exception, match="ssl.keystore.type=JKS for the kafka.security.protocol"):
        ssl = {"kafka.security.protocol": "SSL", "kafka.ssl.keystore.location": "/k.jks"}
        writer(ok, boot, topic="t", **ssl).save()
    topic = create_topic(boot, topic_name("wbad"), 2)
    bad_partition = spark.createDataFrame([("x", 5)], "value string, partition int")
    with pytest.raises(Exception, match=f"asks for partition 5 of topic '{topic}', which has 2"):
        writer(bad_partition, boot, topic=topic).save()


def test_streaming_write(spark: Any, kafpy_module_broker: KafpyBroker, tmp_path: Path) -> None:
    boot = kafpy_module_broker.bootstrap
    source = create_topic(boot, topic_name("src"), 2)
    sink = create_topic(boot, topic_name("dst"), 3)
    produce(boot, source, [{"key": b"k%d" % i, "value": b"%d" % i} for i in range(40)])
    query = (
        spark.readStream.format("kafpy")
        .option("kafka.bootstrap.servers", boot)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "15")
        .load()
        .selectExpr("key", "concat(value, '!') AS value")
        .writeStream.format("kafpy")
        .option("kafka.bootstrap.servers", boot)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    got = consume_all(boot, sink, 3)
    assert sorted((m.key, m.value) for m in got) == sorted(
        (b"k%d" % i, b"%d!" % i) for i in range(40)
    )
    assert all(m.partition == partition_for_key(m.key, 3) for m in got)


def test_fifty_thousand_short_rows_fit_the_brokers_batches(
    spark: Any, kafpy_module_broker: KafpyBroker
) -> None:
    """16,384 rows of ~60 bytes made one 1.1 MB batch, over the broker's message.max.bytes:
    the producer now cuts batches by batch.size."""
    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("many"), 1)
    df = spark.range(50_000).selectExpr(
        "concat('row ', lpad(CAST(id AS STRING), 8, '0'), repeat('x', 48)) AS value"
    )
    writer(df.coalesce(1), boot, topic=topic).save()
    values = [m.value for m in consume_all(boot, topic, 1)]
    assert len(values) == 50_000
    assert values[0] == b"row 00000000" + b"x" * 48 and values[-1].startswith(b"row 00049999")
