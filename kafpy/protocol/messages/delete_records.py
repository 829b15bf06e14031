"""DeleteRecords (key 21): move partitions' log start offsets forward."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
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
