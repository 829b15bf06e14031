"""IncrementalAlterConfigs (key 44): set, delete, append or subtract single config keys."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

INCREMENTAL_ALTER_CONFIGS_REQUEST = Message(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigsRequest", "request", (0, 1), 1,
    [
        Field("resources", Array(Struct([
            Field("resource_type", "int8"),
            Field("resource_name", "string"),
            Field("configs", Array(Struct([
                Field("name", "string"),
                Field("config_operation", "int8"),
                Field("value", "string", nullable="0+"),
            ]))),
        ]))),
        Field("validate_only", "bool"),
    ],
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = Message(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigsResponse", "response", (0, 1), 1,
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
