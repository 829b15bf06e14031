"""DeleteRecords (key 21): move partitions' log start offsets forward."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.schema import Array, Field, Message, Struct

DELETE_RECORDS_REQUEST = Message(
    ApiKey.DELETE_RECORDS, "DeleteRecordsRequest", "request", (0, 2), 2,
    [
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("offset", "int64"),
            ]))),
        ]))),
        Field("timeout_ms", "int32"),
    ],
)

DELETE_RECORDS_RESPONSE = Message(
    ApiKey.DELETE_RECORDS, "DeleteRecordsResponse", "response", (0, 2), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("low_watermark", "int64"),
                Field("error_code", "int16"),
            ]))),
        ]))),
    ],
)


def partition_error(index: int, code: int) -> Body:
    """One partition of a DeleteRecords response failing with `code`."""
    return {"partition_index": index, "low_watermark": -1, "error_code": code}


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return {
        "throttle_time_ms": 0,
        "topics": per_partition(body, "topics", "partitions", lambda i: partition_error(i, code)),
    }


DELETE_RECORDS_API = ApiSchema(
    DELETE_RECORDS_REQUEST,
    DELETE_RECORDS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
