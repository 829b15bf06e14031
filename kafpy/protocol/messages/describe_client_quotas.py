"""DescribeClientQuotas (key 48): the quotas of users and client ids matching filters."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_CLIENT_QUOTAS_REQUEST = Message(
    ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotasRequest", "request", (0, 1), 1,
    [
        Field("components", Array(Struct([
            Field("entity_type", "string"),
            Field("match_type", "int8"),
            Field("match", "string", nullable="0+"),
        ]))),
        Field("strict", "bool"),
    ],
)

DESCRIBE_CLIENT_QUOTAS_RESPONSE = Message(
    ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotasResponse", "response", (0, 1), 1,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+"),
        Field("entries", Array(Struct([
            Field("entity", Array(Struct([
                Field("entity_type", "string"),
                Field("entity_name", "string", nullable="0+"),
            ]))),
            Field("values", Array(Struct([
                Field("key", "string"),
                Field("value", "float64"),
            ]))),
        ])), nullable="0+"),
    ],
)
