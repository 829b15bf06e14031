"""The records of the `_schemas` topic: Confluent's keys and values, and their JSON.

A key names what a record is about; its JSON has Confluent's field order and leaves out
what is empty (Jackson's NON_EMPTY):

    {"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}
    {"keytype":"CONFIG","subject":"orders-value","magic":0}   (no subject: the global config)
    {"keytype":"MODE","magic":0}
    {"keytype":"DELETE_SUBJECT","subject":"orders-value","magic":0}
    {"keytype":"CLEAR_SUBJECT","subject":"orders-value","magic":0}
    {"keytype":"NOOP","magic":0}

The values, as Confluent Platform 6.2 writes them (`schemaType` only when not AVRO,
`references` only when there are some; a null value is a tombstone):

    SCHEMA          {"subject":"s","version":1,"id":1,"schemaType":"JSON",
                     "references":[{"name":"n","subject":"r","version":1}],
                     "schema":"...","deleted":false}
    CONFIG          {"compatibilityLevel":"BACKWARD"}
    MODE            {"mode":"READWRITE"}
    DELETE_SUBJECT  {"subject":"s","version":3}
    CLEAR_SUBJECT   {"subject":"s"}

Reading is lenient as Confluent's is (unknown fields are ignored), but a record that is not
one of these raises SchemaRegistryRecordError, which the store logs and skips.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

AVRO = "AVRO"
SCHEMA_KEY_MAGIC = 1
OTHER_KEY_MAGIC = 0


class SchemaRegistryRecordError(ValueError):
    """A record of `_schemas` that is not one of Confluent's keys or values."""


class KeyType(enum.Enum):
    """What a `_schemas` record is about (Confluent's SchemaRegistryKeyType)."""

    CONFIG = "CONFIG"
    SCHEMA = "SCHEMA"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"


@dataclass(frozen=True)
class SchemaRegistryKey:
    """A record's key: its type, the subject (None: global or none) and, for SCHEMA, the
    version."""

    keytype: KeyType
    subject: str | None = None
    version: int | None = None

    @classmethod
    def schema(cls, subject: str, version: int) -> SchemaRegistryKey:
        return cls(KeyType.SCHEMA, subject, version)

    @property
    def magic(self) -> int:
        return SCHEMA_KEY_MAGIC if self.keytype is KeyType.SCHEMA else OTHER_KEY_MAGIC

    def __str__(self) -> str:
        return (
            f"{{magic={self.magic},keytype={self.keytype.value},subject={self.subject},"
            f"version={self.version}}}"
        )


@dataclass(frozen=True)
class SchemaReference:
    """A schema's reference to another: the name it is imported under, and the subject and
    version holding it."""

    name: str
    subject: str
    version: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaValue:
    """One version of a subject: its global id, type, references, text and whether it is
    soft-deleted."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = AVRO
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False


@dataclass(frozen=True)
class ConfigValue:
    """A compatibility level (global when the key has no subject)."""

    compatibility_level: str


@dataclass(frozen=True)
class ModeValue:
    """A mode: READWRITE, READONLY, READONLY_OVERRIDE or IMPORT."""

    mode: str


@dataclass(frozen=True)
class DeleteSubjectValue:
    """A subject soft-deleted up to and including `version`."""

    subject: str
    version: int


@dataclass(frozen=True)
class ClearSubjectValue:
    """A subject whose permanently deleted versions are cleared."""

    subject: str


SchemaRegistryValue = SchemaValue | ConfigValue | ModeValue | DeleteSubjectValue | ClearSubjectValue


def _dumps(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def serialize_key(key: SchemaRegistryKey) -> bytes:
    """The key's JSON in Confluent's field order."""
    out: dict[str, Any] = {"keytype": key.keytype.value}
    if key.keytype is not KeyType.NOOP and key.subject:
        out["subject"] = key.subject
    if key.keytype is KeyType.SCHEMA:
        out["version"] = key.version
    out["magic"] = key.magic
    return _dumps(out)


def serialize_value(value: SchemaRegistryValue | None) -> bytes | None:
    """The value's JSON (None, a tombstone, stays None)."""
    if value is None:
        return None
    if isinstance(value, SchemaValue):
        out: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
        if value.schema_type != AVRO:
            out["schemaType"] = value.schema_type
        if value.references:
            out["references"] = [r.as_json() for r in value.references]
        out["schema"] = value.schema
        out["deleted"] = value.deleted
        return _dumps(out)
    if isinstance(value, ConfigValue):
        return _dumps({"compatibilityLevel": value.compatibility_level})
    if isinstance(value, ModeValue):
        return _dumps({"mode": value.mode})
    if isinstance(value, DeleteSubjectValue):
        return _dumps({"subject": value.subject, "version": value.version})
    return _dumps({"subject": value.subject})


def _object(data: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise SchemaRegistryRecordError(f"the {what} is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise SchemaRegistryRecordError(f"the {what} is not a JSON object")
    return obj


def _field(obj: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SchemaRegistryRecordError(f"the {what} has no {kind.__name__} field '{name}'")
    return value


def deserialize_key(data: bytes | None) -> SchemaRegistryKey:
    """A key from its JSON; SchemaRegistryRecordError if it is not one of Confluent's."""
    if data is None:
        raise SchemaRegistryRecordError("the record has no key")
    obj = _object(data, "key")
    try:
        keytype = KeyType(obj.get("keytype"))
    except ValueError:
        raise SchemaRegistryRecordError(f"unknown keytype {obj.get('keytype')!r}") from None
    subject = obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise SchemaRegistryRecordError("the key's subject is not a string")
    if keytype is KeyType.SCHEMA:
        version = _field(obj, "version", int, "SCHEMA key")
        if subject is None:
            raise SchemaRegistryRecordError("the SCHEMA key has no subject")
        return SchemaRegistryKey(keytype, subject, version)
    if keytype in (KeyType.DELETE_SUBJECT, KeyType.CLEAR_SUBJECT) and subject is None:
        raise SchemaRegistryRecordError(f"the {keytype.value} key has no subject")
    return SchemaRegistryKey(keytype, subject)


def _references(obj: dict[str, Any]) -> tuple[SchemaReference, ...]:
    raw = obj.get("references") or []
    if not isinstance(raw, list):
        raise SchemaRegistryRecordError("the SCHEMA value's references are not a list")
    refs = []
    for r in raw:
        if not isinstance(r, dict):
            raise SchemaRegistryRecordError("a reference is not a JSON object")
        refs.append(
            SchemaReference(
                _field(r, "name", str, "reference"),
                _field(r, "subject", str, "reference"),
                _field(r, "version", int, "reference"),
            )
        )
    return tuple(refs)


def deserialize_value(key: SchemaRegistryKey, data: bytes | None) -> SchemaRegistryValue | None:
    """The value of a record with `key` from its JSON (None for a tombstone or a NOOP)."""
    if data is None or key.keytype is KeyType.NOOP:
        return None
    obj = _object(data, f"{key.keytype.value} value")
    if key.keytype is KeyType.SCHEMA:
        what = "SCHEMA value"
        schema_type = obj.get("schemaType") or AVRO
        if not isinstance(schema_type, str):
            raise SchemaRegistryRecordError("the SCHEMA value's schemaType is not a string")
        return SchemaValue(
            subject=_field(obj, "subject", str, what),
            version=_field(obj, "version", int, what),
            id=_field(obj, "id", int, what),
            schema=_field(obj, "schema", str, what),
            schema_type=schema_type,
            references=_references(obj),
            deleted=bool(obj.get("deleted", False)),
        )
    if key.keytype is KeyType.CONFIG:
        return ConfigValue(_field(obj, "compatibilityLevel", str, "CONFIG value"))
    if key.keytype is KeyType.MODE:
        return ModeValue(_field(obj, "mode", str, "MODE value"))
    if key.keytype is KeyType.DELETE_SUBJECT:
        return DeleteSubjectValue(
            _field(obj, "subject", str, "DELETE_SUBJECT value"),
            _field(obj, "version", int, "DELETE_SUBJECT value"),
        )
    return ClearSubjectValue(_field(obj, "subject", str, "CLEAR_SUBJECT value"))
