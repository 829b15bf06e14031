"""DeleteAcls (key 31): delete the ACL bindings each filter selects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DELETE_ACLS_REQUEST = Message(
    ApiKey.DELETE_ACLS, "DeleteAclsRequest", "request", (0, 3), 2,
    [
        Field("filters", Array(Struct([
            Field("resource_type_filter", "int8"),
            Field("resource_name_filter", "string", nullable="0+"),
            Field("pattern_type_filter", "int8", "1+", default=3),
            Field("principal_filter", "string", nullable="0+"),
            Field("host_filter", "string", nullable="0+"),
            Field("operation", "int8"),
            Field("permission_type", "int8"),
        ]))),
    ],
)

DELETE_ACLS_RESPONSE = Message(
    ApiKey.DELETE_ACLS, "DeleteAclsResponse", "response", (0, 3), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("filter_results", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
            Field("matching_acls", Array(Struct([
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+"),
                Field("resource_type", "int8"),
                Field("resource_name", "string"),
                Field("pattern_type", "int8", "1+", default=3),
                Field("principal", "string"),
                Field("host", "string"),
                Field("operation", "int8"),
                Field("permission_type", "int8"),
            ]))),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every filter of the request answered with `code`, no ACL matched."""
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []}
        for _ in body.get("filters") or ()]}  # fmt: skip


DELETE_ACLS_API = ApiSchema(
    DELETE_ACLS_REQUEST,
    DELETE_ACLS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
