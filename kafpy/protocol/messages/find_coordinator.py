"""FindCoordinator (key 10): which broker coordinates a group (or transactional id)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

FIND_COORDINATOR_REQUEST = Message(
    ApiKey.FIND_COORDINATOR, "FindCoordinatorRequest", "request", (0, 6), 3,
    [
        Field("key", "string", "0-3"),
        Field("key_type", "int8", "1+", default=0),
        Field("coordinator_keys", Array("string"), "4+"),
    ],
)

FIND_COORDINATOR_RESPONSE = Message(
    ApiKey.FIND_COORDINATOR, "FindCoordinatorResponse", "response", (0, 6), 3,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "0-3"),
        Field("error_message", "string", "1-3", nullable="1-3"),
        Field("node_id", "int32", "0-3"),
        Field("host", "string", "0-3"),
        Field("port", "int32", "0-3"),
        Field("coordinators", Array(Struct([
            Field("key", "string", "4+"),
            Field("node_id", "int32", "4+"),
            Field("host", "string", "4+"),
            Field("port", "int32", "4+"),
            Field("error_code", "int16", "4+"),
            Field("error_message", "string", "4+", nullable="4+"),
        ])), "4+"),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """No coordinator: `code` and `message`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "node_id": -1, "host": "", "port": -1}  # fmt: skip


FIND_COORDINATOR_API = ApiSchema(
    FIND_COORDINATOR_REQUEST,
    FIND_COORDINATOR_RESPONSE,
    versions=(0, 3),
    error_response=error_response,
)
