"""CreateAcls (key 30): create ACL bindings (resource pattern + entry) through a broker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

CREATE_ACLS_REQUEST = Message(
    ApiKey.CREATE_ACLS, "CreateAclsRequest", "request", (0, 3), 2,
    [
        Field("creations", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("resource_pattern_type", "int8", "1+", default=3),
            Field("principal", "string"),
            Field("host", "string"),
            Field("operation", "int8"),
            Field("permission_type", "int8"),
        ]))),
    ],
)

CREATE_ACLS_RESPONSE = Message(
    ApiKey.CREATE_ACLS, "CreateAclsResponse", "response", (0, 3), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every creation of the request answered with `code`."""
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": message} for _ in body.get("creations") or ()]}  # fmt: skip


CREATE_ACLS_API = ApiSchema(
    CREATE_ACLS_REQUEST,
    CREATE_ACLS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
