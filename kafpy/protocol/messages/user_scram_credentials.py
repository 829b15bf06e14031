"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), KIP-554:
list users' SCRAM mechanisms and iterations, and upsert or delete credentials through a
broker. The client salts and hashes the password; the broker never sees it."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
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
