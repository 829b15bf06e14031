"""Avro's schema resolution rules, table-driven: can the reader read the writer's data."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafpy.schema_registry.avro_schema import AvroSchema, InvalidSchemaError


def record(*fields: dict[str, Any], name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "n", "fields": list(fields), **extra}


def field(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


# (reader, writer, readable)
CASES: list[tuple[str, Any, Any, bool]] = [
    ("same primitive", "int", "int", True),
    ("int promoted to long", "long", "int", True),
    ("int promoted to float", "float", "int", True),
    ("int promoted to double", "double", "int", True),
    ("long promoted to float", "float", "long", True),
    ("long promoted to double", "double", "long", True),
    ("float promoted to double", "double", "float", True),
    ("long not narrowed to int", "int", "long", False),
    ("double not narrowed to float", "float", "double", False),
    ("string read as bytes", "bytes", "string", True),
    ("bytes read as string", "string", "bytes", True),
    ("string not read as int", "int", "string", False),
    ("null", "null", "null", True),
    ("boolean not read as int", "int", "boolean", False),
    ("field added with a default", record(field("a", "int"), field("b", "string", default="x")),
     record(field("a", "int")), True),
    ("field added without a default", record(field("a", "int"), field("b", "string")),
     record(field("a", "int")), False),
    ("field removed", record(field("a", "int")), record(field("a", "int"), field("b", "int")), True),
    ("field type promoted", record(field("a", "long")), record(field("a", "int")), True),
    ("field type narrowed", record(field("a", "int")), record(field("a", "long")), False),
    ("field renamed with an alias", record(field("b", "int", aliases=["a"])),
     record(field("a", "int")), True),
    ("field renamed without an alias", record(field("b", "int")), record(field("a", "int")), False),
    ("record renamed", record(field("a", "int"), name="S"), record(field("a", "int")), False),
    ("record renamed with an alias", record(field("a", "int"), name="S", aliases=["R"]),
     record(field("a", "int")), True),
    ("enum symbol added", enum("A", "B", "C"), enum("A", "B"), True),
    ("enum symbol removed", enum("A"), enum("A", "B"), False),
    ("enum symbol removed, reader default", enum("A", default="A"), enum("A", "B"), True),
    ("fixed same size", {"type": "fixed", "name": "F", "size": 4},
     {"type": "fixed", "name": "F", "size": 4}, True),
    ("fixed other size", {"type": "fixed", "name": "F", "size": 8},
     {"type": "fixed", "name": "F", "size": 4}, False),
    ("array items promoted", {"type": "array", "items": "long"}, {"type": "array", "items": "int"}, True),
    ("array items narrowed", {"type": "array", "items": "int"}, {"type": "array", "items": "long"}, False),
    ("map values promoted", {"type": "map", "values": "double"}, {"type": "map", "values": "float"}, True),
    ("map values changed", {"type": "map", "values": "string"}, {"type": "map", "values": "int"}, False),
    ("array not read as map", {"type": "map", "values": "int"}, {"type": "array", "items": "int"}, False),
    ("union gains a branch", ["null", "int", "string"], ["null", "int"], True),
    ("union loses a branch", ["null"], ["null", "int"], False),
    ("writer union promoted into reader", ["null", "long"], ["null", "int"], True),
    ("non-union writer into reader union", ["null", "string"], "string", True),
    ("non-union writer missing from reader union", ["null", "string"], "int", False),
    ("writer union into non-union reader", "long", ["int", "long"], True),
    ("writer union with a branch the reader lacks", "long", ["null", "long"], False),
    ("optional field added", record(field("a", "int"), field("b", ["null", "int"], default=None)),
     record(field("a", "int")), True),
    ("recursive record", record(field("next", ["null", "n.R"], default=None)),
     record(field("next", ["null", "n.R"], default=None)), True),
    ("nested record field added without default",
     record(field("in", record(field("x", "int"), field("y", "int"), name="In"))),
     record(field("in", record(field("x", "int"), name="In"))), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("reader", "writer", "readable"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_schema_resolution(reader: Any, writer: Any, readable: bool) -> None:
    errors = AvroSchema(json.dumps(reader)).read_errors(AvroSchema(json.dumps(writer)))
    assert (errors == []) is readable, errors


def test_an_error_says_where_and_what() -> None:
    reader = AvroSchema(json.dumps(record(field("a", "int"), field("b", "string"))))
    writer = AvroSchema(json.dumps(record(field("a", "int"))))
    assert reader.read_errors(writer) == [
        "#/fields/b: the reader's field 'b' of record n.R has no default value and is "
        "missing from the writer"
    ]


def test_the_identifying_form_ignores_layout_not_defaults() -> None:
    spaced = AvroSchema('{ "type" : "record", "name": "R", "namespace": "n", "fields": [] }')
    qualified = AvroSchema('{"name":"n.R","type":"record","fields":[]}')
    assert spaced.canonical == qualified.canonical
    with_default = AvroSchema(json.dumps(record(field("a", "int", default=1))))
    other_default = AvroSchema(json.dumps(record(field("a", "int", default=2))))
    assert with_default.canonical != other_default.canonical


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"type": "record", "name": "R"}',
        '{"type": "record", "name": "R", "fields": [{"name": "a"}]}',
        '{"type": "nosuch"}',
        '{"type": "enum", "name": "E"}',
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}',
        '{"type": "record", "name": "1R", "fields": []}',
        '{"type": "record", "name": "R", "fields": [{"name": "a-b", "type": "int"}]}',
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "long"}]}',
        '["int", "int"]',
        '["null", ["int"]]',
        '{"type": "fixed", "name": "F"}',
        '{"type": "array"}',
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"], "default": 1}]}',
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["int", "null"], "default": null}]}',
    ],
)
def test_invalid_schemas_are_refused(text: str) -> None:
    with pytest.raises(InvalidSchemaError):
        AvroSchema(text)


def test_references_supply_named_types() -> None:
    address = AvroSchema(json.dumps(record(field("city", "string"), name="Address")))
    person = AvroSchema(json.dumps(record(field("home", "n.Address"), name="P")), address.named)
    assert person.read_errors(person) == []
    with pytest.raises(InvalidSchemaError):
        AvroSchema(json.dumps(record(field("home", "n.Address"), name="P")))


def test_a_union_default_of_its_first_type_is_taken() -> None:
    AvroSchema(json.dumps(record(field("a", ["null", "int"], default=None))))
    AvroSchema(json.dumps(record(field("a", ["int", "null"], default=1))))
    AvroSchema(json.dumps(record(field("a", ["double", "null"], default=1))))
