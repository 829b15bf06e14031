"""AlterReplicaLogDirs (key 34): move replicas of a broker into other log dirs of it.

Versions 0-2 as Kafka 2.8 serves them (v1 is v0; v2 is flexible, KAFKA-10729 in 2.8).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

ALTER_REPLICA_LOG_DIRS_REQUEST = Message(
    ApiKey.ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirsRequest", "request", (0, 2), 2,
    [
        Field("dirs", Array(Struct([
            Field("path", "string"),
            Field("topics", Array(Struct([
                Field("name", "string"),
                Field("partitions", Array("int32")),
            ]))),
        ]))),
    ],
)

ALTER_REPLICA_LOG_DIRS_RESPONSE = Message(
    ApiKey.ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirsResponse", "response", (0, 2), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("topic_name", "string"),
            Field("partitions", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
            ]))),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of every dir of the request answered with `code`."""
    return {"throttle_time_ms": 0, "results": [
        {"topic_name": t["name"], "partitions": [
            {"partition_index": p, "error_code": code} for p in t["partitions"]]}
        for d in body.get("dirs") or () for t in d.get("topics") or ()]}  # fmt: skip


ALTER_REPLICA_LOG_DIRS_API = ApiSchema(
    ALTER_REPLICA_LOG_DIRS_REQUEST,
    ALTER_REPLICA_LOG_DIRS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
