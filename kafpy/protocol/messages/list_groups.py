"""ListGroups (key 16): the groups a broker coordinates."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

LIST_GROUPS_REQUEST = Message(
    ApiKey.LIST_GROUPS, "ListGroupsRequest", "request", (0, 5), 3,
    [
        Field("states_filter", Array("string"), "4+"),
        Field("types_filter", Array("string"), "5+"),
    ],
)

LIST_GROUPS_RESPONSE = Message(
    ApiKey.LIST_GROUPS, "ListGroupsResponse", "response", (0, 5), 3,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16"),
        Field("groups", Array(Struct([
            Field("group_id", "string"),
            Field("protocol_type", "string"),
            Field("group_state", "string", "4+"),
            Field("group_type", "string", "5+"),
        ]))),
    ],
)


LIST_GROUPS_API = ApiSchema(
    LIST_GROUPS_REQUEST,
    LIST_GROUPS_RESPONSE,
    versions=(0, 4),
    error_response=top_level_error,
)
