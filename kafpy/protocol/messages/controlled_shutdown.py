"""ControlledShutdown (key 7): a broker asks the controller to move leadership away first.

Removed from Kafka in 4.0 (KRaft); declared from Kafka 3.x's definitions (versions 0-3).
Version 0 requests use request header v0 (no client id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

CONTROLLED_SHUTDOWN_REQUEST = Message(
    ApiKey.CONTROLLED_SHUTDOWN, "ControlledShutdownRequest", "request", (0, 3), 3,
    [
        Field("broker_id", "int32"),
        Field("broker_epoch", "int64", "2+", default=-1),
    ],
)

CONTROLLED_SHUTDOWN_RESPONSE = Message(
    ApiKey.CONTROLLED_SHUTDOWN, "ControlledShutdownResponse", "response", (0, 3), 3,
    [
        Field("error_code", "int16"),
        Field("remaining_partitions", Array(Struct([
            Field("topic_name", "string"),
            Field("partition_index", "int32"),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request's one error code, no partitions left."""
    return {"error_code": code, "remaining_partitions": []}


CONTROLLED_SHUTDOWN_API = ApiSchema(
    CONTROLLED_SHUTDOWN_REQUEST,
    CONTROLLED_SHUTDOWN_RESPONSE,
    versions=(0, 3),
    error_response=error_response,
)
