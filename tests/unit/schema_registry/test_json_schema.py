"""Confluent's JSON Schema compatibility rules, table-driven: may the reader (update)
replace the writer (original)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafpy.schema_registry.avro_schema import InvalidSchemaError
from kafpy.schema_registry.json_schema import JsonSchema


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required:
        out["required"] = required
    return out


CLOSED = {"additionalProperties": False}
STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}

# (name, writer, reader, compatible)
CASES: list[tuple[str, Any, Any, bool]] = [
    ("same", obj({"a": STR}), obj({"a": STR}), True),
    ("property removed from an open model", obj({"a": STR, "b": STR}), obj({"a": STR}), True),
    ("property added to an open model", obj({"a": STR}), obj({"a": STR, "b": STR}), False),
    ("property with an empty schema added to an open model", obj({"a": STR}), obj({"a": STR, "b": {}}), True),
    ("optional property added to a closed model", obj({"a": STR}, **CLOSED),
     obj({"a": STR, "b": STR}, **CLOSED), True),
    ("required property added to a closed model", obj({"a": STR}, **CLOSED),
     obj({"a": STR, "b": STR}, ["b"], **CLOSED), False),
    ("required property with a default added to a closed model", obj({"a": STR}, **CLOSED),
     obj({"a": STR, "b": {"type": "string", "default": "x"}}, ["b"], **CLOSED), True),
    ("property removed from a closed model", obj({"a": STR, "b": STR}, **CLOSED), obj({"a": STR}, **CLOSED), False),
    ("property made required", obj({"a": STR}), obj({"a": STR}, ["a"]), False),
    ("property no longer required", obj({"a": STR}, ["a"]), obj({"a": STR}), True),
    ("integer widened to number", obj({"a": INT}), obj({"a": NUM}), True),
    ("number narrowed to integer", obj({"a": NUM}), obj({"a": INT}), False),
    ("type changed", obj({"a": STR}), obj({"a": INT}), False),
    ("type widened to a union", obj({"a": STR}), obj({"a": {"type": ["string", "null"]}}), True),
    ("union narrowed", obj({"a": {"type": ["string", "null"]}}), obj({"a": STR}), False),
    ("additional properties allowed", obj({"a": STR}, **CLOSED), obj({"a": STR}), True),
    ("additional properties forbidden", obj({"a": STR}), obj({"a": STR}, **CLOSED), False),
    ("maxLength increased", {"type": "string", "maxLength": 5}, {"type": "string", "maxLength": 9}, True),
    ("maxLength decreased", {"type": "string", "maxLength": 9}, {"type": "string", "maxLength": 5}, False),
    ("maxLength added", STR, {"type": "string", "maxLength": 5}, False),
    ("minimum removed", {"type": "number", "minimum": 0}, NUM, True),
    ("minimum increased", {"type": "number", "minimum": 0}, {"type": "number", "minimum": 1}, False),
    ("pattern added", STR, {"type": "string", "pattern": "^a"}, False),
    ("pattern removed", {"type": "string", "pattern": "^a"}, STR, True),
    ("enum extended", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, True),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, False),
    ("array items widened", {"type": "array", "items": INT}, {"type": "array", "items": NUM}, True),
    ("array items changed", {"type": "array", "items": INT}, {"type": "array", "items": STR}, False),
    ("maxItems decreased", {"type": "array", "maxItems": 3}, {"type": "array", "maxItems": 2}, False),
    ("anyOf gains a branch", {"anyOf": [STR, INT]}, {"anyOf": [STR, INT, {"type": "null"}]}, True),
    ("anyOf loses a branch", {"anyOf": [STR, INT]}, {"anyOf": [STR]}, False),
    ("a type becomes a oneOf holding it", STR, {"oneOf": [STR, INT]}, True),
    ("reader accepts anything", obj({"a": STR}), {}, True),
    ("title and description changed", {**STR, "title": "a"}, {**STR, "title": "b", "description": "d"}, True),
    ("nested property type changed", obj({"a": obj({"b": STR})}), obj({"a": obj({"b": INT})}), False),
    ("local $ref followed", {"definitions": {"x": STR}, **obj({"a": {"$ref": "#/definitions/x"}})},
     {"definitions": {"x": INT}, **obj({"a": {"$ref": "#/definitions/x"}})}, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("writer", "reader", "compatible"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_compatibility(writer: Any, reader: Any, compatible: bool) -> None:
    errors = JsonSchema(json.dumps(reader)).read_errors(JsonSchema(json.dumps(writer)))
    assert (errors == []) is compatible, errors


def test_an_error_names_confluents_difference_and_where() -> None:
    errors = JsonSchema(json.dumps(obj({"a": STR, "b": STR}))).read_errors(
        JsonSchema(json.dumps(obj({"a": STR})))
    )
    assert errors == ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/b"]


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "5",
        '"string"',
        '{"type": 5}',
        '{"properties": 5}',
        '{"required": "a"}',
        '{"minLength": -1}',
    ],
)
def test_invalid_schemas_are_refused(text: str) -> None:
    with pytest.raises(InvalidSchemaError):
        JsonSchema(text)


def test_key_order_and_spacing_do_not_make_another_schema() -> None:
    assert (
        JsonSchema('{"type":"object","title":"x"}').canonical
        == JsonSchema('{ "title": "x", "type": "object" }').canonical
    )
