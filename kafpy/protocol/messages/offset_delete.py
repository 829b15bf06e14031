"""OffsetDelete (key 47, KIP-496): delete a group's committed offsets of some partitions."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

OFFSET_DELETE_REQUEST = Message(
    ApiKey.OFFSET_DELETE, "OffsetDeleteRequest", "request", (0, 0), None,
    [
        Field("group_id", "string"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
            ]))),
        ]))),
    ],
)

OFFSET_DELETE_RESPONSE = Message(
    ApiKey.OFFSET_DELETE, "OffsetDeleteResponse", "response", (0, 0), None,
    [
        Field("error_code", "int16"),
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
    """One partition of an OffsetDelete response failing with `code`."""
    return {"partition_index": index, "error_code": code}


OFFSET_DELETE_API = ApiSchema(
    OFFSET_DELETE_REQUEST,
    OFFSET_DELETE_RESPONSE,
    versions=(0, 0),
    error_response=top_level_error,
)
