"""The `_schemas` codec against literal records in Confluent Platform 6.2's JSON."""

from __future__ import annotations

import pytest

from kafpy.schema_registry.schema_registry_records import (
    ClearSubjectValue,
    ConfigValue,
    DeleteSubjectValue,
    KeyType,
    ModeValue,
    SchemaReference,
    SchemaRegistryKey,
    SchemaRegistryRecordError,
    SchemaValue,
    deserialize_key,
    deserialize_value,
    serialize_key,
    serialize_value,
)

KEYS = [
    (SchemaRegistryKey.schema("orders-value", 3), b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}'),
    (SchemaRegistryKey(KeyType.CONFIG), b'{"keytype":"CONFIG","magic":0}'),
    (SchemaRegistryKey(KeyType.CONFIG, "s"), b'{"keytype":"CONFIG","subject":"s","magic":0}'),
    (SchemaRegistryKey(KeyType.MODE), b'{"keytype":"MODE","magic":0}'),
    (SchemaRegistryKey(KeyType.MODE, "s"), b'{"keytype":"MODE","subject":"s","magic":0}'),
    (SchemaRegistryKey(KeyType.NOOP), b'{"keytype":"NOOP","magic":0}'),
    (SchemaRegistryKey(KeyType.DELETE_SUBJECT, "s"), b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'),
    (SchemaRegistryKey(KeyType.CLEAR_SUBJECT, "s"), b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}'),
]  # fmt: skip


@pytest.mark.parametrize(("key", "literal"), KEYS)
def test_keys_are_confluents_json(key: SchemaRegistryKey, literal: bytes) -> None:
    assert serialize_key(key) == literal
    assert deserialize_key(literal) == key


AVRO_VALUE = SchemaValue("orders-value", 1, 7, '"string"')
JSON_VALUE = SchemaValue(
    "orders-value", 2, 8, '{"type":"object"}', "JSON", (SchemaReference("a.json", "a", 1),), True
)
VALUES = [
    (SchemaRegistryKey.schema("orders-value", 1), AVRO_VALUE,
     b'{"subject":"orders-value","version":1,"id":7,"schema":"\\"string\\"","deleted":false}'),
    (SchemaRegistryKey.schema("orders-value", 2), JSON_VALUE,
     b'{"subject":"orders-value","version":2,"id":8,"schemaType":"JSON",'
     b'"references":[{"name":"a.json","subject":"a","version":1}],'
     b'"schema":"{\\"type\\":\\"object\\"}","deleted":true}'),
    (SchemaRegistryKey(KeyType.CONFIG), ConfigValue("FULL_TRANSITIVE"), b'{"compatibilityLevel":"FULL_TRANSITIVE"}'),
    (SchemaRegistryKey(KeyType.MODE, "s"), ModeValue("IMPORT"), b'{"mode":"IMPORT"}'),
    (SchemaRegistryKey(KeyType.DELETE_SUBJECT, "s"), DeleteSubjectValue("s", 4), b'{"subject":"s","version":4}'),
    (SchemaRegistryKey(KeyType.CLEAR_SUBJECT, "s"), ClearSubjectValue("s"), b'{"subject":"s"}'),
]  # fmt: skip


@pytest.mark.parametrize(("key", "value", "literal"), VALUES)
def test_values_are_confluents_json(key: SchemaRegistryKey, value: object, literal: bytes) -> None:
    assert serialize_value(value) == literal  # type: ignore[arg-type]
    assert deserialize_value(key, literal) == value


def test_reading_ignores_unknown_fields_as_confluent_does() -> None:
    key = deserialize_key(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1,"extra":1}')
    literal = (
        b'{"subject":"s","version":1,"id":1,"md5":"abc","schemaType":"AVRO",'
        b'"schema":"\\"int\\"","deleted":false,"ts":123}'
    )
    assert deserialize_value(key, literal) == SchemaValue("s", 1, 1, '"int"')


def test_tombstones_and_noops_have_no_value() -> None:
    assert serialize_value(None) is None
    assert deserialize_value(SchemaRegistryKey.schema("s", 1), None) is None
    assert deserialize_value(SchemaRegistryKey(KeyType.NOOP), b"anything") is None


@pytest.mark.parametrize(
    "literal",
    [
        None,
        b"not json",
        b"[1]",
        b'{"keytype":"SOMETHING","magic":0}',
        b'{"keytype":"SCHEMA","subject":"s","magic":1}',
        b'{"keytype":"SCHEMA","version":1,"magic":1}',
        b'{"keytype":"DELETE_SUBJECT","magic":0}',
    ],
)
def test_foreign_keys_are_refused(literal: bytes | None) -> None:
    with pytest.raises(SchemaRegistryRecordError):
        deserialize_key(literal)


@pytest.mark.parametrize(
    "literal",
    [
        b"\x00\x01",
        b"[]",
        b'{"subject":"s","version":1,"id":1}',
        b'{"subject":"s","version":"1","id":1,"schema":"x"}',
    ],
)
def test_foreign_schema_values_are_refused(literal: bytes) -> None:
    with pytest.raises(SchemaRegistryRecordError):
        deserialize_value(SchemaRegistryKey.schema("s", 1), literal)
