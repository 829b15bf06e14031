"""AlterPartitionReassignments (key 45, KIP-455): start or cancel (null replicas) the
reassignment of partitions, answered by the controller. v1 (Kafka 4.0) is declared for the
wire format only; kafpy advertises v0 as Kafka 2.8 does."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

ALTER_PARTITION_REASSIGNMENTS_REQUEST = Message(
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignmentsRequest", "request", (0, 1), 0,
    [
        Field("timeout_ms", "int32", default=60000),
        Field("allow_replication_factor_change", "bool", "1+", default=True),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("replicas", Array("int32"), nullable="0+", default=None),
            ]))),
        ]))),
    ],
)

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignmentsResponse", "response", (0, 1), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("allow_replication_factor_change", "bool", "1+", default=True),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+"),
        Field("responses", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+"),
            ]))),
        ]))),
    ],
)


ALTER_PARTITION_REASSIGNMENTS_API = ApiSchema(
    ALTER_PARTITION_REASSIGNMENTS_REQUEST,
    ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
    versions=(0, 0),
    error_response=top_level_error,
)
