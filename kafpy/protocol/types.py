"""Primitive codecs of the Kafka wire format.

Each type is a `Type` that knows how to append its encoding to a list of parts and how
to read itself from a buffer at a position. Non-flexible versions use the classic
encodings (int16-length strings, int32-length bytes and arrays); flexible versions use
the compact ones (unsigned-varint length + 1, 0 meaning null) and end every struct with
tagged fields. Decoders raise `DecodeFailure` with a reason; the schema layer adds the
message, version and field path and turns it into a `ProtocolDecodeError`.

Fixed-width types carry a `struct` format character so the schema compiler can pack a
run of consecutive fixed fields with one `struct.Struct`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from kafpy.records import varint

# an encoder appends the encoded chunks (bytes-like) of a value to a list, joined once at the end
Encoder = Callable[[Any, list[Any]], None]
Decoder = Callable[[memoryview, int], tuple[Any, int]]

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


class DecodeFailure(Exception):
    """Raised by decoders for bytes that do not follow the format; carries a reason.

    `path` collects the field names and array indexes from the failing value outwards.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.path: list[str] = []


# ---------------------------------------------------------------------------------------
# Varints: the codec of records/varint.py, its errors turned into DecodeFailure
# ---------------------------------------------------------------------------------------


def _checked(
    decode: Callable[[memoryview, int], tuple[int, int]], what: str, max_size: int
) -> Callable[[memoryview, int], tuple[int, int]]:
    """`records.varint`'s decoder with its errors as the DecodeFailure the schema layer names."""

    def read(buf: memoryview, pos: int) -> tuple[int, int]:
        try:
            return decode(buf, pos)
        except IndexError:
            raise DecodeFailure(f"unexpected end of buffer reading {what}") from None
        except ValueError:
            raise DecodeFailure(f"{what} longer than {max_size} bytes") from None

    return read


_decode_unsigned_varint = varint.decode_unsigned_varint


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (32 bits): every compact length and tag."""
    try:
        b = buf[pos]
        if b < 0x80:  # nearly every length: answered without a second call
            return b, pos + 1
        return _decode_unsigned_varint(buf, pos)
    except IndexError:
        raise DecodeFailure("unexpected end of buffer reading an unsigned varint") from None
    except ValueError:
        raise DecodeFailure(f"unsigned varint longer than {varint.MAX_VARINT_SIZE} bytes") from None


uvarint_bytes = varint.encode_unsigned_varint
varint_bytes = varint.encode_varint
varlong_bytes = varint.encode_varlong
read_varint = _checked(varint.decode_varint, "a varint", varint.MAX_VARINT_SIZE)
read_varlong = _checked(varint.decode_varlong, "a varlong", varint.MAX_VARLONG_SIZE)


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------


class Type:
    """One wire type in one encoding (classic or compact, nullable or not)."""

    __slots__ = ("name", "fmt", "size", "encode", "decode")

    def __init__(
        self,
        name: str,
        encode: Encoder,
        decode: Decoder,
        fmt: str | None = None,
        size: int | None = None,
    ) -> None:
        self.name = name
        self.encode = encode
        self.decode = decode
        self.fmt = fmt  # struct format char when fixed-width and packable
        self.size = size  # bytes when fixed-width

    def __repr__(self) -> str:
        return f"Type({self.name})"


def _fixed(name: str, st: struct.Struct) -> Type:
    pack = st.pack
    unpack_from = st.unpack_from
    size = st.size

    def encode(value: Any, out: list[Any]) -> None:
        out.append(pack(value))

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise DecodeFailure(f"unexpected end of buffer reading {name}")
        return unpack_from(buf, pos)[0], pos + size

    return Type(name, encode, decode, fmt=st.format[-1], size=size)


def _encode_bool(value: Any, out: list[Any]) -> None:
    out.append(b"\x01" if value else b"\x00")


def _decode_bool(buf: memoryview, pos: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise DecodeFailure("unexpected end of buffer reading bool")
    return buf[pos] != 0, pos + 1


def _encode_uuid(value: Any, out: list[Any]) -> None:
    if value is None:
        out.append(ZERO_UUID.bytes)
    elif isinstance(value, uuid.UUID):
        out.append(value.bytes)
    elif isinstance(value, (bytes, bytearray)) and len(value) == 16:
        out.append(bytes(value))
    else:
        out.append(uuid.UUID(str(value)).bytes)


def _decode_uuid(buf: memoryview, pos: int) -> tuple[Any, int]:
    end = pos + 16
    if end > len(buf):
        raise DecodeFailure("unexpected end of buffer reading uuid")
    value = uuid.UUID(bytes=bytes(buf[pos:end]))
    # The all-zero id means "no id" in Kafka; it is None in our values.
    return (None if value == ZERO_UUID else value), end


INT8_T = _fixed("int8", INT8)
INT16_T = _fixed("int16", INT16)
UINT16_T = _fixed("uint16", UINT16)
INT32_T = _fixed("int32", INT32)
INT64_T = _fixed("int64", INT64)
FLOAT64_T = _fixed("float64", FLOAT64)
BOOL_T = Type("bool", _encode_bool, _decode_bool, fmt="?", size=1)
UUID_T = Type("uuid", _encode_uuid, _decode_uuid, size=16)


def _varint_type() -> Type:
    def encode(value: Any, out: list[Any]) -> None:
        out.append(varint_bytes(value))

    return Type("varint", encode, read_varint)


def _varlong_type() -> Type:
    def encode(value: Any, out: list[Any]) -> None:
        out.append(varlong_bytes(value))

    return Type("varlong", encode, read_varlong)


def _uvarint_type() -> Type:
    def encode(value: Any, out: list[Any]) -> None:
        out.append(uvarint_bytes(value))

    return Type("unsigned_varint", encode, read_uvarint)


VARINT_T = _varint_type()
VARLONG_T = _varlong_type()
UVARINT_T = _uvarint_type()

FIXED_TYPES: dict[str, Type] = {
    "int8": INT8_T,
    "int16": INT16_T,
    "uint16": UINT16_T,
    "int32": INT32_T,
    "int64": INT64_T,
    "float64": FLOAT64_T,
    "bool": BOOL_T,
    "uuid": UUID_T,
}


# ---------------------------------------------------------------------------------------
# Length-prefixed types: strings, bytes, records
# ---------------------------------------------------------------------------------------


def _read_length(buf: memoryview, pos: int, compact: bool, wide: bool) -> tuple[int, int]:
    """Length of a string (int16), bytes (int32) or compact field (uvarint - 1); -1 = null."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    st = INT32 if wide else INT16
    if pos + st.size > len(buf):
        raise DecodeFailure("unexpected end of buffer reading a length")
    return st.unpack_from(buf, pos)[0], pos + st.size


def _take(buf: memoryview, pos: int, n: int, nullable: bool, what: str) -> int:
    """Check a decoded length; return the end position of the payload (-1 for null)."""
    if n < 0:
        if n == -1 and nullable:
            return -1
        if n == -1:
            raise DecodeFailure(f"non-nullable {what} is null")
        raise DecodeFailure(f"negative {what} length {n}")
    end = pos + n
    if end > len(buf):
        raise DecodeFailure(
            f"{what} length {n} runs past the end of the buffer ({len(buf) - pos} bytes left)"
        )
    return end


def string_type(compact: bool, nullable: bool) -> Type:
    """A UTF-8 string: int16 length (classic) or uvarint length + 1 (compact)."""
    name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "string"

    def encode(value: Any, out: list[Any]) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{name} cannot be null")
            out.append(b"\x00" if compact else b"\xff\xff")
            return
        data = value.encode("utf-8")
        if compact:
            out.append(uvarint_bytes(len(data) + 1))
        else:
            if len(data) > 32767:
                raise ValueError(f"string of {len(data)} bytes is longer than 32767 bytes")
            out.append(INT16.pack(len(data)))
        out.append(data)

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = _read_length(buf, pos, compact, False)
        end = _take(buf, pos, n, nullable, "string")
        if end < 0:
            return None, pos
        try:
            return str(buf[pos:end], "utf-8"), end
        except UnicodeDecodeError as exc:
            raise DecodeFailure(f"string is not valid UTF-8 ({exc.reason})") from None

    return Type(name, encode, decode)


def _as_bytes_like(value: Any) -> Any:
    if isinstance(value, memoryview):
        return value if value.format == "B" and value.ndim == 1 else value.cast("B")
    if isinstance(value, (bytes, bytearray)):
        return value
    buffer = getattr(value, "buffer", None)  # MemoryRecords and friends
    if buffer is not None:
        return _as_bytes_like(buffer() if callable(buffer) else buffer)
    raise TypeError(
        f"expected bytes, bytearray, memoryview or MemoryRecords, not {type(value).__name__}"
    )


def bytes_type(compact: bool, nullable: bool, records: bool = False) -> Type:
    """Bytes: int32 length (classic) or uvarint length + 1 (compact).

    Plain bytes decode to `bytes`; records decode to a memoryview over the input buffer
    (no copy) and encode their payload as a separate part (no copy either).
    """
    base = "records" if records else "bytes"
    name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + base

    def encode(value: Any, out: list[Any]) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{name} cannot be null")
            out.append(b"\x00" if compact else b"\xff\xff\xff\xff")
            return
        data = _as_bytes_like(value)
        n = len(data)
        out.append(uvarint_bytes(n + 1) if compact else INT32.pack(n))
        if n:
            out.append(data)

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = _read_length(buf, pos, compact, True)
        end = _take(buf, pos, n, nullable, base)
        if end < 0:
            return None, pos
        return (buf[pos:end] if records else bytes(buf[pos:end])), end

    return Type(name, encode, decode)


def primitive(type_name: str, compact: bool, nullable: bool) -> Type:
    """The codec for a primitive type name of Kafka's message definitions."""
    if type_name in FIXED_TYPES:
        return FIXED_TYPES[type_name]
    if type_name == "string":
        return string_type(compact, nullable)
    if type_name == "bytes":
        return bytes_type(compact, nullable)
    if type_name == "records":
        return bytes_type(compact, nullable, records=True)
    raise ValueError(f"unknown primitive type {type_name!r}")


# ---------------------------------------------------------------------------------------
# Arrays and tagged fields
# ---------------------------------------------------------------------------------------


def read_array_length(buf: memoryview, pos: int, compact: bool, nullable: bool) -> tuple[int, int]:
    """An array's element count (-1 = null), checked against the bytes left."""
    n, pos = _read_length(buf, pos, compact, True)
    if n < 0:
        if n == -1 and nullable:
            return -1, pos
        if n == -1:
            raise DecodeFailure("non-nullable array is null")
        raise DecodeFailure(f"negative array length {n}")
    # Every element takes at least one byte, so a count beyond the bytes left is a lie
    # (and would otherwise make us allocate without bound).
    if n > len(buf) - pos:
        raise DecodeFailure(f"array length {n} is larger than the bytes left ({len(buf) - pos})")
    return n, pos


NULL_ARRAY_CLASSIC = b"\xff\xff\xff\xff"
NULL_ARRAY_COMPACT = b"\x00"
EMPTY_TAGGED_FIELDS = b"\x00"


def array_type(element: Type, compact: bool, nullable: bool) -> Type:
    """An array of a primitive element type; fixed-width elements use one struct call."""
    name = f"{'compact_' if compact else ''}{'nullable_' if nullable else ''}array[{element.name}]"
    null_bytes = NULL_ARRAY_COMPACT if compact else NULL_ARRAY_CLASSIC
    fmt = element.fmt
    size = element.size
    elem_encode = element.encode
    elem_decode = element.decode
    structs: dict[int, struct.Struct] = {}

    def packer(n: int) -> struct.Struct:
        st = structs.get(n)
        if st is None:
            st = struct.Struct(f">{n}{fmt}")
            if n <= 64:
                structs[n] = st
        return st

    def encode(value: Any, out: list[Any]) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{name} cannot be null")
            out.append(null_bytes)
            return
        n = len(value)
        out.append(uvarint_bytes(n + 1) if compact else INT32.pack(n))
        if fmt is not None:
            if n:
                out.append(packer(n).pack(*value))
        else:
            for item in value:
                elem_encode(item, out)

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_array_length(buf, pos, compact, nullable)
        if n < 0:
            return None, pos
        if fmt is not None:
            end = pos + n * size  # type: ignore[operator]
            if end > len(buf):
                raise DecodeFailure(f"array of {n} {element.name} runs past the end of the buffer")
            return list(packer(n).unpack_from(buf, pos)), end
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            item, pos = elem_decode(buf, pos)
            append(item)
        return items, pos

    return Type(name, encode, decode)
