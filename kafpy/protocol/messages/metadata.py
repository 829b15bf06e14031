"""Metadata (key 3): brokers, controller, topics and partition leaders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

# Authorized-operations fields hold a 32-bit set; this value means "not requested".
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

METADATA_REQUEST = Message(
    ApiKey.METADATA, "MetadataRequest", "request", (0, 13), 9,
    [
        Field("topics", Array(Struct([
            Field("topic_id", "uuid", "10+"),
            Field("name", "string", nullable="10+"),
        ])), nullable="1+"),
        Field("allow_auto_topic_creation", "bool", "4+", default=True),
        Field("include_cluster_authorized_operations", "bool", "8-10"),
        Field("include_topic_authorized_operations", "bool", "8+"),
    ],
)

METADATA_RESPONSE = Message(
    ApiKey.METADATA, "MetadataResponse", "response", (0, 13), 9,
    [
        Field("throttle_time_ms", "int32", "3+"),
        Field("brokers", Array(Struct([
            Field("node_id", "int32"),
            Field("host", "string"),
            Field("port", "int32"),
            Field("rack", "string", "1+", nullable="1+", default=None),
        ]))),
        Field("cluster_id", "string", "2+", nullable="2+", default=None),
        Field("controller_id", "int32", "1+", default=-1),
        Field("topics", Array(Struct([
            Field("error_code", "int16"),
            Field("name", "string", nullable="12+"),
            Field("topic_id", "uuid", "10+"),
            Field("is_internal", "bool", "1+", default=False),
            Field("partitions", Array(Struct([
                Field("error_code", "int16"),
                Field("partition_index", "int32"),
                Field("leader_id", "int32"),
                Field("leader_epoch", "int32", "7+", default=-1),
                Field("replica_nodes", Array("int32")),
                Field("isr_nodes", Array("int32")),
                Field("offline_replicas", Array("int32"), "5+"),
            ]))),
            Field("topic_authorized_operations", "int32", "8+",
                  default=AUTHORIZED_OPERATIONS_OMITTED),
        ]))),
        Field("cluster_authorized_operations", "int32", "8-10",
              default=AUTHORIZED_OPERATIONS_OMITTED),
        Field("error_code", "int16", "13+"),
    ],
)


def topic_error(name: str, code: int) -> Body:
    """One topic of a Metadata response failing with `code`."""
    return {"error_code": code, "name": name, "is_internal": False, "partitions": []}


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every topic named by the request answered with `code`, no brokers."""
    return {
        "throttle_time_ms": 0,
        "brokers": [],
        "cluster_id": None,
        "controller_id": -1,
        "topics": [topic_error(t.get("name") or "", code) for t in body.get("topics") or ()],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


METADATA_API = ApiSchema(
    METADATA_REQUEST,
    METADATA_RESPONSE,
    versions=(0, 11),
    error_response=error_response,
)
