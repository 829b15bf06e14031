"""UpdateFeatures (key 57, KIP-584): an admin client finalizes cluster-wide feature levels.

Answered by the controller, which writes the /feature znode. The schemas are Kafka 3.x's
(versions 0-2: UpgradeType and ValidateOnly from 1, no per-feature results from 2); the
broker advertises and answers version 0, Kafka 2.8's. A `max_version_level` below 1 with `allow_downgrade` asks to delete
the finalized feature.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

UPDATE_FEATURES_REQUEST = Message(
    ApiKey.UPDATE_FEATURES, "UpdateFeaturesRequest", "request", (0, 2), 0,
    [
        Field("timeout_ms", "int32", default=60000),
        Field("feature_updates", Array(Struct([
            Field("feature", "string"),
            Field("max_version_level", "int16"),
            Field("allow_downgrade", "bool", "0"),
            Field("upgrade_type", "int8", "1+", default=1),
        ]))),
        Field("validate_only", "bool", "1+"),
    ],
)

UPDATE_FEATURES_RESPONSE = Message(
    ApiKey.UPDATE_FEATURES, "UpdateFeaturesResponse", "response", (0, 2), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+"),
        Field("results", Array(Struct([
            Field("feature", "string"),
            Field("error_code", "int16"),
            Field("error_message", "string", nullable="0+"),
        ])), "0-1"),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """A top-level error and no per-feature results, as Kafka's
    UpdateFeaturesRequest.getErrorResponse."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "results": []}


UPDATE_FEATURES_API = ApiSchema(
    UPDATE_FEATURES_REQUEST,
    UPDATE_FEATURES_RESPONSE,
    versions=(0, 0),
    error_response=error_response,
)
