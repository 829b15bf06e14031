"""console-producer and console-consumer with --key-format/--value-format avro|json-schema
against a real `kafpy server` and a real `kafpy schema-registry`, confluent-kafka's
AvroSerializer/AvroDeserializer and JSONSerializer/JSONDeserializer the referee: what
kafpy's producer writes, Confluent's deserializers read, and the other way round."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.fixtures.broker import KafpyBroker
from tests.fixtures.schema_registry import SchemaRegistryProcess, read_topic
from tests.integration.test_console_tools import create_topic, kafpy

USER = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": "int"},
        {"name": "nick", "type": ["null", "string"], "default": None},
    ],
}
USER_JSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture(scope="module")
def registry(kafpy_module_registry: SchemaRegistryProcess) -> SchemaRegistryProcess:
    return kafpy_module_registry


def new_topic(broker: KafpyBroker) -> str:
    topic = f"sr-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic)
    return topic


def produce_lines(
    broker: KafpyBroker, topic: str, lines: list[str], *extra: str
) -> tuple[int, str]:
    result = kafpy(
        "console-producer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        *extra,
        stdin=("\n".join(lines) + "\n").encode(),
    )
    return result.returncode, result.stderr.decode()


def consume_lines(
    broker: KafpyBroker, topic: str, count: int, *extra: str
) -> tuple[int, list[str], str]:
    result = kafpy(
        "console-consumer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "15000",
        *extra,
    )
    return result.returncode, result.stdout.decode().splitlines(), result.stderr.decode()


def produce_raw(broker: KafpyBroker, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def test_avro_lines_from_kafpy_decode_with_confluents_deserializer(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    lines = [
        '{"name": "ann", "age": 31, "nick": null}',
        '{"name": "bob", "age": 42, "nick": {"string": "bobby"}}',
    ]
    code, err = produce_lines(
        kafpy_module_broker,
        topic,
        lines,
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
        "--property",
        f"value.schema={json.dumps(USER)}",
    )
    assert code == 0, err
    client = SchemaRegistryClient({"url": registry.url})
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "AVRO"
    code, err = produce_lines(  # the registered schema, by its id
        kafpy_module_broker,
        topic,
        ['{"name": "cy", "age": 7, "nick": null}'],
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
        "--property",
        f"value.schema.id={latest.schema_id}",
    )
    assert code == 0, err
    deserializer = AvroDeserializer(client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [deserializer(v, ctx) for _, v in read_topic(kafpy_module_broker.bootstrap, topic, 3)]
    assert values == [
        {"name": "ann", "age": 31, "nick": None},
        {"name": "bob", "age": 42, "nick": "bobby"},
        {"name": "cy", "age": 7, "nick": None},
    ]


def test_avro_records_from_confluent_print_as_avro_json(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    client = SchemaRegistryClient({"url": registry.url})
    serializer = AvroSerializer(client, json.dumps(USER))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce_raw(
        kafpy_module_broker,
        topic,
        [
            serializer({"name": "ann", "age": 31, "nick": None}, ctx),
            serializer({"name": "bob", "age": 42, "nick": "bobby"}, ctx),
        ],
    )
    schema_id = client.get_latest_version(f"{topic}-value").schema_id
    code, out, err = consume_lines(
        kafpy_module_broker,
        topic,
        2,
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
        "--property",
        "print.schema.ids=true",
    )
    assert code == 0, err
    assert out == [
        f'{{"name":"ann","age":31,"nick":null}}\t{schema_id}',
        f'{{"name":"bob","age":42,"nick":{{"string":"bobby"}}}}\t{schema_id}',
    ]
    assert "Processed a total of 2 messages" in err


def test_avro_keys_and_values_round_trip(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    url = f"schema.registry.url={registry.url}"
    formats = ("--key-format", "avro", "--value-format", "avro", "--property", url)
    code, err = produce_lines(
        kafpy_module_broker,
        topic,
        ['7|{"name": "ann", "age": 31, "nick": null}'],
        *formats,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=|",
        "--property",
        'key.schema="long"',
        "--property",
        f"value.schema={json.dumps(USER)}",
    )
    assert code == 0, err
    client = SchemaRegistryClient({"url": registry.url})
    [(key, value)] = read_topic(kafpy_module_broker.bootstrap, topic, 1)
    assert key is not None
    assert AvroDeserializer(client)(key, SerializationContext(topic, MessageField.KEY)) == 7
    code, out, err = consume_lines(
        kafpy_module_broker, topic, 1, *formats, "--property", "print.key=true"
    )
    assert code == 0, err
    assert out == ['7\t{"name":"ann","age":31,"nick":null}']
    code, out, err = consume_lines(
        kafpy_module_broker, topic, 1, "--key-format", "json-schema", "--value-format", "avro",
        "--property", url,
    )  # fmt: skip
    assert code == 0, err  # a key not printed is not read, as Confluent's formatter does
    assert out == ['{"name":"ann","age":31,"nick":null}']


def test_json_schema_round_trips_both_ways(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    client = SchemaRegistryClient({"url": registry.url})
    url = f"schema.registry.url={registry.url}"
    code, err = produce_lines(
        kafpy_module_broker,
        topic,
        ['{"name": "ann", "age": 31}'],
        "--value-format",
        "json-schema",
        "--property",
        url,
        "--property",
        f"value.schema={json.dumps(USER_JSON_SCHEMA)}",
    )
    assert code == 0, err
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = JSONSerializer(json.dumps(USER_JSON_SCHEMA), client)
    produce_raw(kafpy_module_broker, topic, [serializer({"name": "bob", "age": 42}, ctx)])
    deserializer = JSONDeserializer(json.dumps(USER_JSON_SCHEMA))
    raw = [deserializer(v, ctx) for _, v in read_topic(kafpy_module_broker.bootstrap, topic, 2)]
    assert raw == [{"name": "ann", "age": 31}, {"name": "bob", "age": 42}]
    code, out, err = consume_lines(
        kafpy_module_broker, topic, 2, "--value-format", "json-schema", "--property", url
    )
    assert code == 0, err
    assert [json.loads(line) for line in out] == raw


def test_records_that_cannot_be_decoded_are_reported_and_skipped(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    client = SchemaRegistryClient({"url": registry.url})
    good = AvroSerializer(client, json.dumps(USER))(
        {"name": "ann", "age": 31, "nick": None}, SerializationContext(topic, MessageField.VALUE)
    )
    produce_raw(
        kafpy_module_broker,
        topic,
        [b"plain text", b"\x00\x00\x00", b"\x00\x00\x0f\x42\x3f\x02", good],
    )
    code, out, err = consume_lines(
        kafpy_module_broker,
        topic,
        4,
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
    )
    assert out == ['{"name":"ann","age":31,"nick":null}']
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 3, err
    assert f"{topic}-0 at offset 0" in errors[0] and "Unknown magic byte!" in errors[0]
    assert "has 3 bytes" in errors[1]
    assert "id 999999" in errors[2] and "40403" in errors[2]
    assert "Processed a total of 4 messages" in err
    assert code == 1
    assert "3 of the 4 messages could not be deserialized" in err
    assert "Traceback" not in err


def test_a_registry_that_is_down_is_an_error_line_per_record(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    produce_raw(kafpy_module_broker, topic, [b"\x00\x00\x00\x00\x01\x02", b"\x00\x00\x00\x00\x02"])
    code, out, err = consume_lines(
        kafpy_module_broker,
        topic,
        2,
        "--value-format",
        "avro",
        "--property",
        "schema.registry.url=http://127.0.0.1:1",
    )
    assert code == 1 and out == []
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 2, err
    assert all("could not be reached" in line for line in errors)
    assert "Traceback" not in err


def test_lines_that_do_not_match_the_schema(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    options: list[Any] = [
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
        "--property",
        f"value.schema={json.dumps(USER)}",
    ]
    lines = [
        '{"name": "ann", "age": 31}',
        "not json",
        '{"name": "bob"}',
        '{"name": "cy", "age": 3}',
    ]
    code, err = produce_lines(kafpy_module_broker, topic, lines, *options)
    assert code == 1
    assert "Line 2 was not delivered" in err and "Not JSON" in err
    assert "Traceback" not in err
    code, err = produce_lines(
        kafpy_module_broker, topic, lines, *options, "--property", "ignore.error=true"
    )
    assert code == 1
    assert "from line 2: Not JSON" in err and "from line 3: Error deserializing JSON" in err
    code, out, _ = consume_lines(
        kafpy_module_broker,
        topic,
        3,
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
    )
    assert [json.loads(line)["name"] for line in out] == ["ann", "ann", "cy"]


def test_refusals_name_the_fix(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    topic = new_topic(kafpy_module_broker)
    code, err = produce_lines(kafpy_module_broker, topic, ["{}"], "--value-format", "avro")
    assert code == 1 and "--property schema.registry.url=" in err
    code, err = produce_lines(
        kafpy_module_broker,
        topic,
        ["{}"],
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
    )
    assert code == 1 and "40401" in err and f"{topic}-value" in err  # no schema, no subject
    code, err = produce_lines(
        kafpy_module_broker,
        topic,
        ["{}"],
        "--value-format",
        "avro",
        "--property",
        f"schema.registry.url={registry.url}",
        "--property",
        'value.schema={"type": "record"}',
    )
    assert code == 1 and "42201" in err
    assert "Traceback" not in err
