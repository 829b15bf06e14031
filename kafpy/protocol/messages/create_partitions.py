"""CreatePartitions (key 37): add partitions to existing topics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

CREATE_PARTITIONS_REQUEST = Message(
    ApiKey.CREATE_PARTITIONS, "CreatePartitionsRequest", "request", (0, 3), 2,
    [
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("count", "int32"),
            Field("assignments", Array(Struct([
                Field("broker_ids", Array("int32")),
            ])), nullable="0+"),
        ]))),
        Field("timeout_ms", "int32"),
        Field("validate_only", "bool"),
    ],
)

CREATE_PARTITIONS_RESPONSE = Message(
    ApiKey.CREATE_PARTITIONS, "CreatePartitionsResponse", "response", (0, 3), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("name", "string"),
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+", default=None),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every topic of the request answered with `code` and `message`."""
    items = [
        {"name": t["name"], "error_code": code, "error_message": message}
        for t in body.get("topics") or ()
    ]
    return {"throttle_time_ms": 0, "results": items}


CREATE_PARTITIONS_API = ApiSchema(
    CREATE_PARTITIONS_REQUEST,
    CREATE_PARTITIONS_RESPONSE,
    versions=(0, 3),
    error_response=error_response,
)
