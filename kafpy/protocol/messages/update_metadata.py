"""UpdateMetadata (key 6): the controller pushes cluster metadata to every broker.

Removed from Kafka in 4.0 (KRaft); declared from Kafka 3.x's definitions (versions 0-7).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

PARTITION_STATE = Struct([
    Field("topic_name", "string", "0-4"),
    Field("partition_index", "int32"),
    Field("controller_epoch", "int32"),
    Field("leader", "int32"),
    Field("leader_epoch", "int32"),
    Field("isr", Array("int32")),
    Field("zk_version", "int32"),
    Field("replicas", Array("int32")),
    Field("offline_replicas", Array("int32"), "4+"),
])

UPDATE_METADATA_REQUEST = Message(
    ApiKey.UPDATE_METADATA, "UpdateMetadataRequest", "request", (0, 7), 6,
    [
        Field("controller_id", "int32"),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", "5+", default=-1),
        Field("ungrouped_partition_states", Array(PARTITION_STATE), "0-4"),
        Field("topic_states", Array(Struct([
            Field("topic_name", "string", "5+"),
            Field("topic_id", "uuid", "7+"),
            Field("partition_states", Array(PARTITION_STATE), "5+"),
        ])), "5+"),
        Field("live_brokers", Array(Struct([
            Field("id", "int32"),
            Field("v0_host", "string", "0"),
            Field("v0_port", "int32", "0"),
            Field("endpoints", Array(Struct([
                Field("port", "int32", "1+"),
                Field("host", "string", "1+"),
                Field("listener", "string", "3+"),
                Field("security_protocol", "int16", "1+"),
            ])), "1+"),
            Field("rack", "string", "2+", nullable="0+"),
        ]))),
    ],
)

UPDATE_METADATA_RESPONSE = Message(
    ApiKey.UPDATE_METADATA, "UpdateMetadataResponse", "response", (0, 7), 6,
    [
        Field("error_code", "int16"),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request's one error code."""
    return {"error_code": code}


UPDATE_METADATA_API = ApiSchema(
    UPDATE_METADATA_REQUEST,
    UPDATE_METADATA_RESPONSE,
    versions=(0, 7),
    error_response=error_response,
)
