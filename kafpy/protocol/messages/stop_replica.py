"""StopReplica (key 5): the controller tells a broker to stop (and maybe delete) replicas.

Removed from Kafka in 4.0 (KRaft); declared from Kafka 3.x's definitions (versions 0-3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

STOP_REPLICA_REQUEST = Message(
    ApiKey.STOP_REPLICA, "StopReplicaRequest", "request", (0, 3), 2,
    [
        Field("controller_id", "int32"),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", "1+", default=-1),
        Field("delete_partitions", "bool", "0-2"),
        Field("ungrouped_partitions", Array(Struct([
            Field("topic_name", "string", "0"),
            Field("partition_index", "int32", "0"),
        ])), "0"),
        Field("topics", Array(Struct([
            Field("name", "string", "1-2"),
            Field("partition_indexes", Array("int32"), "1-2"),
        ])), "1-2"),
        Field("topic_states", Array(Struct([
            Field("topic_name", "string", "3+"),
            Field("partition_states", Array(Struct([
                Field("partition_index", "int32", "3+"),
                Field("leader_epoch", "int32", "3+", default=-1),
                Field("delete_partition", "bool", "3+"),
            ])), "3+"),
        ])), "3+"),
    ],
)

STOP_REPLICA_RESPONSE = Message(
    ApiKey.STOP_REPLICA, "StopReplicaResponse", "response", (0, 3), 2,
    [
        Field("error_code", "int16"),
        Field("partition_errors", Array(Struct([
            Field("topic_name", "string"),
            Field("partition_index", "int32"),
            Field("error_code", "int16"),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request (v0 ungrouped, v1-2 by topic, v3 with states)
    answered with `code`."""
    parts = [(p["topic_name"], p["partition_index"]) for p in body.get("ungrouped_partitions") or ()]
    for t in body.get("topics") or ():
        parts += [(t["name"], p) for p in t.get("partition_indexes") or ()]
    for t in body.get("topic_states") or ():
        parts += [(t["topic_name"], s["partition_index"]) for s in t.get("partition_states") or ()]
    return {"error_code": code, "partition_errors": [
        {"topic_name": topic, "partition_index": p, "error_code": code} for topic, p in parts]}  # fmt: skip


STOP_REPLICA_API = ApiSchema(
    STOP_REPLICA_REQUEST,
    STOP_REPLICA_RESPONSE,
    versions=(0, 3),
    error_response=error_response,
)
