"""AlterConfigs (key 33): replace the configuration of topics and brokers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

ALTER_CONFIGS_REQUEST = Message(
    ApiKey.ALTER_CONFIGS, "AlterConfigsRequest", "request", (0, 2), 2,
    [
        Field("resources", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("configs", Array(Struct([
                Field("name", "string"),
                Field("value", "string", nullable="0+"),
            ]))),
        ]))),
        Field("validate_only", "bool"),
    ],
)

ALTER_CONFIGS_RESPONSE = Message(
    ApiKey.ALTER_CONFIGS, "AlterConfigsResponse", "response", (0, 2), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("responses", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
        ]))),
    ],
)


def resource_error(resource: Mapping[str, Any], code: int, message: str | None = None) -> Body:
    """One resource of the response failing with `code`."""
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": int(resource["resource_type"]),
        "resource_name": resource["resource_name"],
    }


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every resource of the request answered with `code` and `message`."""
    items = [resource_error(r, code, message) for r in body.get("resources") or ()]
    return {"throttle_time_ms": 0, "responses": items}


ALTER_CONFIGS_API = ApiSchema(
    ALTER_CONFIGS_REQUEST,
    ALTER_CONFIGS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
