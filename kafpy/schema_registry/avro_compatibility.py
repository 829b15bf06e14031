"""Whether an Avro reader schema can read all data written with a writer schema, by the
specification's schema resolution rules (what Avro's SchemaCompatibility checks):

- primitives match, or the writer's is promoted: int to long, float or double; long to
  float or double; float to double; string to bytes and bytes to string;
- records match by full name (or a reader alias); each reader field is read from the
  writer field of its name (or an alias), or takes its default, and without a default the
  reader cannot read; writer fields the reader lacks are skipped;
- enums match by name, and every writer symbol is a reader symbol unless the reader has a
  default; fixed types match by name and size;
- arrays by their items, maps by their values;
- a writer union is readable when each of its branches is; a reader union reads a
  non-union writer when one of its branches does.

Schemas are fastavro's parsed form: named types by full name, defined once, then named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


def _resolve(schema: Any, names: Mapping[str, Any]) -> Any:
    """A named type's definition in place of its name; any other schema as it is."""
    while isinstance(schema, str) and schema not in PRIMITIVES:
        if schema not in names:
            return schema
        schema = names[schema]
    return schema


def _kind(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return "union"
    kind = schema.get("type")
    if isinstance(kind, str):
        return "record" if kind == "error" else kind
    return _kind(kind)


def _describe(schema: Any) -> str:
    if isinstance(schema, dict) and "name" in schema:
        return f"{_kind(schema)} {schema['name']}"
    if isinstance(schema, list):
        return "union [" + ", ".join(_describe(s) for s in schema) + "]"
    return _kind(schema)


def _qualified(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _names_match(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    reader_name, writer_name = reader["name"], writer["name"]
    if reader_name == writer_name:
        return True
    namespace = reader_name.rpartition(".")[0]
    return writer_name in {_qualified(a, namespace) for a in reader.get("aliases", ())}


class _Checker:
    def __init__(self, reader_names: Mapping[str, Any], writer_names: Mapping[str, Any]):
        self.reader_names = reader_names
        self.writer_names = writer_names
        self.assumed: set[tuple[str, str]] = set()

    def check(self, reader: Any, writer: Any, path: str) -> list[str]:
        reader = _resolve(reader, self.reader_names)
        writer = _resolve(writer, self.writer_names)
        reader_kind, writer_kind = _kind(reader), _kind(writer)
        if writer_kind == "union":
            errors = []
            for i, branch in enumerate(writer):
                errors.extend(self.check(reader, branch, f"{path}/{i}"))
            return errors
        if reader_kind == "union":
            if any(not self.check(branch, writer, path) for branch in reader):
                return []
            return [
                f"{path}: the reader's {_describe(reader)} has no branch for the writer's "
                f"{_describe(writer)}"
            ]
        if reader_kind != writer_kind:
            if reader_kind in PROMOTIONS.get(writer_kind, ()):
                return []
            return [
                f"{path}: the reader's type {_describe(reader)} cannot read the writer's "
                f"{_describe(writer)}"
            ]
        if reader_kind in NAMED and not _names_match(reader, writer):
            return [
                f"{path}: the reader's {_describe(reader)} does not match the writer's "
                f"name {writer['name']}"
            ]
        if reader_kind == "record":
            return self._records(reader, writer, path)
        if reader_kind == "enum":
            if "default" in reader:
                return []
            missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
            if missing:
                return [f"{path}: the reader's {_describe(reader)} lacks the symbols {missing}"]
            return []
        if reader_kind == "fixed" and reader["size"] != writer["size"]:
            return [
                f"{path}: the reader's {_describe(reader)} has size {reader['size']}, the "
                f"writer's {writer['size']}"
            ]
        if reader_kind == "array":
            return self.check(reader["items"], writer["items"], f"{path}/items")
        if reader_kind == "map":
            return self.check(reader["values"], writer["values"], f"{path}/values")
        return []

    def _records(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        pair = (reader["name"], writer["name"])
        if pair in self.assumed:  # a recursive type: assumed compatible while being checked
            return []
        self.assumed.add(pair)
        writer_fields = {f["name"]: f for f in writer["fields"]}
        errors = []
        for field in reader["fields"]:
            written = writer_fields.get(field["name"])
            if written is None:
                written = next(
                    (writer_fields[a] for a in field.get("aliases", ()) if a in writer_fields),
                    None,
                )
            field_path = f"{path}/fields/{field['name']}"
            if written is not None:
                errors.extend(self.check(field["type"], written["type"], field_path))
            elif "default" not in field:
                errors.append(
                    f"{field_path}: the reader's field '{field['name']}' of record "
                    f"{reader['name']} has no default value and is missing from the writer"
                )
        return errors


def read_errors(
    reader: Any, reader_names: Mapping[str, Any], writer: Any, writer_names: Mapping[str, Any]
) -> list[str]:
    """Why `reader` cannot read all data written with `writer` (empty: it can). The names
    map each schema's named types (full name -> definition)."""
    return _Checker(reader_names, writer_names).check(reader, writer, "#")
