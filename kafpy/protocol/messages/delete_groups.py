"""DeleteGroups (key 42): delete empty consumer groups and their offsets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DELETE_GROUPS_REQUEST = Message(
    ApiKey.DELETE_GROUPS, "DeleteGroupsRequest", "request", (0, 2), 2,
    [
        Field("groups_names", Array("string")),
    ],
)

DELETE_GROUPS_RESPONSE = Message(
    ApiKey.DELETE_GROUPS, "DeleteGroupsResponse", "response", (0, 2), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("group_id", "string"),
            Field("error_code", "int16"),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every group of the request answered with `code`."""
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": code} for g in body.get("groups_names") or ()]}  # fmt: skip


DELETE_GROUPS_API = ApiSchema(
    DELETE_GROUPS_REQUEST,
    DELETE_GROUPS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
