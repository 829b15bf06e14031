"""AVRO schemas: parsing with fastavro, the form that identifies a schema, and reading.

A schema is identified by its parsed form with fully qualified names, as sorted-key JSON:
whitespace, key order and namespace spelling do not make two schemas different, but docs,
defaults and aliases do (Avro's Parsing Canonical Form drops those, and two schemas that
differ only in a default are two schemas to Confluent's registry too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from fastavro.schema import SchemaParseException, UnknownType, parse_schema

from kafpy.schema_registry.avro_compatibility import read_errors
from kafpy.schema_registry.compatibility import ParsedSchema

AVRO = "AVRO"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InvalidSchemaError(ValueError):
    """A schema text that is not a valid schema of its type."""


class AvroSchema:
    """A parsed AVRO schema. `named` holds the named types it can use: its own and those of
    its references (full name -> parsed definition)."""

    schema_type = AVRO

    def __init__(self, text: str, referenced: Mapping[str, Any] | None = None) -> None:
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise InvalidSchemaError(f"Invalid schema: not JSON ({e})") from None
        named: dict[str, Any] = dict(referenced or {})
        _check(raw)
        try:
            self.parsed = parse_schema(raw, named_schemas=named, _write_hint=False)
        except (SchemaParseException, UnknownType, ValueError, TypeError, KeyError) as e:
            raise InvalidSchemaError(f"Invalid schema: {type(e).__name__}: {e}") from None
        self.named = named
        self.text = json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
        self.canonical = json.dumps(self.parsed, sort_keys=True, separators=(",", ":"))

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        assert isinstance(writer, AvroSchema)
        return read_errors(self.parsed, self.named, writer.parsed, writer.named)


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not all(NAME.fullmatch(p) for p in name.split(".")):
        raise InvalidSchemaError(f"Invalid schema: {what} name {name!r} is not a valid Avro name")


def _union_branch_key(branch: Any) -> str:
    if isinstance(branch, dict):
        kind = branch.get("type")
        return (
            str(branch.get("name")) if kind in ("record", "error", "enum", "fixed") else str(kind)
        )
    return str(branch)


def _check(schema: Any) -> None:
    """What the Avro specification requires and fastavro lets pass: valid names, records
    with a list of uniquely named fields, unions without nested unions or two branches of
    one type."""
    if isinstance(schema, list):
        keys = []
        for branch in schema:
            if isinstance(branch, list):
                raise InvalidSchemaError("Invalid schema: a union may not immediately hold a union")
            keys.append(_union_branch_key(branch))
            _check(branch)
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        if duplicates:
            raise InvalidSchemaError(f"Invalid schema: duplicate in union: {', '.join(duplicates)}")
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if isinstance(kind, dict | list):
        _check(kind)
        return
    if kind in ("record", "error", "enum", "fixed"):
        _check_name(schema.get("name"), str(kind))
    if kind in ("record", "error"):
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise InvalidSchemaError(f"Invalid schema: record {schema.get('name')} has no fields")
        seen: set[str] = set()
        for f in fields:
            if not isinstance(f, dict):
                raise InvalidSchemaError(f"Invalid schema: field {f!r} is not an object")
            _check_name(f.get("name"), "field")
            if f["name"] in seen:
                raise InvalidSchemaError(f"Invalid schema: duplicate field {f['name']}")
            seen.add(f["name"])
            _check(f.get("type"))
            if "default" in f and isinstance(f.get("type"), list) and f["type"]:
                _check_union_default(f["name"], f["type"][0], f["default"])
    elif kind == "array":
        _check(schema.get("items"))
    elif kind == "map":
        _check(schema.get("values"))


_DEFAULT_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "int": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "bytes": (str,),
    "string": (str,),
}


def _check_union_default(field: str, first: Any, default: Any) -> None:
    """A union field's default is a value of the union's first branch (the specification's
    rule, which fastavro does not check); checked here for primitive first branches."""
    kind = first.get("type") if isinstance(first, dict) else first
    allowed = _DEFAULT_TYPES.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        return
    if not isinstance(default, allowed) or (kind != "boolean" and isinstance(default, bool)):
        raise InvalidSchemaError(
            f"Invalid schema: invalid default for field {field}: {json.dumps(default)} is not "
            f"a {kind}, the first type of its union"
        )
