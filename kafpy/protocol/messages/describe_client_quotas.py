"""DescribeClientQuotas (key 48): the quotas of users and client ids matching filters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_CLIENT_QUOTAS_REQUEST = Message(
    ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotasRequest", "request", (0, 1), 1,
    [
        Field("components", Array(Struct([
            Field("entity_type", "string"),
            Field("match_type", "int8"),
            Field("match", "string", nullable="0+"),
        ]))),
        Field("strict", "bool"),
    ],
)

DESCRIBE_CLIENT_QUOTAS_RESPONSE = Message(
    ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotasResponse", "response", (0, 1), 1,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+"),
        Field("entries", Array(Struct([
            Field("entity", Array(Struct([
                Field("entity_type", "string"),
                Field("entity_name", "string", nullable="0+"),
            ]))),
            Field("values", Array(Struct([
                Field("key", "string"),
                Field("value", "float64"),
            ]))),
        ])), nullable="0+"),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request failing whole: `code`, `message` and null entries."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}


DESCRIBE_CLIENT_QUOTAS_API = ApiSchema(
    DESCRIBE_CLIENT_QUOTAS_REQUEST,
    DESCRIBE_CLIENT_QUOTAS_RESPONSE,
    versions=(0, 1),
    error_response=error_response,
)
