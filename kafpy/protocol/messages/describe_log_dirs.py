"""DescribeLogDirs (key 35): a broker's log dirs with the size of each partition in them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_LOG_DIRS_REQUEST = Message(
    ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirsRequest", "request", (0, 5), 2,
    [
        Field("topics", Array(Struct([
            Field("topic", "string"),
            Field("partitions", Array("int32")),
        ])), nullable="0+"),
    ],
)

DESCRIBE_LOG_DIRS_RESPONSE = Message(
    ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirsResponse", "response", (0, 5), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16", "3+"),
        Field("results", Array(Struct([
            Field("error_code", "int16"),
            Field("log_dir", "string"),
            Field("topics", Array(Struct([
                Field("name", "string"),
                Field("partitions", Array(Struct([
                    Field("partition_index", "int32"),
                    Field("partition_size", "int64"),
                    Field("offset_lag", "int64"),
                    Field("is_future_key", "bool"),
                ]))),
            ]))),
            Field("total_bytes", "int64", "4+", default=-1),
            Field("usable_bytes", "int64", "4+", default=-1),
            Field("is_cordoned", "bool", "5+", default=False),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request failing whole: `code` (v3+) and no log dirs."""
    return {"throttle_time_ms": 0, "error_code": code, "results": []}


DESCRIBE_LOG_DIRS_API = ApiSchema(
    DESCRIBE_LOG_DIRS_REQUEST,
    DESCRIBE_LOG_DIRS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
