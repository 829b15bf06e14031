"""valueFormat=confluent-avro: values written by confluent-kafka's AvroSerializer (with two
versions of a schema) read by a real local SparkSession from a real `kafpy server`, their
schemas in a real `kafpy schema-registry`; and the Avro-to-Spark type mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from fastavro.schema import parse_schema

from kafpy.spark.confluent_avro import spark_type
from kafpy.spark.errors import OptionError
from kafpy.spark.options import ReadOptions
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.schema_registry import SchemaRegistryProcess
from tests.spark.fixtures import create_topic, topic_name

V1 = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
}
V2 = {
    **V1,
    "fields": [
        *V1["fields"],
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
        {"name": "scores", "type": {"type": "map", "values": "long"}, "default": {}},
    ],
}


@pytest.fixture(scope="module")
def registry(kafpy_module_registry: SchemaRegistryProcess) -> SchemaRegistryProcess:
    return kafpy_module_registry


def produce_raw(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0


def read(spark: Any, bootstrap: str, registry: SchemaRegistryProcess, **options: str) -> Any:
    reader = (
        spark.read.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("valueFormat", "confluent-avro")
        .option("schemaRegistry.url", registry.url)
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_values_of_two_schema_versions_read_with_the_latest(
    spark: Any, kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = create_topic(bootstrap, topic_name("avro"))
    client = SchemaRegistryClient({"url": registry.url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    old = AvroSerializer(client, json.dumps(V1))({"name": "ann", "age": 31}, ctx)
    new = AvroSerializer(client, json.dumps(V2))(
        {"name": "bob", "age": 42, "email": "b@x", "tags": ["a", "b"], "scores": {"x": 7}}, ctx
    )
    produce_raw(bootstrap, topic, [old, new])
    df = read(spark, bootstrap, registry, subscribe=topic)
    assert df.schema["value"].dataType.simpleString() == (
        "struct<name:string,age:int,email:string,tags:array<string>,scores:map<string,bigint>>"
    )
    rows = df.select("offset", "value.*").orderBy("offset").collect()
    assert [r.asDict() for r in rows] == [
        {"offset": 0, "name": "ann", "age": 31, "email": None, "tags": [], "scores": {}},
        {"offset": 1, "name": "bob", "age": 42, "email": "b@x", "tags": ["a", "b"],
         "scores": {"x": 7}},
    ]  # fmt: skip


def test_a_stream_decodes_values_with_the_schema_it_started_with(
    spark: Any,
    kafpy_module_broker: KafpyBroker,
    registry: SchemaRegistryProcess,
    tmp_path: Path,
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = create_topic(bootstrap, topic_name("avro-stream"))
    client = SchemaRegistryClient({"url": registry.url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = AvroSerializer(client, json.dumps(V1))
    produce_raw(bootstrap, topic, [serializer({"name": f"u{i}", "age": i}, ctx) for i in range(5)])
    seen: list[tuple[str, int]] = []

    def sink(df: Any, batch_id: int) -> None:
        seen.extend((r.name, r.age) for r in df.select("value.*").collect())

    query = (
        spark.readStream.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("valueFormat", "confluent-avro")
        .option("schemaRegistry.url", registry.url)
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the availableNow query did not finish"
    assert query.exception() is None
    assert sorted(seen) == [(f"u{i}", i) for i in range(5)]


def test_a_value_not_framed_fails_fast_or_reads_as_null(
    spark: Any, kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = create_topic(bootstrap, topic_name("avro-bad"))
    client = SchemaRegistryClient({"url": registry.url})
    good = AvroSerializer(client, json.dumps(V1))(
        {"name": "ann", "age": 31}, SerializationContext(topic, MessageField.VALUE)
    )
    produce_raw(bootstrap, topic, [good, b"plain text"])
    with pytest.raises(Exception, match=f"Malformed record at {topic}-0 offset 1") as error:
        read(spark, bootstrap, registry, subscribe=topic).collect()
    assert "Unknown magic byte!" in str(error.value) and "mode=PERMISSIVE" in str(error.value)
    rows = read(spark, bootstrap, registry, subscribe=topic, mode="PERMISSIVE").collect()
    assert sorted((r.offset, r.value and r.value.name) for r in rows) == [(0, "ann"), (1, None)]


def test_a_subject_without_schema_is_refused_when_planned(
    spark: Any, kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    with pytest.raises(Exception, match="40401"):
        read(spark, kafpy_module_broker.bootstrap, registry, subscribe="no-such-topic").schema  # noqa: B018


def spark_ddl(schema: Any) -> str:
    parsed = parse_schema(schema)
    named = parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}
    return spark_type(parsed, named).ddl


def test_avro_types_map_to_spark_types_as_from_avro_does() -> None:
    address = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "home", "type": address},
            {"name": "work", "type": ["null", "Address"]},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {
                "name": "amount",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            },
            {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
            {"name": "hash", "type": {"type": "fixed", "name": "H", "size": 4}},
            {"name": "ok", "type": "boolean"},
            {"name": "ratio", "type": "double"},
        ],
    }
    assert spark_ddl(schema) == (
        "struct<`home`:struct<`city`:string>,`work`:struct<`city`:string>,`day`:date,"
        "`at`:timestamp,`amount`:decimal(9,2),`kind`:string,`hash`:binary,`ok`:boolean,"
        "`ratio`:double>"
    )
    assert spark_ddl("long") == "bigint"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (["string", "long"], "only a union of null and one type"),
        ({"type": "string", "logicalType": "uuid"}, "logical type 'uuid'"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 40}, "more than Spark's 38"),
    ],
)
def test_types_spark_cannot_hold_are_refused(schema: Any, says: str) -> None:
    with pytest.raises(OptionError, match=says):
        spark_ddl(schema)


def test_value_format_options() -> None:
    base = {"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}
    decoding = ReadOptions.parse(
        {**base, "valueFormat": "confluent-avro", "schemaRegistry.url": "http://r:8081"},
        streaming=False,
    ).value_decoding
    assert decoding is not None
    assert (decoding.subject, decoding.mode) == ("t-value", "FAILFAST")
    assert ReadOptions.parse(base, streaming=False).value_decoding is None
    refusals = {
        "needs the option 'schemaRegistry.url'": {"valueFormat": "confluent-avro"},
        "name the subject with the option 'valueSubject'": {
            "valueFormat": "confluent-avro",
            "schemaRegistry.url": "http://r:8081",
            "subscribe": "a,b",
        },
        "must be binary or confluent-avro": {"valueFormat": "protobuf"},
        "must be FAILFAST or PERMISSIVE": {
            "valueFormat": "confluent-avro",
            "schemaRegistry.url": "http://r:8081",
            "mode": "DROPMALFORMED",
        },
    }
    for says, options in refusals.items():
        with pytest.raises(OptionError, match=says):
            ReadOptions.parse({**base, **options}, streaming=False)
