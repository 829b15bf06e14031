"""OffsetFetch (key 9): a group's committed offsets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.errors import Errors
from kafpy.protocol.schema import Array, Field, Message, Struct

OFFSET_FETCH_REQUEST = Message(
    ApiKey.OFFSET_FETCH, "OffsetFetchRequest", "request", (0, 10), 6,
    [
        Field("group_id", "string", "0-7"),
        Field("topics", Array(Struct([
            Field("name", "string", "0-7"),
            Field("partition_indexes", Array("int32"), "0-7"),
        ])), "0-7", nullable="2-7"),
        Field("groups", Array(Struct([
            Field("group_id", "string", "8+"),
            Field("member_id", "string", "9+", nullable="9+", default=None),
            Field("member_epoch", "int32", "9+", default=-1),
            Field("topics", Array(Struct([
                Field("name", "string", "8-9"),
                Field("topic_id", "uuid", "10+"),
                Field("partition_indexes", Array("int32"), "8+"),
            ])), "8+", nullable="8+"),
        ])), "8+"),
        Field("require_stable", "bool", "7+", default=False),
    ],
)

OFFSET_FETCH_RESPONSE = Message(
    ApiKey.OFFSET_FETCH, "OffsetFetchResponse", "response", (0, 10), 6,
    [
        Field("throttle_time_ms", "int32", "3+"),
        Field("topics", Array(Struct([
            Field("name", "string", "0-7"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32", "0-7"),
                Field("committed_offset", "int64", "0-7"),
                Field("committed_leader_epoch", "int32", "5-7", default=-1),
                Field("metadata", "string", "0-7", nullable="0-7"),
                Field("error_code", "int16", "0-7"),
            ])), "0-7"),
        ])), "0-7"),
        Field("error_code", "int16", "2-7", default=0),
        Field("groups", Array(Struct([
            Field("group_id", "string", "8+"),
            Field("topics", Array(Struct([
                Field("name", "string", "8-9"),
                Field("topic_id", "uuid", "10+"),
                Field("partitions", Array(Struct([
                    Field("partition_index", "int32", "8+"),
                    Field("committed_offset", "int64", "8+"),
                    Field("committed_leader_epoch", "int32", "8+", default=-1),
                    Field("metadata", "string", "8+", nullable="8+"),
                    Field("error_code", "int16", "8+"),
                ])), "8+"),
            ])), "8+"),
            Field("error_code", "int16", "8+", default=0),
        ])), "8+"),
    ],
)


def partition_error(index: int, code: int) -> Body:
    """One partition of an OffsetFetch response failing with `code`."""
    return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
            "metadata": "", "error_code": code}  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """v2+: the group's error code; before, every partition of the request with `code`."""
    if version >= 2:
        return {"throttle_time_ms": 0, "topics": [], "error_code": code}
    return {
        "throttle_time_ms": 0,
        "error_code": Errors.NONE,
        "topics": per_partition(
            body, "topics", "partition_indexes", lambda i: partition_error(i, code),
            partition_index=None,
        ),
    }  # fmt: skip


OFFSET_FETCH_API = ApiSchema(
    OFFSET_FETCH_REQUEST,
    OFFSET_FETCH_RESPONSE,
    versions=(0, 7),
    error_response=error_response,
)
