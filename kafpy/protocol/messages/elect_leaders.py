"""ElectLeaders (key 43): trigger preferred or unclean leader election for partitions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

ELECT_LEADERS_REQUEST = Message(
    ApiKey.ELECT_LEADERS, "ElectLeadersRequest", "request", (0, 2), 2,
    [
        Field("election_type", "int8", "1+"),
        Field("topic_partitions", Array(Struct([
            Field("topic", "string"),
            Field("partitions", Array("int32")),
        ])), nullable="0+"),
        Field("timeout_ms", "int32", default=60000),
    ],
)

ELECT_LEADERS_RESPONSE = Message(
    ApiKey.ELECT_LEADERS, "ElectLeadersResponse", "response", (0, 2), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16", "1+"),
        Field("replica_election_results", Array(Struct([
            Field("topic", "string"),
            Field("partition_result", Array(Struct([
                Field("partition_id", "int32"),
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+"),
            ]))),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request and each partition it names answered with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "replica_election_results": [
        {"topic": t["topic"], "partition_result": [{"partition_id": p, "error_code": code,
                                                    "error_message": message} for p in t["partitions"]]}
        for t in body.get("topic_partitions") or ()]}  # fmt: skip


ELECT_LEADERS_API = ApiSchema(
    ELECT_LEADERS_REQUEST,
    ELECT_LEADERS_RESPONSE,
    versions=(0, 2),
    error_response=error_response,
)
