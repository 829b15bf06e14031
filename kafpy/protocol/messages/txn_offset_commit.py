"""TxnOffsetCommit (key 28): a transactional producer commits a group's offsets as part
of its transaction (Kafka 2.8: versions 0-3, flexible from 3; v3 carries the group's
generation and member, KIP-447; v4-5 are declared for the codec, not advertised)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
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


def partition_error(index: int, code: int) -> Body:
    """One partition of a TxnOffsetCommit response failing with `code`."""
    return {"partition_index": index, "error_code": code}


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return {
        "throttle_time_ms": 0,
        "topics": per_partition(body, "topics", "partitions", lambda i: partition_error(i, code)),
    }


TXN_OFFSET_COMMIT_API = ApiSchema(
    TXN_OFFSET_COMMIT_REQUEST,
    TXN_OFFSET_COMMIT_RESPONSE,
    versions=(0, 3),
    error_response=error_response,
)
