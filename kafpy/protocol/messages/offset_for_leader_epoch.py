"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch (truncation checks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.schema import Array, Field, Message, Struct

OFFSET_FOR_LEADER_EPOCH_REQUEST = Message(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpochRequest", "request", (0, 4), 4,
    [
        Field("replica_id", "int32", "3+", default=-2),
        Field("topics", Array(Struct([
            Field("topic", "string"),
            Field("partitions", Array(Struct([
                Field("partition", "int32"),
                Field("current_leader_epoch", "int32", "2+", default=-1),
                Field("leader_epoch", "int32"),
            ]))),
        ]))),
    ],
)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = Message(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpochResponse", "response", (0, 4), 4,
    [
        Field("throttle_time_ms", "int32", "2+"),
        Field("topics", Array(Struct([
            Field("topic", "string"),
            Field("partitions", Array(Struct([
                Field("error_code", "int16"),
                Field("partition", "int32"),
                Field("leader_epoch", "int32", "1+", default=-1),
                Field("end_offset", "int64", default=-1),
            ]))),
        ]))),
    ],
)


def partition_error(index: int, code: int) -> Body:
    """One partition of an OffsetForLeaderEpoch response failing with `code`."""
    return {"error_code": code, "partition": index, "leader_epoch": -1, "end_offset": -1}


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return {
        "throttle_time_ms": 0,
        "topics": per_partition(
            body, "topics", "partitions", lambda i: partition_error(i, code),
            topic_name="topic", out_topic_name="topic", partition_index="partition",
        ),
    }  # fmt: skip


OFFSET_FOR_LEADER_EPOCH_API = ApiSchema(
    OFFSET_FOR_LEADER_EPOCH_REQUEST,
    OFFSET_FOR_LEADER_EPOCH_RESPONSE,
    versions=(0, 4),
    error_response=error_response,
)
