"""Primitive codecs against literal bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafpy.protocol import types as t


def enc(codec: t.Type, value: object) -> bytes:
    out: list = []
    codec.encode(value, out)
    return b"".join(out)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varint(value: int, encoded: bytes) -> None:
    assert t.uvarint_bytes(value) == encoded
    assert t.read_uvarint(memoryview(encoded), 0) == (value, len(encoded))


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")],
)
def test_varint_zigzag(value: int, encoded: bytes) -> None:
    assert t.varint_bytes(value) == encoded
    assert t.read_varint(memoryview(encoded), 0) == (value, len(encoded))
    assert t.varlong_bytes(value) == encoded
    assert t.read_varlong(memoryview(encoded), 0) == (value, len(encoded))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    data = t.varlong_bytes(value)
    assert t.read_varlong(memoryview(data), 0) == (value, len(data))


def test_strings() -> None:
    assert enc(t.string_type(False, False), "ab") == b"\x00\x02ab"
    assert enc(t.string_type(False, True), None) == b"\xff\xff"
    assert enc(t.string_type(True, False), "ab") == b"\x03ab"
    assert enc(t.string_type(True, True), None) == b"\x00"
    assert enc(t.string_type(False, False), "é") == b"\x00\x02\xc3\xa9"
    with pytest.raises(ValueError, match="cannot be null"):
        enc(t.string_type(False, False), None)


def test_bytes_and_records() -> None:
    assert enc(t.bytes_type(False, False), b"ab") == b"\x00\x00\x00\x02ab"
    assert enc(t.bytes_type(True, True), None) == b"\x00"
    assert enc(t.bytes_type(True, False), b"") == b"\x01"
    buf = memoryview(b"\x00\x00\x00\x02xy")
    value, end = t.bytes_type(False, False, records=True).decode(buf, 0)
    assert isinstance(value, memoryview) and value == b"xy" and end == 6


def test_arrays() -> None:
    ints = t.array_type(t.INT32_T, False, True)
    assert enc(ints, [1, -1]) == b"\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff\xff\xff"
    assert enc(ints, None) == b"\xff\xff\xff\xff"
    compact = t.array_type(t.string_type(True, False), True, False)
    assert enc(compact, ["a"]) == b"\x02\x02a"
    assert compact.decode(memoryview(b"\x02\x02a"), 0) == (["a"], 3)


def test_uuid_zero_is_none() -> None:
    assert enc(t.UUID_T, None) == bytes(16)
    assert t.UUID_T.decode(memoryview(bytes(16)), 0) == (None, 16)


@pytest.mark.parametrize(
    ("codec", "buf", "reason"),
    [
        (t.string_type(False, False), b"\x00\x05ab", "string length 5 runs past the end"),
        (t.string_type(False, True), b"\xff\xfe", "negative string length -2"),
        (t.string_type(True, False), b"\x00", "non-nullable string is null"),
        (t.string_type(False, False), b"\x00\x01\xff", "not valid UTF-8"),
        (t.bytes_type(False, False), b"\x80\x00\x00\x00", "negative bytes length"),
        (
            t.array_type(t.INT64_T, False, False),
            b"\x00\x00\x00\x02" + bytes(8),
            "runs past the end",
        ),
        (t.array_type(t.INT8_T, False, False), b"\x7f\xff\xff\xff", "larger than the bytes left"),
        (t.INT64_T, b"\x00\x00", "unexpected end of buffer"),
        (t.UVARINT_T, b"\x80\x80", "unexpected end of buffer"),
    ],
)
def test_malformed(codec: t.Type, buf: bytes, reason: str) -> None:
    with pytest.raises(t.DecodeFailure, match=reason):
        codec.decode(memoryview(buf), 0)
