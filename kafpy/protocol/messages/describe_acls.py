"""DescribeAcls (key 29): the ACL bindings a filter selects."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_ACLS_REQUEST = Message(
    ApiKey.DESCRIBE_ACLS, "DescribeAclsRequest", "request", (0, 3), 2,
    [
        Field("resource_type_filter", "int8"),
        Field("resource_name_filter", "string", nullable="0+"),
        Field("pattern_type_filter", "int8", "1+", default=3),
        Field("principal_filter", "string", nullable="0+"),
        Field("host_filter", "string", nullable="0+"),
        Field("operation", "int8"),
        Field("permission_type", "int8"),
    ],
)

DESCRIBE_ACLS_RESPONSE = Message(
    ApiKey.DESCRIBE_ACLS, "DescribeAclsResponse", "response", (0, 3), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+"),
        Field("resources", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("pattern_type", "int8", "1+", default=3),
            Field("acls", Array(Struct([
                Field("principal", "string"),
                Field("host", "string"),
                Field("operation", "int8"),
                Field("permission_type", "int8"),
            ]))),
        ]))),
    ],
)


DESCRIBE_ACLS_API = ApiSchema(
    DESCRIBE_ACLS_REQUEST,
    DESCRIBE_ACLS_RESPONSE,
    versions=(0, 2),
    error_response=top_level_error,
)
