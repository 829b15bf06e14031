"""Message schemas as data, compiled once per version into encoders and decoders.

A message is declared as a table of `Field`s, the way Kafka's message definitions
declare them: a name (snake_case), a type (a primitive name such as "int32" or
"string", an `Array` or a `Struct`), the versions it exists in, the versions it may be
null in, its default, and for tagged fields the tag. `Message` compiles a version the
first time it is used: the fields present in that version, runs of fixed-width fields
packed with one `struct.Struct`, classic or compact encodings depending on whether the
version is flexible, and the tagged-field section at the end of every struct of a
flexible version.

Values are plain dicts (nested structs are dicts, arrays are lists). On encode a missing
key takes the field's default; fields not in the version are ignored. On decode every
field of the version is present; tagged fields absent from the wire take their default;
unknown tagged fields are kept as `{"_unknown_tagged_fields": {tag: bytes}}`.
Records fields decode to memoryviews over the input (no copy) and `encode_parts` keeps
large payloads as separate parts (no copy).

A message on a hot path may carry a fast codec for its common shape (`FastDecode`,
`FastEncode`, e.g. a Produce of one partition): tried first, it answers None for
anything else, and must give exactly what the generic codec gives where it answers.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafpy.protocol import types as t
from kafpy.protocol.errors import ProtocolDecodeError, ProtocolEncodeError
from kafpy.protocol.types import DecodeFailure

MAX_VERSION = 32767
UNKNOWN_TAGGED_FIELDS = "_unknown_tagged_fields"

# Parts at least this large are handed to the socket as they are, not joined.
_PART_COPY_LIMIT = 4096

_MISSING: Any = object()

# (version, buffer, offset) -> (value, end) for the shapes it knows, else None
FastDecode = Callable[[int, memoryview, int], "tuple[dict[str, Any], int] | None"]
# (version, value) -> the encoded body as parts for the shapes it knows, else None
FastEncode = Callable[[int, Mapping[str, Any]], "list[Any] | None"]


def parse_versions(spec: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """Kafka's version range notation: "3+", "0-4", "2", "none" (or None)."""
    if spec is None:
        return None
    if isinstance(spec, tuple):
        return spec
    spec = spec.strip()
    if spec in ("", "none"):
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX_VERSION)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def _in(version: int, rng: tuple[int, int] | None) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


class Struct:
    """A nested structure: an ordered list of fields."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[Field]) -> None:
        self.fields = list(fields)


class Array:
    """An array of a primitive type name or of a `Struct`."""

    __slots__ = ("element",)

    def __init__(self, element: str | Struct) -> None:
        self.element = element


FieldType = str | Array | Struct


class Field:
    """One field of a message or struct, as Kafka's message definitions describe it.

    `versions` and `nullable` use Kafka's range notation ("0+", "3-5", "2").
    `default` is the value a missing key takes on encode and an absent tagged field
    takes on decode; when not given it is None for a field nullable in the version,
    else 0 / False / "" / b"" / [] / a dict of defaults, and None for a tagged struct.
    """

    __slots__ = ("name", "type", "versions", "nullable", "default", "tag", "tagged")

    def __init__(
        self,
        name: str,
        type: FieldType,  # noqa: A002 - the name Kafka's definitions use
        versions: str = "0+",
        *,
        nullable: str | None = None,
        default: Any = _MISSING,
        tag: int | None = None,
        tagged: str | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        self.nullable = parse_versions(nullable)
        self.default = default
        self.tag = tag
        self.tagged = parse_versions(tagged) if tag is not None else None
        if tag is not None and self.tagged is None:
            self.tagged = self.versions

    def in_version(self, version: int) -> bool:
        return _in(version, self.versions)

    def is_tagged(self, version: int) -> bool:
        return self.tag is not None and _in(version, self.tagged)

    def default_for(self, version: int) -> Any:
        """The default value of this field in a version (a fresh object for mutables)."""
        if self.default is not _MISSING:
            d = self.default
            return list(d) if isinstance(d, list) else d
        if _in(version, self.nullable):
            return None
        ft = self.type
        if isinstance(ft, Array):
            return []
        if isinstance(ft, Struct):
            return None if self.is_tagged(version) else {}
        return _PRIMITIVE_DEFAULTS[ft]

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


_PRIMITIVE_DEFAULTS: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "int64": 0,
    "float64": 0.0,
    "bool": False,
    "uuid": None,
    "string": "",
    "bytes": b"",
    "records": None,
}


# ---------------------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------------------


def _fail_path(exc: BaseException, name: str) -> DecodeFailure:
    """Turn any decoding exception into a DecodeFailure whose path starts at `name`."""
    if isinstance(exc, DecodeFailure):
        failure = exc
    elif isinstance(exc, struct.error):
        failure = DecodeFailure("unexpected end of buffer")
    else:
        failure = DecodeFailure(f"{type(exc).__name__}: {exc}")
    failure.path.insert(0, name)
    return failure


def _field_codec(field: Field, version: int, flexible: bool) -> t.Type:
    """The codec of one (untagged or tagged) field's value in a version."""
    nullable = _in(version, field.nullable)
    ft = field.type
    if isinstance(ft, str):
        return t.primitive(ft, flexible, nullable)
    if isinstance(ft, Struct):
        if nullable:
            raise ValueError(f"field {field.name}: nullable structs are not supported")
        return _struct_codec(ft.fields, version, flexible)
    element = ft.element
    if isinstance(element, str):
        return t.array_type(t.primitive(element, flexible, False), flexible, nullable)
    return _struct_array_codec(_struct_codec(element.fields, version, flexible), flexible, nullable)


def _struct_array_codec(elem: t.Type, compact: bool, nullable: bool) -> t.Type:
    elem_encode = elem.encode
    elem_decode = elem.decode
    null_bytes = t.NULL_ARRAY_COMPACT if compact else t.NULL_ARRAY_CLASSIC
    uvarint_bytes = t.uvarint_bytes
    int32_pack = t.INT32.pack
    read_array_length = t.read_array_length

    def encode(value: Any, out: list[Any]) -> None:
        if value is None:
            if not nullable:
                raise ValueError("array cannot be null")
            out.append(null_bytes)
            return
        out.append(uvarint_bytes(len(value) + 1) if compact else int32_pack(len(value)))
        for item in value:
            elem_encode(item, out)

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_array_length(buf, pos, compact, nullable)
        if n < 0:
            return None, pos
        items: list[Any] = []
        append = items.append
        for i in range(n):
            try:
                item, pos = elem_decode(buf, pos)
            except Exception as exc:
                raise _fail_path(exc, f"[{i}]") from None
            append(item)
        return items, pos

    return t.Type("array[struct]", encode, decode)


def _struct_codec(fields: Sequence[Field], version: int, flexible: bool) -> t.Type:
    """Compile one struct for one version into an encode/decode pair."""
    present = [f for f in fields if f.in_version(version)]
    untagged = [f for f in present if not (flexible and f.is_tagged(version))]
    tagged = sorted(
        (f for f in present if flexible and f.is_tagged(version)), key=lambda f: f.tag or 0
    )

    enc_steps: list[Any] = []
    dec_steps: list[Any] = []
    step_names: list[tuple[str, ...]] = []

    i = 0
    while i < len(untagged):
        f = untagged[i]
        codec = _field_codec(f, version, flexible)
        if codec.fmt is not None and isinstance(f.type, str):
            group = [(f, codec)]
            j = i + 1
            while j < len(untagged):
                g = untagged[j]
                gc = _field_codec(g, version, flexible)
                if gc.fmt is None or not isinstance(g.type, str):
                    break
                group.append((g, gc))
                j += 1
            enc, dec = _fixed_group(group, version)
            enc_steps.append(enc)
            dec_steps.append(dec)
            step_names.append(tuple(g.name for g, _ in group))
            i = j
            continue
        enc, dec = _single(f, codec, version)
        enc_steps.append(enc)
        dec_steps.append(dec)
        step_names.append((f.name,))
        i += 1

    if flexible:
        tag_enc, tag_dec = _tagged_section(tagged, version, flexible)
    else:
        tag_enc = tag_dec = None

    enc_steps_t = tuple(enc_steps)
    dec_steps_t = tuple(dec_steps)

    def encode(value: Any, out: list[Any]) -> None:
        for step in enc_steps_t:
            step(value, out)
        if tag_enc is not None:
            tag_enc(value, out)

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        result: dict[str, Any] = {}
        try:
            for step in dec_steps_t:
                pos = step(buf, pos, result)
        except Exception as exc:
            # The failing step is the first one whose fields are not all decoded yet.
            for names in step_names:
                missing = [n for n in names if n not in result]
                if missing:
                    raise _fail_path(exc, missing[0]) from None
            raise _fail_path(exc, "?") from None
        if tag_dec is not None:
            try:
                pos = tag_dec(buf, pos, result)
            except Exception as exc:
                raise _fail_path(exc, "<tagged fields>") from None
        return result, pos

    return t.Type("struct", encode, decode)


def _fixed_group(group: list[tuple[Field, t.Type]], version: int) -> tuple[Any, Any]:
    """One struct.Struct for a run of consecutive fixed-width fields."""
    st = struct.Struct(">" + "".join(c.fmt for _, c in group))  # type: ignore[misc]
    pack = st.pack
    unpack_from = st.unpack_from
    size = st.size
    names = tuple(f.name for f, _ in group)
    defaults = tuple(f.default_for(version) for f, _ in group)
    sizes = tuple(c.size for _, c in group)
    codecs = tuple(c for _, c in group)
    pairs = tuple(zip(names, defaults, strict=True))

    if len(group) == 1:
        name, default = pairs[0]

        def encode(value: Any, out: list[Any]) -> None:
            out.append(pack(value.get(name, default)))

        def decode(buf: memoryview, pos: int, result: dict[str, Any]) -> int:
            if pos + size > len(buf):
                raise DecodeFailure("unexpected end of buffer")
            result[name] = unpack_from(buf, pos)[0]
            return pos + size

        return encode, decode

    def encode_group(value: Any, out: list[Any]) -> None:
        get = value.get
        out.append(pack(*[get(n, d) for n, d in pairs]))

    def decode_group(buf: memoryview, pos: int, result: dict[str, Any]) -> int:
        if pos + size > len(buf):
            # Keep the fields that fit so the caller names the first one that does not.
            for n, s, c in zip(names, sizes, codecs, strict=True):
                if pos + s > len(buf):  # type: ignore[operator]
                    break
                result[n], pos = c.decode(buf, pos)
            raise DecodeFailure("unexpected end of buffer")
        result.update(zip(names, unpack_from(buf, pos), strict=True))
        return pos + size

    return encode_group, decode_group


def _single(field: Field, codec: t.Type, version: int) -> tuple[Any, Any]:
    name = field.name
    default = field.default_for(version)
    enc = codec.encode
    dec = codec.decode

    def encode(value: Any, out: list[Any]) -> None:
        enc(value.get(name, default), out)

    def decode(buf: memoryview, pos: int, result: dict[str, Any]) -> int:
        result[name], pos = dec(buf, pos)
        return pos

    return encode, decode


def _tagged_section(tagged: list[Field], version: int, flexible: bool) -> tuple[Any, Any]:
    """Encoder/decoder of the tagged-field section that ends a struct of a flexible version."""
    known: list[tuple[int, str, Any, t.Type, bool]] = []
    for f in tagged:
        codec = _field_codec(f, version, flexible)
        known.append(
            (f.tag or 0, f.name, f.default_for(version), codec, isinstance(f.type, Struct))
        )
    by_tag = {tag: (name, codec) for tag, name, _, codec, _ in known}
    uvarint_bytes = t.uvarint_bytes
    read_uvarint = t.read_uvarint
    empty = t.EMPTY_TAGGED_FIELDS

    def encode(value: Any, out: list[Any]) -> None:
        unknown = (
            value.get(UNKNOWN_TAGGED_FIELDS) if known or UNKNOWN_TAGGED_FIELDS in value else None
        )
        if not known and not unknown:
            out.append(empty)
            return
        entries: list[tuple[int, bytes]] = []
        for tag, name, default, codec, is_struct in known:
            v = value.get(name, default)
            # Kafka writes a tagged field only when it differs from its default.
            if (v is None) if is_struct else (v == default):
                continue
            parts: list[Any] = []
            codec.encode(v, parts)
            entries.append((tag, b"".join(parts)))
        if unknown:
            entries.extend((int(k), bytes(v)) for k, v in unknown.items())
            entries.sort(key=lambda e: e[0])
        out.append(uvarint_bytes(len(entries)))
        for tag, data in entries:
            out.append(uvarint_bytes(tag))
            out.append(uvarint_bytes(len(data)))
            out.append(data)

    def decode(buf: memoryview, pos: int, result: dict[str, Any]) -> int:
        for _, name, default, _, _ in known:
            result[name] = list(default) if isinstance(default, list) else default
        n, pos = read_uvarint(buf, pos)
        for _ in range(n):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise DecodeFailure(
                    f"tagged field {tag} of {size} bytes runs past the end of the buffer"
                )
            entry = by_tag.get(tag)
            if entry is None:
                result.setdefault(UNKNOWN_TAGGED_FIELDS, {})[tag] = bytes(buf[pos:end])
            else:
                name, codec = entry
                try:
                    result[name], _ = codec.decode(buf[:end], pos)
                except Exception as exc:
                    raise _fail_path(exc, name) from None
            pos = end
        return pos

    return encode, decode


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------


class _Compiled:
    __slots__ = ("encode", "decode")

    def __init__(self, codec: t.Type) -> None:
        self.encode = codec.encode
        self.decode = codec.decode


def as_byte_view(buf: bytes | bytearray | memoryview) -> memoryview:
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")
    elif mv.format != "B":
        mv = mv.cast("B")
    return mv


class Message:
    """One request or response body of one API, in all its versions.

    `encode(version, value) -> bytes`, `encode_parts(version, value)` (large record
    payloads kept as separate parts), `decode(version, buf, offset=0) -> dict`.
    Decoding raises ProtocolDecodeError naming the message, version and field for any
    malformed input; encoding raises ProtocolEncodeError for values that do not fit.
    `fast_decode` / `fast_encode`: a fast codec for the message's common shape (see the
    module docstring).
    """

    def __init__(
        self,
        api_key: int,
        name: str,
        kind: str = "request",
        valid_versions: tuple[int, int] = (0, 0),
        flexible_versions: int | None = None,
        fields: Sequence[Field] = (),
        *,
        fast_decode: FastDecode | None = None,
        fast_encode: FastEncode | None = None,
    ) -> None:
        if kind not in ("request", "response"):
            raise ValueError(f"message kind must be 'request' or 'response', not {kind!r}")
        self.api_key = api_key
        self.name = name
        self.kind = kind
        self.valid_versions = valid_versions
        self.flexible_versions = flexible_versions
        self.fields = list(fields)
        self.fast_decode = fast_decode
        self.fast_encode = fast_encode
        self._compiled: dict[int, _Compiled] = {}

    def __repr__(self) -> str:
        return f"Message({self.name}, versions={self.valid_versions})"

    def is_flexible(self, version: int) -> bool:
        """Whether `version` uses compact encodings and tagged fields."""
        return self.flexible_versions is not None and version >= self.flexible_versions

    def has_version(self, version: int) -> bool:
        return self.valid_versions[0] <= version <= self.valid_versions[1]

    def compiled(self, version: int) -> _Compiled:
        c = self._compiled.get(version)
        if c is None:
            if not self.has_version(version):
                raise ValueError(
                    f"{self.name} has no version {version}: valid versions are "
                    f"{self.valid_versions[0]} to {self.valid_versions[1]}"
                )
            c = _Compiled(_struct_codec(self.fields, version, self.is_flexible(version)))
            self._compiled[version] = c
        return c

    def _encode_into(self, version: int, value: Mapping[str, Any]) -> list[Any]:
        if self.fast_encode is not None:
            parts = self.fast_encode(version, value)
            if parts is not None:
                return parts
        try:
            c = self.compiled(version)
        except ValueError as exc:
            raise ProtocolEncodeError(str(exc)) from None
        out: list[Any] = []
        try:
            c.encode(value, out)
        except (struct.error, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise ProtocolEncodeError(f"cannot encode {self.name} v{version}: {exc}") from exc
        return out

    def encode(self, version: int, value: Mapping[str, Any]) -> bytes:
        """The body of this message in `version` (no header, no size prefix)."""
        return b"".join(self._encode_into(version, value))

    def encode_parts(self, version: int, value: Mapping[str, Any]) -> list[bytes | memoryview]:
        """Same bytes as `encode`, as parts: small pieces joined, large payloads as they are."""
        return coalesce(self._encode_into(version, value))

    def decode(
        self, version: int, buf: bytes | bytearray | memoryview, offset: int = 0
    ) -> dict[str, Any]:
        """Decode a body of `version` starting at `offset` (trailing bytes are ignored)."""
        return self.decode_from(version, buf, offset)[0]

    def decode_from(
        self, version: int, buf: bytes | bytearray | memoryview, offset: int = 0
    ) -> tuple[dict[str, Any], int]:
        """Like `decode`, also returning the offset just past the body."""
        try:
            c = self.compiled(version)
        except ValueError as exc:
            raise ProtocolDecodeError(str(exc), self.name, version) from None
        mv = as_byte_view(buf)
        if self.fast_decode is not None:
            decoded = self.fast_decode(version, mv, offset)
            if decoded is not None:
                return decoded
        try:
            return c.decode(mv, offset)
        except Exception as exc:
            failure = _fail_path(exc, "")
            path = _format_path(failure.path[1:])
            raise ProtocolDecodeError(
                f"cannot decode {self.name} v{version}: field {path or '?'}: {failure}",
                self.name,
                version,
                path or None,
            ) from None


def _format_path(path: list[str]) -> str:
    text = ""
    for p in path:
        if p.startswith("["):
            text += p
        else:
            text += ("." if text else "") + p
    return text


def coalesce(parts: list[Any]) -> list[bytes | memoryview]:
    """Join runs of small parts; keep parts of at least 4 KiB as they are (no copy)."""
    result: list[bytes | memoryview] = []
    run: list[Any] = []
    for p in parts:
        if len(p) >= _PART_COPY_LIMIT:
            if run:
                result.append(b"".join(run))
                run = []
            result.append(p)
        else:
            run.append(p)
    if run:
        result.append(b"".join(run))
    return result
