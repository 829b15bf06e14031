"""SyncGroup (key 14): the leader hands out assignments; members receive theirs."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

SYNC_GROUP_REQUEST = Message(
    ApiKey.SYNC_GROUP, "SyncGroupRequest", "request", (0, 5), 4,
    [
        Field("group_id", "string"),
        Field("generation_id", "int32"),
        Field("member_id", "string"),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None),
        Field("protocol_type", "string", "5+", nullable="5+", default=None),
        Field("protocol_name", "string", "5+", nullable="5+", default=None),
        Field("assignments", Array(Struct([
            Field("member_id", "string"),
            Field("assignment", "bytes"),
        ]))),
    ],
)

SYNC_GROUP_RESPONSE = Message(
    ApiKey.SYNC_GROUP, "SyncGroupResponse", "response", (0, 5), 4,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16"),
        Field("protocol_type", "string", "5+", nullable="5+", default=None),
        Field("protocol_name", "string", "5+", nullable="5+", default=None),
        Field("assignment", "bytes"),
    ],
)


SYNC_GROUP_API = ApiSchema(
    SYNC_GROUP_REQUEST,
    SYNC_GROUP_RESPONSE,
    versions=(0, 5),
    error_response=top_level_error,
)
