"""OffsetCommit (key 8): a group commits consumed offsets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.schema import Array, Field, Message, Struct

OFFSET_COMMIT_REQUEST = Message(
    ApiKey.OFFSET_COMMIT, "OffsetCommitRequest", "request", (0, 10), 8,
    [
        Field("group_id", "string"),
        Field("generation_id_or_member_epoch", "int32", "1+", default=-1),
        Field("member_id", "string", "1+"),
        Field("group_instance_id", "string", "7+", nullable="7+", default=None),
        Field("retention_time_ms", "int64", "2-4", default=-1),
        Field("topics", Array(Struct([
            Field("name", "string", "0-9"),
            Field("topic_id", "uuid", "10+"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("committed_offset", "int64"),
                Field("committed_leader_epoch", "int32", "6+", default=-1),
                Field("commit_timestamp", "int64", "1", default=-1),
                Field("committed_metadata", "string", nullable="0+"),
            ]))),
        ]))),
    ],
)

OFFSET_COMMIT_RESPONSE = Message(
    ApiKey.OFFSET_COMMIT, "OffsetCommitResponse", "response", (0, 10), 8,
    [
        Field("throttle_time_ms", "int32", "3+"),
        Field("topics", Array(Struct([
            Field("name", "string", "0-9"),
            Field("topic_id", "uuid", "10+"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
            ]))),
        ]))),
    ],
)


def partition_error(index: int, code: int) -> Body:
    """One partition of an OffsetCommit response failing with `code`."""
    return {"partition_index": index, "error_code": code}


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return {
        "throttle_time_ms": 0,
        "topics": per_partition(body, "topics", "partitions", lambda i: partition_error(i, code)),
    }


OFFSET_COMMIT_API = ApiSchema(
    OFFSET_COMMIT_REQUEST,
    OFFSET_COMMIT_RESPONSE,
    versions=(0, 8),
    error_response=error_response,
)
