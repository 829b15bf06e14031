"""DeleteGroups (key 42): delete empty consumer groups and their offsets."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
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
