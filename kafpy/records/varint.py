"""Zigzag variable-length integers, the encoding of every length and delta inside a v2 record.

Kafka's record format borrows protobuf's scheme: the signed value is zigzag-mapped to an
unsigned one (0, -1, 1, -2 ... → 0, 1, 2, 3 ...) and written 7 bits per byte, low bits
first, the high bit of each byte saying "more follows". A varint holds an int32 (at most
5 bytes), a varlong an int64 (at most 10 bytes).

The wire protocol's compact lengths and tagged fields use the same 7-bit scheme without
the zigzag step (Kafka's unsigned varint, at most 5 bytes).

Decoders take a buffer and a position and return `(value, next_position)`; they raise
`ValueError` for an over-long encoding and `IndexError` when the buffer ends mid-number,
which the record decoder turns into a CorruptRecordError naming the batch and the
protocol decoder into a DecodeFailure. `decode_varlongs_at` decodes many at once (numpy),
for the Arrow reader's columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

MAX_VARINT_SIZE = 5
MAX_VARLONG_SIZE = 10

# Encodings of the small values (zigzag 0..127, i.e. -64..63) are single bytes; sharing
# the objects saves an allocation for nearly every length and delta a record holds.
_ONE_BYTE = tuple(bytes((i,)) for i in range(128))


def zigzag(value: int) -> int:
    """Map a signed int64 to the unsigned value Kafka writes."""
    return (value << 1) ^ (value >> 63)


def unzigzag(raw: int) -> int:
    """Map a decoded unsigned value back to the signed one."""
    return (raw >> 1) ^ -(raw & 1)


def _encode_unsigned(raw: int) -> bytes:
    if raw < 0x80:
        return _ONE_BYTE[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def encode_unsigned_varint(value: int) -> bytes:
    """The unsigned varint encoding of a non-negative int (1 to 5 bytes for 32 bits)."""
    if value < 0x80:
        if value < 0:
            raise ValueError(f"unsigned varint cannot encode the negative number {value}")
        return _ONE_BYTE[value]
    return _encode_unsigned(value)


def encode_varint(value: int) -> bytes:
    """The zigzag varint encoding of an int32 (1 to 5 bytes)."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint value {value} is outside the int32 range")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def encode_varlong(value: int) -> bytes:
    """The zigzag varint encoding of an int64 (1 to 10 bytes)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong value {value} is outside the int64 range")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def size_of_varint(value: int) -> int:
    """Bytes `encode_varint(value)` takes (also right for varlongs)."""
    raw = (value << 1) ^ (value >> 63)
    return max(1, (raw.bit_length() + 6) // 7)


size_of_varlong = size_of_varint


def _decode(buf: Sequence[int], pos: int, max_size: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw = b & 0x7F
    shift = 7
    start = pos
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if pos - start >= max_size:
            raise ValueError(
                f"variable-length integer at position {start} is longer than {max_size} bytes"
            )


def decode_unsigned_varint(buf: Sequence[int], pos: int = 0) -> tuple[int, int]:
    """Decode the unsigned varint (at most 5 bytes) at `pos`; return (value, position after it)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    raw = b & 0x7F
    shift = 7
    end = pos + MAX_VARINT_SIZE
    pos += 1
    while pos < end:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return raw, pos
        shift += 7
    raise ValueError(
        f"unsigned varint at position {end - MAX_VARINT_SIZE} is longer than "
        f"{MAX_VARINT_SIZE} bytes"
    )


def decode_varint(buf: Sequence[int], pos: int = 0) -> tuple[int, int]:
    """Decode the zigzag varint (int32) at `pos`; return (value, position after it)."""
    return _decode(buf, pos, MAX_VARINT_SIZE)


def decode_varlong(buf: Sequence[int], pos: int = 0) -> tuple[int, int]:
    """Decode the zigzag varlong (int64) at `pos`; return (value, position after it)."""
    return _decode(buf, pos, MAX_VARLONG_SIZE)


def decode_varlongs_at(u: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode the zigzag varlong at every position in `pos` of the uint8 array `u` at
    once: (values, sizes). `u` must hold MAX_VARLONG_SIZE - 1 bytes past the last
    position that may be read (padding); CorruptRecordError for an over-long one."""
    import numpy as np  # on first use, as compression does: the broker never needs it

    from kafpy.common.errors import CorruptRecordError

    b = u[pos]
    raw = (b & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), dtype=np.int64)
    cont = b >= 0x80
    shift = 7
    k = 1
    while cont.any():
        if k >= MAX_VARLONG_SIZE:
            raise CorruptRecordError("A record holds an over-long variable-length integer.")
        bk = u[pos + k]
        raw |= np.where(cont, (bk & 0x7F).astype(np.uint64) << np.uint64(shift), np.uint64(0))
        size += cont
        cont = cont & (bk >= 0x80)
        shift += 7
        k += 1
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -((raw & np.uint64(1)).astype(np.int64))
    return values, size
