"""DescribeConfigs (key 32): the configuration of topics and brokers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_CONFIGS_REQUEST = Message(
    ApiKey.DESCRIBE_CONFIGS, "DescribeConfigsRequest", "request", (0, 4), 4,
    [
        Field("resources", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("configuration_keys", Array("string"), nullable="0+"),
        ]))),
        Field("include_synonyms", "bool", "1+", default=False),
        Field("include_documentation", "bool", "3+", default=False),
    ],
)

DESCRIBE_CONFIGS_RESPONSE = Message(
    ApiKey.DESCRIBE_CONFIGS, "DescribeConfigsResponse", "response", (0, 4), 4,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("configs", Array(Struct([
                Field("name", "string"),
                Field("value", "string", nullable="0+"),
                Field("read_only", "bool"),
                Field("config_source", "int8", "1+", default=-1),
                Field("is_default", "bool", "0"),
                Field("is_sensitive", "bool"),
                Field("synonyms", Array(Struct([
                    Field("name", "string", "1+"),
                    Field("value", "string", "1+", nullable="0+"),
                    Field("source", "int8", "1+"),
                ])), "1+"),
                Field("config_type", "int8", "3+", default=0),
                Field("documentation", "string", "3+", nullable="0+"),
            ]))),
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
        "configs": [],
    }


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every resource of the request answered with `code` and `message`."""
    items = [resource_error(r, code, message) for r in body.get("resources") or ()]
    return {"throttle_time_ms": 0, "results": items}


DESCRIBE_CONFIGS_API = ApiSchema(
    DESCRIBE_CONFIGS_REQUEST,
    DESCRIBE_CONFIGS_RESPONSE,
    versions=(0, 4),
    error_response=error_response,
)
