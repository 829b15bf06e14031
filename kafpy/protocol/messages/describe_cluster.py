"""DescribeCluster (key 60, KIP-700): brokers, controller and cluster id for admin clients."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

# The authorized-operations field holds a 32-bit set; this value means "not requested".
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

DESCRIBE_CLUSTER_REQUEST = Message(
    ApiKey.DESCRIBE_CLUSTER, "DescribeClusterRequest", "request", (0, 2), 0,
    [
        Field("include_cluster_authorized_operations", "bool"),
        Field("endpoint_type", "int8", "1+", default=1),
        Field("include_fenced_brokers", "bool", "2+"),
    ],
)

DESCRIBE_CLUSTER_RESPONSE = Message(
    ApiKey.DESCRIBE_CLUSTER, "DescribeClusterResponse", "response", (0, 2), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("endpoint_type", "int8", "1+", default=1),
        Field("cluster_id", "string"),
        Field("controller_id", "int32", default=-1),
        Field("brokers", Array(Struct([
            Field("broker_id", "int32"),
            Field("host", "string"),
            Field("port", "int32"),
            Field("rack", "string", nullable="0+", default=None),
            Field("is_fenced", "bool", "2+"),
        ]))),
        Field("cluster_authorized_operations", "int32", default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)


DESCRIBE_CLUSTER_API = ApiSchema(
    DESCRIBE_CLUSTER_REQUEST,
    DESCRIBE_CLUSTER_RESPONSE,
    versions=(0, 0),
    error_response=top_level_error,
)
