"""The delegation token APIs (KIP-48): CreateDelegationToken (key 38), RenewDelegationToken
(39), ExpireDelegationToken (40) and DescribeDelegationToken (41), versions 0 to 2 as in
Kafka 2.8 (version 1 is version 0 answered before throttling, version 2 is flexible).

A token is an id and its HMAC (the password a client authenticates with over SCRAM),
owned by the principal that created it and renewable by the principals it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

_VERSIONS = (0, 2)
_FLEXIBLE = 2
ERROR_TIMESTAMP = -1
"""The timestamps of a failed answer (Kafka's DelegationTokenManager.ErrorTimestamp)."""


def _principal() -> list[Field]:
    return [Field("principal_type", "string"), Field("principal_name", "string")]


CREATE_DELEGATION_TOKEN_REQUEST = Message(
    ApiKey.CREATE_DELEGATION_TOKEN,
    "CreateDelegationTokenRequest",
    "request",
    _VERSIONS,
    _FLEXIBLE,
    [
        Field("renewers", Array(Struct(_principal()))),
        Field("max_lifetime_ms", "int64", default=-1),
    ],
)

CREATE_DELEGATION_TOKEN_RESPONSE = Message(
    ApiKey.CREATE_DELEGATION_TOKEN,
    "CreateDelegationTokenResponse",
    "response",
    _VERSIONS,
    _FLEXIBLE,
    [
        Field("error_code", "int16"),
        *_principal(),
        Field("issue_timestamp_ms", "int64", default=ERROR_TIMESTAMP),
        Field("expiry_timestamp_ms", "int64", default=ERROR_TIMESTAMP),
        Field("max_timestamp_ms", "int64", default=ERROR_TIMESTAMP),
        Field("token_id", "string"),
        Field("hmac", "bytes"),
        Field("throttle_time_ms", "int32"),
    ],
)

RENEW_DELEGATION_TOKEN_REQUEST = Message(
    ApiKey.RENEW_DELEGATION_TOKEN,
    "RenewDelegationTokenRequest",
    "request",
    _VERSIONS,
    _FLEXIBLE,
    [
        Field("hmac", "bytes"),
        Field("renew_period_ms", "int64"),
    ],
)

RENEW_DELEGATION_TOKEN_RESPONSE = Message(
    ApiKey.RENEW_DELEGATION_TOKEN,
    "RenewDelegationTokenResponse",
    "response",
    _VERSIONS,
    _FLEXIBLE,
    [
        Field("error_code", "int16"),
        Field("expiry_timestamp_ms", "int64", default=ERROR_TIMESTAMP),
        Field("throttle_time_ms", "int32"),
    ],
)

EXPIRE_DELEGATION_TOKEN_REQUEST = Message(
    ApiKey.EXPIRE_DELEGATION_TOKEN,
    "ExpireDelegationTokenRequest",
    "request",
    _VERSIONS,
    _FLEXIBLE,
    [
        Field("hmac", "bytes"),
        Field("expiry_time_period_ms", "int64"),
    ],
)

EXPIRE_DELEGATION_TOKEN_RESPONSE = Message(
    ApiKey.EXPIRE_DELEGATION_TOKEN,
    "ExpireDelegationTokenResponse",
    "response",
    _VERSIONS,
    _FLEXIBLE,
    [
        Field("error_code", "int16"),
        Field("expiry_timestamp_ms", "int64", default=ERROR_TIMESTAMP),
        Field("throttle_time_ms", "int32"),
    ],
)

DESCRIBE_DELEGATION_TOKEN_REQUEST = Message(
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
    "DescribeDelegationTokenRequest",
    "request",
    _VERSIONS,
    _FLEXIBLE,
    [
        # null describes every token the requester may see
        Field("owners", Array(Struct(_principal())), nullable="0+", default=None),
    ],
)

DESCRIBE_DELEGATION_TOKEN_RESPONSE = Message(
    ApiKey.DESCRIBE_DELEGATION_TOKEN, "DescribeDelegationTokenResponse", "response", _VERSIONS, _FLEXIBLE,
    [
        Field("error_code", "int16"),
        Field("tokens", Array(Struct([
            *_principal(),
            Field("issue_timestamp", "int64"),
            Field("expiry_timestamp", "int64"),
            Field("max_timestamp", "int64"),
            Field("token_id", "string"),
            Field("hmac", "bytes"),
            Field("renewers", Array(Struct(_principal()))),
        ]))),
        Field("throttle_time_ms", "int32"),
    ],
)  # fmt: skip


def describe_error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """DescribeDelegationToken failing with `code`: no tokens."""
    return {"throttle_time_ms": 0, "error_code": code, "tokens": []}


# Create, Renew and Expire fail with their timestamps -1 (the schema defaults) and no token
CREATE_DELEGATION_TOKEN_API = ApiSchema(
    CREATE_DELEGATION_TOKEN_REQUEST, CREATE_DELEGATION_TOKEN_RESPONSE,
    versions=_VERSIONS, error_response=top_level_error,
)  # fmt: skip
RENEW_DELEGATION_TOKEN_API = ApiSchema(
    RENEW_DELEGATION_TOKEN_REQUEST, RENEW_DELEGATION_TOKEN_RESPONSE,
    versions=_VERSIONS, error_response=top_level_error,
)  # fmt: skip
EXPIRE_DELEGATION_TOKEN_API = ApiSchema(
    EXPIRE_DELEGATION_TOKEN_REQUEST, EXPIRE_DELEGATION_TOKEN_RESPONSE,
    versions=_VERSIONS, error_response=top_level_error,
)  # fmt: skip
DESCRIBE_DELEGATION_TOKEN_API = ApiSchema(
    DESCRIBE_DELEGATION_TOKEN_REQUEST, DESCRIBE_DELEGATION_TOKEN_RESPONSE,
    versions=_VERSIONS, error_response=describe_error_response,
)  # fmt: skip
