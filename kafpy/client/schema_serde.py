"""Confluent's wire format for keys and values whose schema is in a schema registry, and
its AVRO and JSON Schema serializers and deserializers (Confluent's
`AbstractKafkaSchemaSerDe`, `KafkaAvroSerializer`, `KafkaJsonSchemaDeserializer`, ...).

A framed record is the magic byte 0, the schema's global id as a 4-byte big-endian
integer, then the data: Avro's binary encoding (without a schema) or the JSON text. The
subject a serializer registers under is Confluent's TopicNameStrategy, `<topic>-value`
or `<topic>-key`. Needs the extra `schema-registry` (fastavro, jsonschema): callers check
it with `kafpy.common.extras.require_extra` before importing this module.

Every failure with one record (not framed, an unknown schema id, data that does not match
its schema, a registry that cannot be reached) is a `SerializationError` whose message
names it, so that a tool can report the record and go on.
"""

from __future__ import annotations

import enum
import io
import json
import struct
from collections.abc import Iterable
from typing import Any

from fastavro import json_reader, json_writer, schemaless_reader, schemaless_writer
from fastavro.schema import parse_schema
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from kafpy.client.schema_registry_client import (
    RegisteredSchema,
    SchemaRegistryClient,
    SchemaRegistryClientError,
)

MAGIC_BYTE = 0
HEADER = struct.Struct(">bI")  # the magic byte, the schema id


class SerializationError(Exception):
    """One key or value could not be serialized or deserialized (Kafka's
    SerializationException); the message says why."""


class SchemaFormat(enum.Enum):
    """The formats a registry's schema gives a key or value, by their command-line names."""

    AVRO = "avro"
    JSON_SCHEMA = "json-schema"

    @property
    def schema_type(self) -> str:
        """The registry's name for the schema type (`schemaType`)."""
        return "AVRO" if self is SchemaFormat.AVRO else "JSON"

    @property
    def title(self) -> str:
        return "Avro" if self is SchemaFormat.AVRO else "JSON Schema"


def subject_name(topic: str, is_key: bool) -> str:
    """Confluent's TopicNameStrategy: the subject of a topic's keys or values."""
    return f"{topic}-{'key' if is_key else 'value'}"


def frame(schema_id: int, payload: bytes) -> bytes:
    """The magic byte and the schema id before the payload."""
    return HEADER.pack(MAGIC_BYTE, schema_id) + payload


def unframe(data: bytes) -> tuple[int, bytes]:
    """The schema id and the payload of a framed record; a SerializationError when the
    record is not in Confluent's framing."""
    if len(data) < HEADER.size:
        raise SerializationError(
            f"Unknown magic byte! The record has {len(data)} bytes, fewer than the 5 of "
            "Confluent's framing (the magic byte 0 and a 4-byte schema id): it was not "
            "written by a schema registry serializer."
        )
    magic, schema_id = HEADER.unpack_from(data)
    if magic != MAGIC_BYTE:
        raise SerializationError(
            f"Unknown magic byte! The record starts with {data[0]}, not 0: it was not "
            "written by a schema registry serializer."
        )
    return schema_id, data[HEADER.size :]


def schema_id_of(data: bytes | None) -> int | None:
    """The schema id of a framed record, None for anything else."""
    if data is None or len(data) < HEADER.size or data[0] != MAGIC_BYTE:
        return None
    return int(HEADER.unpack_from(data)[1])


class _ParsedSchema:
    """A registry schema ready to read or write data: fastavro's parsed form, or a JSON
    Schema validator."""

    def __init__(self, registered: RegisteredSchema) -> None:
        self.registered = registered
        self.schema_type = registered.schema_type
        self.avro: Any = None
        self.validator: Any = None
        try:
            document = json.loads(registered.schema)
            if self.schema_type == "AVRO":
                self.avro = parse_schema(document)
            elif self.schema_type == "JSON":
                cls = validator_for(document)
                cls.check_schema(document)
                self.validator = cls(document)
        except (ValueError, TypeError, KeyError, SchemaError) as e:
            raise SerializationError(
                f"The schema with id {registered.schema_id} cannot be used: {e}"
            ) from None


class SchemaDeserializer:
    """Reads framed keys or values of one format (of either, when `schema_format` is
    None): each with the schema its id names, fetched from the registry once. With a
    `reader_schema` (AVRO), each record's writer schema is resolved to it, as Avro's
    schema resolution says."""

    def __init__(
        self,
        client: SchemaRegistryClient,
        schema_format: SchemaFormat | None,
        reader_schema: str | None = None,
    ) -> None:
        self.client = client
        self.format = schema_format
        self.reader: Any = None
        if reader_schema is not None:
            self.reader = parse_schema(json.loads(reader_schema))
        self._schemas: dict[int, _ParsedSchema] = {}

    def unknown_ids(self, values: Iterable[bytes | None]) -> set[int]:
        """The schema ids of these records not fetched yet (to fetch off the event loop)."""
        ids = {schema_id_of(v) for v in values}
        return {i for i in ids if i is not None and i not in self._schemas}

    def fetch(self, schema_ids: Iterable[int]) -> None:
        """Fetch these schemas; a failure is left for decode() to report with its record."""
        for schema_id in schema_ids:
            try:
                self.schema(schema_id)
            except SerializationError:
                pass

    def schema(self, schema_id: int) -> _ParsedSchema:
        parsed = self._schemas.get(schema_id)
        if parsed is not None:
            return parsed
        title = "" if self.format is None else f"{self.format.title} "
        try:
            registered = self.client.schema_by_id(schema_id)
        except SchemaRegistryClientError as e:
            raise SerializationError(
                f"Error retrieving the {title}schema for id {schema_id}: {e}"
            ) from None
        expected = {"AVRO", "JSON"} if self.format is None else {self.format.schema_type}
        if registered.schema_type not in expected:
            raise SerializationError(
                f"The schema with id {schema_id} is a {registered.schema_type} schema, not "
                f"{' or '.join(sorted(expected))}"
            )
        parsed = self._schemas[schema_id] = _ParsedSchema(registered)
        return parsed

    def decode(self, data: bytes) -> Any:
        """The record's data as Python values (fastavro's, or json.loads's)."""
        schema_id, payload = unframe(data)
        parsed = self.schema(schema_id)
        try:
            if parsed.avro is not None:
                return schemaless_reader(io.BytesIO(payload), parsed.avro, self.reader)
            return json.loads(payload)
        except Exception as e:  # fastavro raises what the bytes provoke; all mean one thing
            title = "Avro" if parsed.avro is not None else "JSON Schema"
            raise SerializationError(
                f"Error deserializing {title} message for id {schema_id}: {type(e).__name__}: {e}"
            ) from None

    def to_json(self, data: bytes) -> str:
        """The record as one line of JSON: Avro's JSON encoding (a union's branch named,
        as Confluent's AvroMessageFormatter prints it), or the JSON text itself."""
        schema_id, _ = unframe(data)
        datum = self.decode(data)
        parsed = self.schema(schema_id)
        if parsed.avro is None:
            return json.dumps(datum, separators=(",", ":"), ensure_ascii=False)
        out = io.StringIO()
        json_writer(out, parsed.avro, [datum])
        return json.dumps(json.loads(out.getvalue()), separators=(",", ":"), ensure_ascii=False)


class SchemaSerializer:
    """Writes keys or values of one topic in one format: registers `schema` under the
    topic's subject (TopicNameStrategy) at prepare(), or uses the registered schema with
    id `schema_id`, or with neither, the subject's latest version; then frames each datum
    with that id."""

    def __init__(
        self,
        client: SchemaRegistryClient,
        schema_format: SchemaFormat,
        topic: str,
        is_key: bool = False,
        schema: str | None = None,
        schema_id: int | None = None,
    ) -> None:
        self.client = client
        self.format = schema_format
        self.subject = subject_name(topic, is_key)
        self.schema_text = schema
        self.given_id = schema_id
        self.schema_id: int | None = None
        self.parsed: _ParsedSchema | None = None

    def prepare(self) -> int:
        """Register the schema (or look up the subject's latest); returns its id. Raises
        SerializationError when the schema is invalid or the registry refuses it."""
        try:
            if self.given_id is not None:
                registered = self.client.schema_by_id(self.given_id)
            elif self.schema_text is None:
                registered = self.client.latest_version(self.subject)
            else:
                try:
                    json.loads(self.schema_text)
                except ValueError as e:
                    raise SerializationError(f"The schema is not JSON: {e}") from None
                schema_id = self.client.register(
                    self.subject, self.schema_text, self.format.schema_type
                )
                registered = RegisteredSchema(
                    schema_id, self.format.schema_type, self.schema_text, self.subject
                )
        except SchemaRegistryClientError as e:
            action = "registering" if self.schema_text is not None else "looking up"
            raise SerializationError(
                f"Error {action} the {self.format.title} schema of subject {self.subject}: {e}"
            ) from None
        if registered.schema_type != self.format.schema_type:
            raise SerializationError(
                f"The schema of subject {self.subject} (id {registered.schema_id}) is "
                f"{registered.schema_type}, not {self.format.schema_type}"
            )
        self.parsed = _ParsedSchema(registered)
        self.schema_id = registered.schema_id
        return registered.schema_id

    def from_json(self, text: str) -> bytes:
        """A framed record from one JSON document (Avro's JSON encoding for AVRO, as
        Confluent's AvroMessageReader takes it)."""
        parsed = self._ready()
        try:
            document = json.loads(text)
        except ValueError as e:
            raise SerializationError(f"Not JSON: {e}: {text[:200]}") from None
        if parsed.avro is None:
            return self.encode(document)
        try:
            datum = next(json_reader(io.StringIO(json.dumps(document)), parsed.avro))
        except Exception as e:  # fastavro's json_reader raises whatever the input provokes
            raise SerializationError(
                f"Error deserializing JSON {text[:200]} to Avro of schema id "
                f"{parsed.registered.schema_id}: {type(e).__name__}: {e}"
            ) from None
        return self.encode(datum)

    def encode(self, datum: Any) -> bytes:
        """A framed record holding `datum` (Python values), checked against the schema."""
        parsed = self._ready()
        schema_id = parsed.registered.schema_id
        if parsed.validator is not None:
            error = next(iter(parsed.validator.iter_errors(datum)), None)
            if error is not None:
                raise SerializationError(
                    f"The JSON does not match the JSON schema with id {schema_id}: {error.message}"
                )
            text = json.dumps(datum, separators=(",", ":"), ensure_ascii=False)
            return frame(schema_id, text.encode())
        out = io.BytesIO()
        try:
            schemaless_writer(out, parsed.avro, datum, strict=True)
        except Exception as e:  # fastavro's writer raises whatever the datum provokes
            raise SerializationError(
                f"Error serializing Avro message with schema id {schema_id}: "
                f"{type(e).__name__}: {e}"
            ) from None
        return frame(schema_id, out.getvalue())

    def _ready(self) -> _ParsedSchema:
        if self.parsed is None:
            self.prepare()
        assert self.parsed is not None
        return self.parsed
