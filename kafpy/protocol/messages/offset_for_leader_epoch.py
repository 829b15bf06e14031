"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch (truncation checks)."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
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
