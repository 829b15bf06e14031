"""IncrementalAlterConfigs (key 44): set, delete, append or subtract single config keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

INCREMENTAL_ALTER_CONFIGS_REQUEST = Message(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigsRequest", "request", (0, 1), 1,
    [
        Field("resources", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("configs", Array(Struct([
                Field("name", "string"),
                Field("config_operation", "int8"),
                Field("value", "string", nullable="0+"),
            ]))),
        ]))),
        Field("validate_only", "bool"),
    ],
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = Message(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigsResponse", "response", (0, 1), 1,
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


INCREMENTAL_ALTER_CONFIGS_API = ApiSchema(
    INCREMENTAL_ALTER_CONFIGS_REQUEST,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
    versions=(0, 1),
    error_response=error_response,
)
