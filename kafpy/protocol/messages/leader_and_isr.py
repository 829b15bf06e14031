"""LeaderAndIsr (key 4): the controller tells a broker which partitions it leads or follows.

Removed from Kafka in 4.0 (KRaft); declared from Kafka 3.x's definitions (versions 0-6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

# The per-partition state; v0-1 carry the topic name in it, v2+ group partitions by topic.
PARTITION_STATE = Struct([
    Field("topic_name", "string", "0-1"),
    Field("partition_index", "int32"),
    Field("controller_epoch", "int32"),
    Field("leader", "int32"),
    Field("leader_epoch", "int32"),
    Field("isr", Array("int32")),
    Field("zk_version", "int32"),
    Field("replicas", Array("int32")),
    Field("adding_replicas", Array("int32"), "3+"),
    Field("removing_replicas", Array("int32"), "3+"),
    Field("is_new", "bool", "1+", default=False),
    Field("leader_recovery_state", "int8", "6+", default=0),
])

LEADER_AND_ISR_REQUEST = Message(
    ApiKey.LEADER_AND_ISR, "LeaderAndIsrRequest", "request", (0, 6), 4,
    [
        Field("controller_id", "int32"),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", "2+", default=-1),
        Field("type", "int8", "5+"),
        Field("ungrouped_partition_states", Array(PARTITION_STATE), "0-1"),
        Field("topic_states", Array(Struct([
            Field("topic_name", "string", "2+"),
            Field("topic_id", "uuid", "5+"),
            Field("partition_states", Array(PARTITION_STATE), "2+"),
        ])), "2+"),
        Field("live_leaders", Array(Struct([
            Field("broker_id", "int32"),
            Field("host_name", "string"),
            Field("port", "int32"),
        ]))),
    ],
)

PARTITION_ERROR = Struct([
    Field("topic_name", "string", "0-4"),
    Field("partition_index", "int32"),
    Field("error_code", "int16"),
])

LEADER_AND_ISR_RESPONSE = Message(
    ApiKey.LEADER_AND_ISR, "LeaderAndIsrResponse", "response", (0, 6), 4,
    [
        Field("error_code", "int16"),
        Field("partition_errors", Array(PARTITION_ERROR), "0-4"),
        Field("topics", Array(Struct([
            Field("topic_id", "uuid", "5+"),
            Field("partition_errors", Array(PARTITION_ERROR), "5+"),
        ])), "5+"),
    ],
)


def partition_states(body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(topic, partition state) of every partition of a LeaderAndIsr request, any version."""
    out: list[tuple[str, Mapping[str, Any]]] = [
        (s["topic_name"], s) for s in body.get("ungrouped_partition_states") or ()
    ]
    for t in body.get("topic_states") or ():
        out.extend((t["topic_name"], s) for s in t.get("partition_states") or ())
    return out


def versioned_response(body: Mapping[str, Any], response: Body, version: int) -> Body:
    """A response of flat `partition_errors` as `version` carries it: from v5 on, grouped per
    topic and named by topic id (those of the request), as Kafka 2.8 answers."""
    if version < 5:
        return response
    ids = {t["topic_name"]: t.get("topic_id") for t in body.get("topic_states") or ()}
    by_topic: dict[str, list[Body]] = {}
    for e in response["partition_errors"]:
        by_topic.setdefault(e["topic_name"], []).append(
            {"partition_index": e["partition_index"], "error_code": e["error_code"]}
        )
    return {
        "error_code": response["error_code"],
        "topics": [
            {"topic_id": ids.get(topic), "partition_errors": errors}
            for topic, errors in by_topic.items()
        ],
    }


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    errors = [
        {"topic_name": topic, "partition_index": s["partition_index"], "error_code": code}
        for topic, s in partition_states(body)
    ]
    return versioned_response(body, {"error_code": code, "partition_errors": errors}, version)


LEADER_AND_ISR_API = ApiSchema(
    LEADER_AND_ISR_REQUEST,
    LEADER_AND_ISR_RESPONSE,
    versions=(0, 5),
    error_response=error_response,
)
