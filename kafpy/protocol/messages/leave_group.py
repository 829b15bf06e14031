"""LeaveGroup (key 13): members leave a consumer group."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

LEAVE_GROUP_REQUEST = Message(
    ApiKey.LEAVE_GROUP, "LeaveGroupRequest", "request", (0, 5), 4,
    [
        Field("group_id", "string"),
        Field("member_id", "string", "0-2"),
        Field("members", Array(Struct([
            Field("member_id", "string", "3+"),
            Field("group_instance_id", "string", "3+", nullable="3+", default=None),
            Field("reason", "string", "5+", nullable="5+", default=None),
        ])), "3+"),
    ],
)

LEAVE_GROUP_RESPONSE = Message(
    ApiKey.LEAVE_GROUP, "LeaveGroupResponse", "response", (0, 5), 4,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16"),
        Field("members", Array(Struct([
            Field("member_id", "string", "3+"),
            Field("group_instance_id", "string", "3+", nullable="3+"),
            Field("error_code", "int16", "3+"),
        ])), "3+"),
    ],
)


LEAVE_GROUP_API = ApiSchema(
    LEAVE_GROUP_REQUEST,
    LEAVE_GROUP_RESPONSE,
    versions=(0, 4),
    error_response=top_level_error,
)
