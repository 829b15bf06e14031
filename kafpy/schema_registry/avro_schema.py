"""AVRO schemas: parsing with fastavro, the form that identifies a schema, and reading.

A schema is identified by its parsed form with fully qualified names, as sorted-key JSON:
whitespace, key order and namespace spelling do not make two schemas different, but docs,
defaults and aliases do (Avro's Parsing Canonical Form drops those, and two schemas that
differ only in a default are two schemas to Confluent's registry too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastavro.schema import SchemaParseException, UnknownType, parse_schema

from kafpy.schema_registry.avro_compatibility import read_errors
from kafpy.schema_registry.compatibility import ParsedSchema

AVRO = "AVRO"


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
