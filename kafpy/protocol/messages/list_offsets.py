"""ListOffsets (key 2): offsets by timestamp, earliest or latest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.schema import Array, Field, Message, Struct

LIST_OFFSETS_REQUEST = Message(
    ApiKey.LIST_OFFSETS, "ListOffsetsRequest", "request", (0, 11), 6,
    [
        # -1: a consumer (kafka-python's default; Kafka's builders always set it).
        Field("replica_id", "int32", default=-1),
        Field("isolation_level", "int8", "2+"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("current_leader_epoch", "int32", "4+", default=-1),
                Field("timestamp", "int64"),
                Field("max_num_offsets", "int32", "0", default=1),
            ]))),
        ]))),
        Field("timeout_ms", "int32", "10+"),
    ],
)

LIST_OFFSETS_RESPONSE = Message(
    ApiKey.LIST_OFFSETS, "ListOffsetsResponse", "response", (0, 11), 6,
    [
        Field("throttle_time_ms", "int32", "2+"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
                Field("old_style_offsets", Array("int64"), "0"),
                Field("timestamp", "int64", "1+", default=-1),
                Field("offset", "int64", "1+", default=-1),
                Field("leader_epoch", "int32", "4+", default=-1),
            ]))),
        ]))),
    ],
)


def partition_error(index: int, code: int) -> Body:
    """One partition of a ListOffsets response failing with `code`."""
    return {"partition_index": index, "error_code": code, "timestamp": -1, "offset": -1,
            "leader_epoch": -1, "old_style_offsets": []}  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return {
        "throttle_time_ms": 0,
        "topics": per_partition(body, "topics", "partitions", lambda i: partition_error(i, code)),
    }


LIST_OFFSETS_API = ApiSchema(
    LIST_OFFSETS_REQUEST,
    LIST_OFFSETS_RESPONSE,
    versions=(0, 6),
    error_response=error_response,
)
