"""AlterConfigs (key 33): replace the configuration of topics and brokers."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

ALTER_CONFIGS_REQUEST = Message(
    ApiKey.ALTER_CONFIGS, "AlterConfigsRequest", "request", (0, 2), 2,
    [
        Field("resources", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("configs", Array(Struct([
                Field("name", "string"),
                Field("value", "string", nullable="0+"),
            ]))),
        ]))),
        Field("validate_only", "bool"),
    ],
)

ALTER_CONFIGS_RESPONSE = Message(
    ApiKey.ALTER_CONFIGS, "AlterConfigsResponse", "response", (0, 2), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("responses", Array(Struct([
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
        ]))),
    ],
)
