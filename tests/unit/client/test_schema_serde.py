"""Confluent's framing (magic byte 0, a 4-byte big-endian schema id) against literal
bytes, and the errors for records not in it. The registry side is tested against a real
`kafpy schema-registry` in tests/integration/test_console_tools_schema_registry.py."""

from __future__ import annotations

import pytest

from kafpy.client.schema_registry_client import SchemaRegistryClient
from kafpy.client.schema_serde import (
    SchemaDeserializer,
    SchemaFormat,
    SerializationError,
    frame,
    schema_id_of,
    subject_name,
    unframe,
)


def test_frame_is_magic_byte_then_big_endian_id() -> None:
    assert frame(258, b"data") == b"\x00\x00\x00\x01\x02data"
    assert unframe(b"\x00\x00\x00\x01\x02data") == (258, b"data")
    assert schema_id_of(b"\x00\x7f\xff\xff\xff") == 2**31 - 1


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "has 0 bytes"),
        (b"\x00\x00\x00\x01", "has 4 bytes"),
        (b"\x01\x00\x00\x00\x01x", "starts with 1, not 0"),
        (b"plain text", "starts with 112, not 0"),
    ],
)
def test_records_not_framed_are_refused(data: bytes, says: str) -> None:
    with pytest.raises(SerializationError, match="Unknown magic byte!") as error:
        unframe(data)
    assert says in str(error.value)
    assert schema_id_of(data) is None


def test_subjects_follow_topic_name_strategy() -> None:
    assert subject_name("orders", is_key=False) == "orders-value"
    assert subject_name("orders", is_key=True) == "orders-key"


def test_a_registry_that_is_down_is_a_serialization_error() -> None:
    deserializer = SchemaDeserializer(SchemaRegistryClient("http://127.0.0.1:1"), SchemaFormat.AVRO)
    assert deserializer.unknown_ids([b"\x00\x00\x00\x00\x05", None, b"x"]) == {5}
    with pytest.raises(SerializationError, match="could not be reached"):
        deserializer.decode(b"\x00\x00\x00\x00\x05\x02")
