"""AlterIsr (key 56, KIP-497): a partition leader asks the controller to change its ISR.

Sent broker to controller at inter.broker.protocol.version 2.7-IV2 and later, instead of
the leader writing the partition's state znode itself. Kafka 2.8's definitions (version 0,
flexible).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

ALTER_ISR_REQUEST = Message(
    ApiKey.ALTER_ISR, "AlterIsrRequest", "request", (0, 0), 0,
    [
        Field("broker_id", "int32"),
        Field("broker_epoch", "int64", default=-1),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("leader_epoch", "int32"),
                Field("new_isr", Array("int32")),
                Field("current_isr_version", "int32"),
            ]))),
        ]))),
    ],
)

ALTER_ISR_RESPONSE = Message(
    ApiKey.ALTER_ISR, "AlterIsrResponse", "response", (0, 0), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
                Field("leader_id", "int32"),
                Field("leader_epoch", "int32"),
                Field("isr", Array("int32")),
                Field("current_isr_version", "int32"),
            ]))),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """One top-level error and no partitions, as Kafka's AlterIsrRequest.getErrorResponse."""
    return {"throttle_time_ms": 0, "error_code": code, "topics": []}


ALTER_ISR_API = ApiSchema(
    ALTER_ISR_REQUEST,
    ALTER_ISR_RESPONSE,
    versions=(0, 0),
    error_response=error_response,
)
