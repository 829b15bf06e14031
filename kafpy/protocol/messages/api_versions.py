"""ApiVersions (key 18): which API versions the broker supports."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

API_VERSIONS_REQUEST = Message(
    ApiKey.API_VERSIONS, "ApiVersionsRequest", "request", (0, 4), 3,
    [
        Field("client_software_name", "string", "3+"),
        Field("client_software_version", "string", "3+"),
    ],
)

API_VERSIONS_RESPONSE = Message(
    ApiKey.API_VERSIONS, "ApiVersionsResponse", "response", (0, 4), 3,
    [
        Field("error_code", "int16"),
        Field("api_keys", Array(Struct([
            Field("api_key", "int16"),
            Field("min_version", "int16"),
            Field("max_version", "int16"),
        ]))),
        Field("throttle_time_ms", "int32", "1+"),
        Field("supported_features", Array(Struct([
            Field("name", "string", "3+"),
            Field("min_version", "int16", "3+"),
            Field("max_version", "int16", "3+"),
        ])), "3+", tag=0),
        Field("finalized_features_epoch", "int64", "3+", default=-1, tag=1),
        Field("finalized_features", Array(Struct([
            Field("name", "string", "3+"),
            Field("max_version_level", "int16", "3+"),
            Field("min_version_level", "int16", "3+"),
        ])), "3+", tag=2),
        Field("zk_migration_ready", "bool", "3+", default=False, tag=3),
    ],
)


API_VERSIONS_API = ApiSchema(
    API_VERSIONS_REQUEST,
    API_VERSIONS_RESPONSE,
    versions=(0, 3),
    error_response=top_level_error,
)
