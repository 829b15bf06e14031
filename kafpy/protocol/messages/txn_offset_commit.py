"""TxnOffsetCommit (key 28): a transactional producer commits a group's offsets as part
of its transaction (Kafka 2.8: versions 0-3, flexible from 3; v3 carries the group's
generation and member, KIP-447; v4-5 are declared for the codec, not advertised)."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

TXN_OFFSET_COMMIT_REQUEST = Message(
    ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequest", "request", (0, 5), 3,
    [
        Field("transactional_id", "string"),
        Field("group_id", "string"),
        Field("producer_id", "int64"),
        Field("producer_epoch", "int16"),
        Field("generation_id", "int32", "3+", default=-1),
        Field("member_id", "string", "3+", default=""),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("committed_offset", "int64"),
                Field("committed_leader_epoch", "int32", "2+", default=-1),
                Field("committed_metadata", "string", nullable="0+"),
            ]))),
        ]))),
    ],
)

TXN_OFFSET_COMMIT_RESPONSE = Message(
    ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitResponse", "response", (0, 5), 3,
    [
        Field("throttle_time_ms", "int32"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
            ]))),
        ]))),
    ],
)
