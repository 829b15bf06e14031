"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), KIP-554:
list users' SCRAM mechanisms and iterations, and upsert or delete credentials through a
broker. The client salts and hashes the password; the broker never sees it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentialsRequest", "request", (0, 0), 0,
    [
        Field("users", Array(Struct([
            Field("name", "string"),
        ])), nullable="0+", default=None),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentialsResponse", "response", (0, 0), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("results", Array(Struct([
            Field("user", "string"),
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+", default=None),
            Field("credential_infos", Array(Struct([
                Field("mechanism", "int8"),
                Field("iterations", "int32"),
            ]))),
        ]))),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentialsRequest", "request", (0, 0), 0,
    [
        Field("deletions", Array(Struct([
            Field("name", "string"),
            Field("mechanism", "int8"),
        ]))),
        Field("upsertions", Array(Struct([
            Field("name", "string"),
            Field("mechanism", "int8"),
            Field("iterations", "int32"),
            Field("salt", "bytes"),
            Field("salted_password", "bytes"),
        ]))),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentialsResponse", "response", (0, 0), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("user", "string"),
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+", default=None),
        ]))),
    ],
)


def describe_error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """DescribeUserScramCredentials failing whole with `code` and `message`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "results": []}


def alter_error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every user of the request's deletions and upsertions answered with `code`."""
    users = dict.fromkeys(u["name"] for key in ("deletions", "upsertions") for u in body.get(key) or ())
    return {"throttle_time_ms": 0, "results": [
        {"user": u, "error_code": code, "error_message": message} for u in users]}  # fmt: skip


DESCRIBE_USER_SCRAM_CREDENTIALS_API = ApiSchema(
    DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST,
    DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE,
    versions=(0, 0),
    error_response=describe_error_response,
)


ALTER_USER_SCRAM_CREDENTIALS_API = ApiSchema(
    ALTER_USER_SCRAM_CREDENTIALS_REQUEST,
    ALTER_USER_SCRAM_CREDENTIALS_RESPONSE,
    versions=(0, 0),
    error_response=alter_error_response,
)
