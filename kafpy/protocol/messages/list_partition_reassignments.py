"""ListPartitionReassignments (key 46, KIP-455): the ongoing reassignments (null topics:
all of them), answered by the controller."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

LIST_PARTITION_REASSIGNMENTS_REQUEST = Message(
    ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignmentsRequest", "request", (0, 0), 0,
    [
        Field("timeout_ms", "int32", default=60000),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partition_indexes", Array("int32")),
        ])), nullable="0+", default=None),
    ],
)

LIST_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignmentsResponse", "response", (0, 0), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("replicas", Array("int32")),
                Field("adding_replicas", Array("int32")),
                Field("removing_replicas", Array("int32")),
            ]))),
        ]))),
    ],
)


LIST_PARTITION_REASSIGNMENTS_API = ApiSchema(
    LIST_PARTITION_REASSIGNMENTS_REQUEST,
    LIST_PARTITION_REASSIGNMENTS_RESPONSE,
    versions=(0, 0),
    error_response=top_level_error,
)
