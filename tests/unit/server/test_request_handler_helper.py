"""Encoding a handler's answer and which requests the client quotas leave alone."""

from __future__ import annotations

from typing import Any

from kafpy.network.request_channel import Request
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response
from kafpy.server.request_handler_helper import encode, is_quota_exempt


def request(api_key: ApiKey, body: dict[str, Any], version: int = 4) -> Request:
    return Request(RequestHeader(api_key, version, 9, "c"), body, memoryview(b""), 0, 0,
                   "conn-0", ("127.0.0.1", 1), "PLAINTEXT")  # fmt: skip


def test_replicas_fetches_and_controller_requests_are_exempt() -> None:
    assert is_quota_exempt(request(ApiKey.FETCH, {"replica_id": 2}))
    assert not is_quota_exempt(request(ApiKey.FETCH, {"replica_id": -1}))
    assert is_quota_exempt(request(ApiKey.LEADER_AND_ISR, {}))
    assert is_quota_exempt(request(ApiKey.API_VERSIONS, {}))
    assert not is_quota_exempt(request(ApiKey.PRODUCE, {}))


def test_encode_frames_a_body_or_encoded_bytes_and_nothing_for_none() -> None:
    r = request(ApiKey.HEARTBEAT, {}, version=1)
    assert encode(r, None) is None
    parts = encode(r, {"throttle_time_ms": 5, "error_code": 27})
    assert parts is not None
    frame = b"".join(bytes(p) for p in parts)
    assert decode_response(ApiKey.HEARTBEAT, 1, frame[4:]) == (
        9,
        {"throttle_time_ms": 5, "error_code": 27},
    )
    body = frame[4 + 4 :]  # after the size and the correlation id
    again = encode(r, bytes(body))
    assert again is not None and b"".join(bytes(p) for p in again) == frame
