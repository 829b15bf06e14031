"""JoinGroup (key 11): a member joins a consumer group and a rebalance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

JOIN_GROUP_REQUEST = Message(
    ApiKey.JOIN_GROUP, "JoinGroupRequest", "request", (0, 9), 6,
    [
        Field("group_id", "string"),
        Field("session_timeout_ms", "int32"),
        Field("rebalance_timeout_ms", "int32", "1+", default=-1),
        Field("member_id", "string"),
        Field("group_instance_id", "string", "5+", nullable="5+", default=None),
        Field("protocol_type", "string"),
        Field("protocols", Array(Struct([
            Field("name", "string"),
            Field("metadata", "bytes"),
        ]))),
        Field("reason", "string", "8+", nullable="8+", default=None),
    ],
)

JOIN_GROUP_RESPONSE = Message(
    ApiKey.JOIN_GROUP, "JoinGroupResponse", "response", (0, 9), 6,
    [
        Field("throttle_time_ms", "int32", "2+"),
        Field("error_code", "int16"),
        Field("generation_id", "int32", default=-1),
        Field("protocol_type", "string", "7+", nullable="7+", default=None),
        Field("protocol_name", "string", nullable="7+"),
        Field("leader", "string"),
        Field("skip_assignment", "bool", "9+", default=False),
        Field("member_id", "string"),
        Field("members", Array(Struct([
            Field("member_id", "string"),
            Field("group_instance_id", "string", "5+", nullable="5+", default=None),
            Field("metadata", "bytes"),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request failing with `code`, its member id echoed (the protocol type and name
    take their defaults: "" where they are not nullable, else null)."""
    return {"throttle_time_ms": 0, "error_code": code, "generation_id": -1, "leader": "",
            "member_id": body.get("member_id", ""), "members": []}  # fmt: skip


JOIN_GROUP_API = ApiSchema(
    JOIN_GROUP_REQUEST,
    JOIN_GROUP_RESPONSE,
    versions=(0, 7),
    error_response=error_response,
)
