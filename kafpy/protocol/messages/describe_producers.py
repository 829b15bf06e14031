"""DescribeProducers (key 61, KIP-664, Kafka 3.0): the active producers of partitions, from the
brokers holding them. kafpy serves it (beyond Kafka 2.8) for `kafpy transactions --find-hanging`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_PRODUCERS_REQUEST = Message(
    ApiKey.DESCRIBE_PRODUCERS, "DescribeProducersRequest", "request", (0, 0), 0,
    [
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partition_indexes", Array("int32")),
        ]))),
    ],
)  # fmt: skip

DESCRIBE_PRODUCERS_RESPONSE = Message(
    ApiKey.DESCRIBE_PRODUCERS, "DescribeProducersResponse", "response", (0, 0), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+", default=None),
                Field("active_producers", Array(Struct([
                    Field("producer_id", "int64"),
                    Field("producer_epoch", "int32"),
                    Field("last_sequence", "int32", default=-1),
                    Field("last_timestamp", "int64", default=-1),
                    Field("coordinator_epoch", "int32"),
                    Field("current_txn_start_offset", "int64", default=-1),
                ]))),
            ]))),
        ]))),
    ],
)  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request failing whole: no topics (the response has no top-level error code;
    `error_code` is for the broker's callers)."""
    return {"throttle_time_ms": 0, "error_code": code, "topics": []}


# Kafka 3.0's (KIP-664), served beyond 2.8 for `kafpy transactions`


DESCRIBE_PRODUCERS_API = ApiSchema(
    DESCRIBE_PRODUCERS_REQUEST,
    DESCRIBE_PRODUCERS_RESPONSE,
    versions=(0, 0),
    error_response=error_response,
)
