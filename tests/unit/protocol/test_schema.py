"""The schema engine: defaults, versions, tagged fields, zero-copy records, bad input."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafpy.protocol.errors import ProtocolDecodeError, ProtocolEncodeError
from kafpy.protocol.messages import REQUESTS, RESPONSES
from kafpy.protocol.messages.fetch import FETCH_RESPONSE
from kafpy.protocol.messages.metadata import METADATA_REQUEST, METADATA_RESPONSE
from kafpy.protocol.messages.produce import PRODUCE_REQUEST
from kafpy.protocol.schema import Array, Field, Message, Struct, parse_versions
from kafpy.records.memory_records import MemoryRecords
from tests.unit.protocol.strategies import message_values

ALL_PAIRS = [
    (m, v)
    for m in [*REQUESTS.values(), *RESPONSES.values()]
    for v in range(m.valid_versions[0], m.valid_versions[1] + 1)
]

FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TOY = Message(
    0,
    "ToyRequest",
    "request",
    (0, 2),
    2,
    [
        Field("id", "int32"),
        Field("name", "string", "1+"),
        Field("note", "string", "2+", nullable="2+", default=None),
        Field("items", Array(Struct([Field("x", "int16"), Field("tags", Array("string"))]))),
        Field("extra", "int64", "2+", default=-1, tag=0),
        Field("info", Struct([Field("a", "int8", default=3)]), "2+", tag=1),
    ],
)


def test_parse_versions() -> None:
    assert parse_versions("3+") == (3, 32767)
    assert parse_versions("0-4") == (0, 4)
    assert parse_versions("2") == (2, 2)
    assert parse_versions("none") is None


def test_missing_keys_take_defaults() -> None:
    body = METADATA_REQUEST.encode(8, {})
    # topics null (all topics), allow_auto_topic_creation true, two false flags
    assert body == b"\xff\xff\xff\xff\x01\x00\x00"
    assert METADATA_REQUEST.decode(8, body) == {
        "topics": None,
        "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def test_fields_outside_the_version_are_ignored_and_absent() -> None:
    body = TOY.encode(0, {"id": 7, "name": "ignored", "items": []})
    assert body == b"\x00\x00\x00\x07\x00\x00\x00\x00"
    assert TOY.decode(0, body) == {"id": 7, "items": []}


def test_flexible_version_uses_compact_encodings_and_tagged_fields() -> None:
    value = {"id": 1, "name": "ab", "note": None, "items": [{"x": 2, "tags": ["t"]}]}
    body = TOY.encode(2, value)
    assert body == (
        b"\x00\x00\x00\x01"  # id
        b"\x03ab"  # compact string
        b"\x00"  # compact null string
        b"\x02"
        b"\x00\x02"
        b"\x02\x02t"
        b"\x00"  # 1 item: x, 1 tag, no tagged fields
        b"\x00"  # no tagged fields (extra and info at their defaults)
    )
    decoded = TOY.decode(2, body)
    assert decoded == {**value, "extra": -1, "info": None}


def test_tagged_fields_written_when_not_default_in_tag_order() -> None:
    value = {"id": 1, "name": "", "items": [], "info": {"a": 5}, "extra": 9}
    body = TOY.encode(2, value)
    assert body.endswith(b"\x02\x00\x08" + (9).to_bytes(8, "big") + b"\x01\x02\x05\x00")
    assert TOY.decode(2, body) == {**value, "note": None}


def test_unknown_tagged_fields_are_kept() -> None:
    body = TOY.encode(2, {"_unknown_tagged_fields": {5: b"zz"}})
    assert body.endswith(b"\x01\x05\x02zz")
    decoded = TOY.decode(2, body)
    assert decoded["_unknown_tagged_fields"] == {5: b"zz"}
    assert TOY.encode(2, decoded) == body


def test_records_decode_as_views_over_the_input() -> None:
    payload = b"R" * 10000
    value = {
        "acks": 1,
        "timeout_ms": 5,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": payload}]}],
    }
    buf = bytearray(PRODUCE_REQUEST.encode(8, value))
    decoded = PRODUCE_REQUEST.decode(8, buf)
    records = decoded["topic_data"][0]["partition_data"][0]["records"]
    assert isinstance(records, memoryview)
    assert records.obj is buf  # a view, not a copy
    assert records == payload


def test_encode_parts_keeps_large_payloads_uncopied() -> None:
    payload = memoryview(bytearray(b"x" * 100000))
    value = {
        "responses": [
            {
                "topic": "t",
                "partitions": [{"partition_index": 0, "high_watermark": 3, "records": payload}],
            }
        ]
    }
    parts = FETCH_RESPONSE.encode_parts(11, value)
    assert any(p is payload for p in parts)
    assert b"".join(parts) == FETCH_RESPONSE.encode(11, value)
    assert len(parts) == 2  # everything before the payload joined into one part


def test_records_accept_memory_records_and_none() -> None:
    data = b"\x00" * 70
    value = {
        "responses": [
            {"topic": "t", "partitions": [{"partition_index": 0, "records": MemoryRecords(data)}]}
        ]
    }
    same = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": data}]}]}
    assert FETCH_RESPONSE.encode(4, value) == FETCH_RESPONSE.encode(4, same)
    none = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": None}]}]}
    assert FETCH_RESPONSE.encode(4, none).endswith(b"\xff\xff\xff\xff")


def test_unknown_version_is_an_error() -> None:
    with pytest.raises(ProtocolEncodeError, match="MetadataRequest has no version 99"):
        METADATA_REQUEST.encode(99, {})
    with pytest.raises(ProtocolDecodeError, match="MetadataRequest has no version 99"):
        METADATA_REQUEST.decode(99, b"")


def test_values_that_do_not_fit_are_encode_errors() -> None:
    with pytest.raises(ProtocolEncodeError, match="MetadataResponse v1"):
        METADATA_RESPONSE.encode(1, {"controller_id": 2**40})
    with pytest.raises(ProtocolEncodeError):
        METADATA_RESPONSE.encode(1, {"brokers": [{"host": None}]})


def test_truncated_buffer_names_message_version_and_field() -> None:
    value = {
        "acks": 1,
        "timeout_ms": 5,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"abc"}]}],
    }
    body = PRODUCE_REQUEST.encode(3, value)
    with pytest.raises(ProtocolDecodeError) as info:
        PRODUCE_REQUEST.decode(3, body[:-1])
    assert str(info.value).startswith(
        "cannot decode ProduceRequest v3: field topic_data[0].partition_data[0].records: "
    )
    assert info.value.field == "topic_data[0].partition_data[0].records"
    assert info.value.version == 3
    with pytest.raises(ProtocolDecodeError, match="field timeout_ms"):
        PRODUCE_REQUEST.decode(3, body[:5])


def test_negative_lengths_and_huge_counts_are_decode_errors() -> None:
    # transactional_id null, acks, timeout, then topic_data count
    head = b"\xff\xff\x00\x01\x00\x00\x00\x05"
    with pytest.raises(ProtocolDecodeError, match="field topic_data: negative array length -2"):
        PRODUCE_REQUEST.decode(3, head + b"\xff\xff\xff\xfe")
    with pytest.raises(ProtocolDecodeError, match="array length 2147483647 is larger"):
        PRODUCE_REQUEST.decode(3, head + b"\x7f\xff\xff\xff")
    with pytest.raises(ProtocolDecodeError, match="field transactional_id: negative string"):
        PRODUCE_REQUEST.decode(3, b"\xff\xf0" + head[2:])
    topic = b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00"
    with pytest.raises(ProtocolDecodeError, match="records: negative records length -7"):
        PRODUCE_REQUEST.decode(3, head + topic + b"\xff\xff\xff\xf9")


def test_null_in_a_non_nullable_field_is_a_decode_error() -> None:
    with pytest.raises(ProtocolDecodeError, match=r"topics\[0\].name: non-nullable string is null"):
        METADATA_REQUEST.decode(1, b"\x00\x00\x00\x01\xff\xff")


def test_invalid_utf8_is_a_decode_error() -> None:
    with pytest.raises(ProtocolDecodeError, match=r"topics\[0\].name: string is not valid UTF-8"):
        METADATA_REQUEST.decode(1, b"\x00\x00\x00\x01\x00\x02\xff\xfe")


def test_overlong_varint_is_a_decode_error() -> None:
    with pytest.raises(ProtocolDecodeError, match="longer than 5 bytes"):
        METADATA_REQUEST.decode(9, b"\xff\xff\xff\xff\xff\xff")


@FUZZ
@given(data=st.data())
def test_every_strict_prefix_of_a_valid_body_is_a_decode_error(data: st.DataObject) -> None:
    m, v = data.draw(st.sampled_from(ALL_PAIRS))
    body = m.encode(v, data.draw(message_values(m, v)))
    cut = data.draw(st.integers(0, max(0, len(body) - 1)))
    if len(body) == 0:
        return
    with pytest.raises(ProtocolDecodeError) as info:
        m.decode(v, body[:cut])
    assert f"{m.name} v{v}: field " in str(info.value)


@FUZZ
@given(data=st.data())
def test_random_and_mutated_bytes_decode_or_raise_protocol_decode_error(
    data: st.DataObject,
) -> None:
    m, v = data.draw(st.sampled_from(ALL_PAIRS))
    if data.draw(st.booleans()):
        buf = bytearray(m.encode(v, data.draw(message_values(m, v))))
        for _ in range(data.draw(st.integers(1, 4))):
            if buf:
                buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    else:
        buf = bytearray(data.draw(st.binary(max_size=64)))
    try:
        m.decode(v, bytes(buf))
    except ProtocolDecodeError as exc:
        assert f"{m.name} v{v}" in str(exc)
