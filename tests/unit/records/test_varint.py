"""Zigzag varints against literal bytes, kafka-python's encoder, and random values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import decode_varint as kp_decode_varint
from kafka.record.util import encode_varint as kp_encode_varint

from kafpy.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    decode_varlongs_at,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_varint,
    unzigzag,
    zigzag,
)

KNOWN = [
    (0, b"\x00"),
    (-1, b"\x01"),
    (1, b"\x02"),
    (-2, b"\x03"),
    (63, b"\x7e"),
    (-64, b"\x7f"),
    (64, b"\x80\x01"),
    (300, b"\xd8\x04"),
    (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
    (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
]


@pytest.mark.parametrize(("value", "encoded"), KNOWN)
def test_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert encode_varlong(value) == encoded
    assert decode_varint(encoded) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


def test_varlong_extremes_take_ten_bytes() -> None:
    assert encode_varlong(INT64_MAX) == b"\xfe" + b"\xff" * 8 + b"\x01"
    assert encode_varlong(INT64_MIN) == b"\xff" * 9 + b"\x01"
    assert decode_varlong(encode_varlong(INT64_MIN)) == (INT64_MIN, 10)


def test_out_of_range_values_are_refused() -> None:
    with pytest.raises(ValueError, match="int32"):
        encode_varint(INT32_MAX + 1)
    with pytest.raises(ValueError, match="int64"):
        encode_varlong(INT64_MIN - 1)


def test_decode_at_position_returns_next_position() -> None:
    buf = b"\xaa" + encode_varint(300) + encode_varint(-5)
    value, pos = decode_varint(buf, 1)
    assert (value, pos) == (300, 3)
    assert decode_varint(buf, pos) == (-5, 4)


def test_overlong_varint_is_rejected() -> None:
    with pytest.raises(ValueError, match="longer than 5 bytes"):
        decode_varint(b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        decode_varlong(b"\x80" * 10 + b"\x01")


def test_truncated_varint_raises_index_error() -> None:
    with pytest.raises(IndexError):
        decode_varint(b"\x80\x80")


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_round_trip_and_kafka_python_agree(value: int) -> None:
    encoded = encode_varlong(value)
    assert decode_varlong(encoded) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)
    assert unzigzag(zigzag(value)) == value
    theirs = bytearray()
    kp_encode_varint(value, theirs.append)
    assert bytes(theirs) == encoded
    assert kp_decode_varint(bytearray(encoded), 0) == (value, len(encoded))


@given(st.integers(INT32_MIN, INT32_MAX))
def test_varint_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert len(encoded) <= 5
    assert decode_varint(bytearray(encoded) + b"\x00") == (value, len(encoded))


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_unsigned_varint(value) == encoded
    assert decode_unsigned_varint(b"\xaa" + encoded, 1) == (value, len(encoded) + 1)


def test_unsigned_varint_refuses_negative_overlong_and_truncated_input() -> None:
    with pytest.raises(ValueError, match="negative"):
        encode_unsigned_varint(-1)
    with pytest.raises(ValueError, match="longer than 5 bytes"):
        decode_unsigned_varint(b"\xff\xff\xff\xff\xff\x01")
    with pytest.raises(IndexError):
        decode_unsigned_varint(b"\x80\x80")


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(value: int) -> None:
    data = encode_unsigned_varint(value)
    assert decode_unsigned_varint(data) == (value, len(data))


@given(st.lists(st.integers(INT64_MIN, INT64_MAX), min_size=1, max_size=20))
def test_many_varlongs_decode_at_once_as_one_by_one(values: list[int]) -> None:
    import numpy as np

    data = b"".join(encode_varlong(v) for v in values)
    positions, pos = [], 0
    while pos < len(data):
        positions.append(pos)
        pos = decode_varlong(data, pos)[1]
    u = np.frombuffer(data + bytes(9), dtype=np.uint8)
    decoded, sizes = decode_varlongs_at(u, np.array(positions, dtype=np.int64))
    assert decoded.tolist() == values
    assert sizes.tolist() == [len(encode_varlong(v)) for v in values]


def test_many_varlongs_refuse_an_overlong_one() -> None:
    import numpy as np

    from kafpy.common.errors import CorruptRecordError

    u = np.frombuffer(b"\x02" + b"\xff" * 10 + b"\x01" + bytes(9), dtype=np.uint8)
    with pytest.raises(CorruptRecordError, match="over-long"):
        decode_varlongs_at(u, np.array([0, 1], dtype=np.int64))
