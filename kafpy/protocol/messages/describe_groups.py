"""DescribeGroups (key 15): state, protocol and members of groups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

# The authorized-operations field holds a 32-bit set; this value means "not requested".
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

DESCRIBE_GROUPS_REQUEST = Message(
    ApiKey.DESCRIBE_GROUPS, "DescribeGroupsRequest", "request", (0, 6), 5,
    [
        Field("groups", Array("string")),
        Field("include_authorized_operations", "bool", "3+"),
    ],
)

DESCRIBE_GROUPS_RESPONSE = Message(
    ApiKey.DESCRIBE_GROUPS, "DescribeGroupsResponse", "response", (0, 6), 5,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("groups", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", "6+", nullable="6+", default=None),
            Field("group_id", "string"),
            Field("group_state", "string"),
            Field("protocol_type", "string"),
            Field("protocol_data", "string"),
            Field("members", Array(Struct([
                Field("member_id", "string"),
                Field("group_instance_id", "string", "4+", nullable="4+", default=None),
                Field("client_id", "string"),
                Field("client_host", "string"),
                Field("member_metadata", "bytes"),
                Field("member_assignment", "bytes"),
            ]))),
            Field("authorized_operations", "int32", "3+", default=AUTHORIZED_OPERATIONS_OMITTED),
        ]))),
    ],
)


def group_error(group_id: str, code: int) -> Body:
    """One group of a DescribeGroups response failing with `code`."""
    return {"error_code": code, "group_id": group_id, "group_state": "", "protocol_type": "",
            "protocol_data": "", "members": []}  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every group of the request answered with `code`."""
    return {"throttle_time_ms": 0, "groups": [group_error(g, code) for g in body.get("groups") or ()]}


DESCRIBE_GROUPS_API = ApiSchema(
    DESCRIBE_GROUPS_REQUEST,
    DESCRIBE_GROUPS_RESPONSE,
    versions=(0, 5),
    error_response=error_response,
)
