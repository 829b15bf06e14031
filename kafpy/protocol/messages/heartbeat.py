"""Heartbeat (key 12): a group member says it is alive and learns of rebalances."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Field, Message

HEARTBEAT_REQUEST = Message(
    ApiKey.HEARTBEAT, "HeartbeatRequest", "request", (0, 4), 4,
    [
        Field("group_id", "string"),
        Field("generation_id", "int32"),
        Field("member_id", "string"),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
)

HEARTBEAT_RESPONSE = Message(
    ApiKey.HEARTBEAT, "HeartbeatResponse", "response", (0, 4), 4,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16"),
    ],
)


HEARTBEAT_API = ApiSchema(
    HEARTBEAT_REQUEST,
    HEARTBEAT_RESPONSE,
    versions=(0, 4),
    error_response=top_level_error,
)
