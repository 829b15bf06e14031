"""Request and response headers, and framing (the int32 size prefix).

Request header v0 is api_key, api_version, correlation_id; v1 adds client_id (a classic
nullable string even in flexible versions); v2 adds tagged fields. Response header v0 is
the correlation id; v1 adds tagged fields. Which header a message uses follows from
whether its version is flexible, with two exceptions Kafka makes: ControlledShutdown v0
requests use header v0, and ApiVersions responses always use header v0 (so a client
that does not know the broker's versions can still read the answer).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.protocol import types as t
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import ProtocolDecodeError
from kafpy.protocol.messages import REQUESTS, RESPONSES
from kafpy.protocol.schema import as_byte_view, coalesce

_REQUEST_PREFIX = struct.Struct(">hhi")
_INT32 = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
_CLIENT_ID = t.string_type(compact=False, nullable=True)


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The header in front of every request body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def _is_flexible(messages: Mapping[ApiKey, Any], api_key: int, api_version: int) -> bool:
    message = messages.get(api_key)  # type: ignore[call-overload]
    return message is not None and message.is_flexible(api_version)


def request_header_version(api_key: int, api_version: int) -> int:
    """0 for ControlledShutdown v0, 2 when the request version is flexible, else 1."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if _is_flexible(REQUESTS, api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 when the response version is flexible, else 0; ApiVersions responses always 0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if _is_flexible(RESPONSES, api_key, api_version) else 0


def encode_request_header(header: RequestHeader) -> bytes:
    version = request_header_version(header.api_key, header.api_version)
    out = [_REQUEST_PREFIX.pack(header.api_key, header.api_version, header.correlation_id)]
    if version >= 1:
        _CLIENT_ID.encode(header.client_id, out)
    if version >= 2:
        out.append(t.EMPTY_TAGGED_FIELDS)
    return b"".join(out)


def decode_request_header(buf: bytes | bytearray | memoryview) -> tuple[RequestHeader, int]:
    """The header of a request frame (without its size prefix) and where the body starts.

    An API key we have no schema for still decodes (as header v1), so the server can
    answer or close the connection knowing the correlation id.
    """
    mv = as_byte_view(buf)
    if len(mv) < _REQUEST_PREFIX.size:
        raise ProtocolDecodeError(
            f"cannot decode RequestHeader: {len(mv)} bytes is shorter than the "
            f"{_REQUEST_PREFIX.size}-byte fixed part",
            "RequestHeader",
            None,
            "correlation_id",
        )
    api_key, api_version, correlation_id = _REQUEST_PREFIX.unpack_from(mv, 0)
    pos = _REQUEST_PREFIX.size
    version = request_header_version(api_key, api_version)
    client_id = None
    field = "client_id"
    try:
        if version >= 1:
            client_id, pos = _CLIENT_ID.decode(mv, pos)
        if version >= 2:
            field = "<tagged fields>"
            pos = _skip_tagged_fields(mv, pos)
    except t.DecodeFailure as exc:
        raise ProtocolDecodeError(
            f"cannot decode RequestHeader v{version} (api key {api_key}, version "
            f"{api_version}): field {field}: {exc}",
            "RequestHeader",
            version,
            field,
        ) from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def _skip_tagged_fields(mv: memoryview, pos: int) -> int:
    n, pos = t.read_uvarint(mv, pos)
    for _ in range(n):
        _, pos = t.read_uvarint(mv, pos)
        size, pos = t.read_uvarint(mv, pos)
        pos += size
        if pos > len(mv):
            raise t.DecodeFailure("tagged field runs past the end of the buffer")
    return pos


def encode_request(header: RequestHeader, body_value: Mapping[str, Any]) -> bytes:
    """A whole request frame: int32 size, header, body."""
    message = REQUESTS[ApiKey(header.api_key)]
    head = encode_request_header(header)
    body = message.encode(header.api_version, body_value)
    return b"".join((_INT32.pack(len(head) + len(body)), head, body))


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body_value: Mapping[str, Any]
) -> list[bytes | memoryview]:
    """A whole response frame as parts for `writelines`: size, header, body."""
    parts = RESPONSES[ApiKey(api_key)].encode_parts(api_version, body_value)
    return frame_response(api_key, api_version, correlation_id, parts)


def frame_response(
    api_key: int, api_version: int, correlation_id: int, parts: Sequence[bytes | memoryview]
) -> list[bytes | memoryview]:
    """A response frame for a body already encoded (as parts): size, header, body."""
    flexible_header = response_header_version(api_key, api_version) == 1
    header_size = 5 if flexible_header else 4
    size = header_size + sum(len(p) for p in parts)
    prefix = _SIZE_AND_CORRELATION.pack(size, correlation_id)
    if flexible_header:
        prefix += t.EMPTY_TAGGED_FIELDS
    return coalesce([prefix, *parts])


def decode_response(
    api_key: int, api_version: int, buf: bytes | bytearray | memoryview
) -> tuple[int, dict[str, Any]]:
    """The correlation id and body of a response frame (without its size prefix)."""
    mv = as_byte_view(buf)
    message = RESPONSES[ApiKey(api_key)]
    if len(mv) < 4:
        raise ProtocolDecodeError(
            f"cannot decode ResponseHeader of {message.name}: {len(mv)} bytes is shorter "
            "than the correlation id",
            "ResponseHeader",
            None,
            "correlation_id",
        )
    correlation_id = _INT32.unpack_from(mv, 0)[0]
    pos = 4
    if response_header_version(api_key, api_version) == 1:
        try:
            pos = _skip_tagged_fields(mv, pos)
        except t.DecodeFailure as exc:
            raise ProtocolDecodeError(
                f"cannot decode ResponseHeader v1 of {message.name}: tagged fields: {exc}",
                "ResponseHeader",
                1,
                "<tagged fields>",
            ) from None
    return correlation_id, message.decode(api_version, mv, pos)
