"""Request headers v0-v2, response headers v0-v1 and whole frames, against kafka-python."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.api_header import RequestHeader as RefRequestHeader
from kafka.protocol.api_header import ResponseHeader as RefResponseHeader

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import ProtocolDecodeError
from kafpy.protocol.headers import (
    RequestHeader,
    decode_request_header,
    decode_response,
    encode_request,
    encode_request_header,
    encode_response,
    request_header_version,
    response_header_version,
)
from kafpy.protocol.messages import REQUESTS, RESPONSES
from tests.unit.protocol.reference import to_reference

CLIENT_IDS = st.one_of(st.none(), st.text(max_size=20))
INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)


def test_header_versions() -> None:
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert request_header_version(ApiKey.METADATA, 8) == 1
    assert request_header_version(ApiKey.METADATA, 9) == 2
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert request_header_version(ApiKey.API_VERSIONS, 99) == 2  # future versions stay flexible
    assert response_header_version(ApiKey.METADATA, 8) == 0
    assert response_header_version(ApiKey.METADATA, 9) == 1
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0  # always v0


@settings(max_examples=60, deadline=None, database=None)
@given(correlation_id=INT32, client_id=CLIENT_IDS, flexible=st.booleans())
def test_request_header_v1_v2_like_kafka_python(
    correlation_id: int, client_id: str | None, flexible: bool
) -> None:
    api_key, version = (ApiKey.METADATA, 9) if flexible else (ApiKey.METADATA, 8)
    header = RequestHeader(api_key, version, correlation_id, client_id)
    ref = RefRequestHeader(
        request_api_key=int(api_key),
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    ours = encode_request_header(header)
    assert ours == bytes(ref.encode(flexible=flexible))
    assert decode_request_header(ours + b"body") == (header, len(ours))


def test_request_header_v0_literal() -> None:
    header = RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 0, 258, "ignored")
    assert encode_request_header(header) == b"\x00\x07\x00\x00\x00\x00\x01\x02"
    assert decode_request_header(b"\x00\x07\x00\x00\x00\x00\x01\x02\x00\x00\x00\x01") == (
        RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 0, 258, None),
        8,
    )


def test_request_header_v2_skips_tagged_fields() -> None:
    buf = b"\x00\x03\x00\x09\x00\x00\x00\x05\x00\x01c\x01\x07\x02zzBODY"
    header, offset = decode_request_header(buf)
    assert header == RequestHeader(3, 9, 5, "c")
    assert buf[offset:] == b"BODY"


def test_unknown_api_key_still_decodes() -> None:
    buf = b"\x03\xe7\x00\x02\x00\x00\x00\x09\x00\x02abjunk"
    header, offset = decode_request_header(buf)
    assert header == RequestHeader(999, 2, 9, "ab")
    assert offset == 12


@pytest.mark.parametrize(
    "buf",
    [
        b"",
        b"\x00\x03\x00",
        b"\x00\x03\x00\x01\x00\x00\x00\x01\x00",
        b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x05ab",
        b"\x00\x03\x00\x01\x00\x00\x00\x01\xff\xfe",
        b"\x00\x03\x00\x09\x00\x00\x00\x01\xff\xff\x01\x01\x09",
    ],
)
def test_malformed_request_headers(buf: bytes) -> None:
    with pytest.raises(ProtocolDecodeError, match="RequestHeader"):
        decode_request_header(buf)


@settings(max_examples=40, deadline=None, database=None)
@given(correlation_id=INT32, flexible=st.booleans())
def test_response_header_v0_v1_like_kafka_python(correlation_id: int, flexible: bool) -> None:
    version = 9 if flexible else 8
    frame = b"".join(encode_response(ApiKey.METADATA, version, correlation_id, {}))
    head = bytes(RefResponseHeader(correlation_id=correlation_id).encode(flexible=flexible))
    assert frame[4 : 4 + len(head)] == head
    assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4


@pytest.mark.parametrize("version", [0, 3, 8, 9, 12])
def test_request_frames_like_kafka_python(version: int) -> None:
    body = {"topics": [{"name": "t"}], "allow_auto_topic_creation": False}
    ref = to_reference(REQUESTS[ApiKey.METADATA], version, body)
    ref.with_header(correlation_id=42, client_id="kafpy")
    expected = bytes(ref.encode(header=True, framed=True))
    assert encode_request(RequestHeader(ApiKey.METADATA, version, 42, "kafpy"), body) == expected


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (ApiKey.API_VERSIONS, 0),
        (ApiKey.API_VERSIONS, 3),
        (ApiKey.METADATA, 5),
        (ApiKey.METADATA, 12),
        (ApiKey.FETCH, 11),
        (ApiKey.FETCH, 12),
    ],
)
def test_response_frames_like_kafka_python(api_key: ApiKey, version: int) -> None:
    body = {"throttle_time_ms": 3}
    ref = to_reference(RESPONSES[api_key], version, body)
    ref.with_header(correlation_id=77)
    expected = bytes(ref.encode(header=True, framed=True))
    frame = b"".join(encode_response(api_key, version, 77, body))
    assert frame == expected
    correlation_id, decoded = decode_response(api_key, version, frame[4:])
    assert correlation_id == 77
    assert decoded.get("throttle_time_ms", 3) == 3  # absent from versions without it


def test_response_frame_keeps_large_records_as_a_part() -> None:
    payload = bytes(50000)
    body = {
        "responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": payload}]}]
    }
    parts = encode_response(ApiKey.FETCH, 11, 1, body)
    assert any(p is payload for p in parts)
    frame = b"".join(parts)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    _, decoded = decode_response(ApiKey.FETCH, 11, frame[4:])
    assert decoded["responses"][0]["partitions"][0]["records"] == payload


def test_api_versions_error_fallback_body_is_v0() -> None:
    # Kafka answers an ApiVersions request of an unknown version with a v0 body, header v0.
    frame = b"".join(
        encode_response(
            ApiKey.API_VERSIONS,
            0,
            5,
            {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]},
        )
    )
    assert frame == (
        b"\x00\x00\x00\x10\x00\x00\x00\x05\x00\x23\x00\x00\x00\x01\x00\x12\x00\x00\x00\x02"
    )


def test_truncated_response_is_a_decode_error() -> None:
    with pytest.raises(ProtocolDecodeError, match="ResponseHeader"):
        decode_response(ApiKey.METADATA, 1, b"\x00\x00")
    with pytest.raises(ProtocolDecodeError, match="ResponseHeader v1"):
        decode_response(ApiKey.METADATA, 9, b"\x00\x00\x00\x01")
    with pytest.raises(ProtocolDecodeError, match="MetadataResponse v1: field brokers"):
        decode_response(ApiKey.METADATA, 1, b"\x00\x00\x00\x01\x00\x00")


@settings(max_examples=300, deadline=None, database=None)
@given(buf=st.binary(max_size=40))
def test_random_request_headers_decode_or_raise_protocol_decode_error(buf: bytes) -> None:
    try:
        header, offset = decode_request_header(buf)
    except ProtocolDecodeError:
        return
    assert 8 <= offset <= len(buf)
    assert isinstance(header, RequestHeader)
