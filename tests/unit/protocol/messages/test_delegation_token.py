"""The delegation token messages against literal bytes (kafka-python has no schema for
them): the flexible version 2 and the non-flexible 0/1."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import API_SCHEMAS, REQUESTS, RESPONSES

CREATE = {
    "renewers": [{"principal_type": "User", "principal_name": "bob"}],
    "max_lifetime_ms": 1000,
}


def test_create_request_bytes() -> None:
    request = REQUESTS[ApiKey.CREATE_DELEGATION_TOKEN]
    v1 = b"\x00\x00\x00\x01" + b"\x00\x04User" + b"\x00\x03bob" + (1000).to_bytes(8, "big")
    v2 = b"\x02" + b"\x05User" + b"\x04bob" + b"\x00" + (1000).to_bytes(8, "big") + b"\x00"
    assert request.encode(1, CREATE) == v1 and request.encode(2, CREATE) == v2
    assert request.decode(2, v2) == CREATE and request.decode(0, v1) == CREATE


def test_describe_request_null_owners() -> None:
    request = REQUESTS[ApiKey.DESCRIBE_DELEGATION_TOKEN]
    assert request.encode(0, {"owners": None}) == b"\xff\xff\xff\xff"
    assert request.encode(2, {"owners": None}) == b"\x00\x00"
    assert request.decode(2, b"\x00\x00") == {"owners": None}


def test_renew_and_expire_responses() -> None:
    for key in (ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN):
        body = {"error_code": 62, "expiry_timestamp_ms": -1, "throttle_time_ms": 5}
        v1 = b"\x00\x3e" + b"\xff" * 8 + b"\x00\x00\x00\x05"
        assert RESPONSES[key].encode(1, body) == v1
        assert RESPONSES[key].encode(2, body) == v1 + b"\x00"


def test_describe_response_round_trip() -> None:
    token = {
        "principal_type": "User", "principal_name": "alice", "issue_timestamp": 1,
        "expiry_timestamp": 2, "max_timestamp": 3, "token_id": "t", "hmac": b"\x01\x02",
        "renewers": [{"principal_type": "User", "principal_name": "bob"}],
    }  # fmt: skip
    body = {"error_code": 0, "tokens": [token], "throttle_time_ms": 0}
    response = RESPONSES[ApiKey.DESCRIBE_DELEGATION_TOKEN]
    for version in (0, 1, 2):
        assert response.decode(version, response.encode(version, body)) == body


def test_versions_are_kafka_28s() -> None:
    for key in (ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
                ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN):  # fmt: skip
        assert API_SCHEMAS[key].versions == (0, 2)
