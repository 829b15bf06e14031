"""The message browser's view of keys and values in Confluent's framing (`kafpy console
--schema-registry URL`): each one decoded with the schema its id names in the registry
and shown as JSON (Avro's JSON encoding for AVRO), its format `avro` or `json-schema`
and a note with the schema id. A framed record that cannot be decoded (an unknown id, a
registry that is down, bytes that do not match the schema) is shown as the browser
shows any bytes, with the reason in its note.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterable

from kafpy.client.schema_registry_client import SchemaRegistryClient
from kafpy.client.schema_serde import SchemaDeserializer, SerializationError, schema_id_of
from kafpy.console.message_format import (
    MAX_SHOWN_BYTES,
    MessageFormat,
    ShownBytes,
    show_bytes,
)

SHOWN_FORMATS = {"AVRO": "avro", "JSON": "json-schema"}


class SchemaDecoder:
    """Decodes framed keys and values for the browser, the schemas fetched from the
    registry at `url` once each."""

    def __init__(self, url: str) -> None:
        self.client = SchemaRegistryClient(url)
        self.deserializer = SchemaDeserializer(self.client, None)

    async def prefetch(self, values: Iterable[bytes | None]) -> None:
        """Fetch the schemas these values name, on a thread (the client blocks)."""
        ids = self.deserializer.unknown_ids(values)
        if ids:
            await asyncio.to_thread(self.deserializer.fetch, ids)

    def show(self, data: bytes | None, fmt: MessageFormat) -> ShownBytes:
        """`data` decoded when it is framed and `fmt` is auto or json; else as
        show_bytes shows it."""
        schema_id = schema_id_of(data)
        if data is None or schema_id is None or fmt not in (MessageFormat.AUTO, MessageFormat.JSON):
            return show_bytes(data, fmt)
        try:
            text = self.deserializer.to_json(data)
            schema_type = self.deserializer.schema(schema_id).schema_type
        except SerializationError as e:
            return dataclasses.replace(show_bytes(data, fmt), note=str(e))
        pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        truncated = len(pretty) > MAX_SHOWN_BYTES
        return ShownBytes(
            pretty[:MAX_SHOWN_BYTES],
            SHOWN_FORMATS[schema_type],
            len(data),
            truncated,
            f"schema id {schema_id}",
        )
