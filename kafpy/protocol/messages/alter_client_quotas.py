"""AlterClientQuotas (key 49): set or remove the quotas of users and client ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

_ENTITY = Field("entity", Array(Struct([
    Field("entity_type", "string"),
    Field("entity_name", "string", nullable="0+"),
])))

ALTER_CLIENT_QUOTAS_REQUEST = Message(
    ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotasRequest", "request", (0, 1), 1,
    [
        Field("entries", Array(Struct([
            _ENTITY,
            Field("ops", Array(Struct([
                Field("key", "string"),
                Field("value", "float64"),
                Field("remove", "bool"),
            ]))),
        ]))),
        Field("validate_only", "bool"),
    ],
)

ALTER_CLIENT_QUOTAS_RESPONSE = Message(
    ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotasResponse", "response", (0, 1), 1,
    [
        Field("throttle_time_ms", "int32"),
        Field("entries", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
            _ENTITY,
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every entity of the request answered with `code`."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": message, "entity": e["entity"]}
        for e in body.get("entries") or ()]}  # fmt: skip


ALTER_CLIENT_QUOTAS_API = ApiSchema(
    ALTER_CLIENT_QUOTAS_REQUEST,
    ALTER_CLIENT_QUOTAS_RESPONSE,
    versions=(0, 1),
    error_response=error_response,
)
