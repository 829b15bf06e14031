"""The AlterPartitionReassignments and ListPartitionReassignments APIs (KIP-455) of a
broker: request bodies to the controller's calls and the answers back to responses, as
Kafka 2.8's KafkaApis does. Only the controller serves them; another broker answers
NOT_CONTROLLER for the request (admin clients then look the controller up again)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.zk_data import ReplicaAssignment
from kafpy.protocol.errors import Errors


class ReassigningController(Protocol):
    """What the APIs need of KafkaController."""

    @property
    def is_active(self) -> bool: ...

    async def alter_partition_reassignments(
        self, reassignments: dict[TopicPartition, list[int] | None], timeout_s: float = ...
    ) -> tuple[int, dict[TopicPartition, tuple[int, str | None]]]: ...

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None, timeout_s: float = ...
    ) -> tuple[int, dict[TopicPartition, ReplicaAssignment]]: ...


def _message(code: int, message: str | None) -> str | None:
    # Kafka's ApiError(error) carries the error's default message; ApiError.NONE none
    if code == Errors.NONE:
        return None
    return message if message is not None else Errors.for_code(code).message


def _top_level(code: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": _message(code, None)}


async def alter_partition_reassignments(
    controller: ReassigningController, body: Mapping[str, Any]
) -> dict[str, Any]:
    """AlterPartitionReassignments: per partition, NONE when the reassignment started
    (or was cancelled), else INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS or
    UNKNOWN_TOPIC_OR_PARTITION with Kafka's message."""
    if not controller.is_active:
        return {**_top_level(Errors.NOT_CONTROLLER), "responses": []}
    reassignments: dict[TopicPartition, list[int] | None] = {}
    for topic in body.get("topics") or ():
        for p in topic.get("partitions") or ():
            replicas = p.get("replicas")
            reassignments[TopicPartition(topic["name"], int(p["partition_index"]))] = (
                None if replicas is None else [int(r) for r in replicas]
            )
    timeout_s = max(0, int(body.get("timeout_ms", 60000))) / 1000
    try:
        code, results = await controller.alter_partition_reassignments(reassignments, timeout_s)
    except TimeoutError:
        return {**_top_level(Errors.REQUEST_TIMED_OUT), "responses": []}
    if code != Errors.NONE:
        return {**_top_level(code), "responses": []}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, (error, message) in results.items():
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "error_code": error,
                "error_message": _message(error, message),
            }
        )
    return {
        **_top_level(Errors.NONE),
        "responses": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


async def list_partition_reassignments(
    controller: ReassigningController, body: Mapping[str, Any]
) -> dict[str, Any]:
    """ListPartitionReassignments: the requested partitions (null topics: every one) that
    are being reassigned, with their replicas, adding and removing replicas."""
    if not controller.is_active:
        return {**_top_level(Errors.NOT_CONTROLLER), "topics": []}
    topics = body.get("topics")
    partitions = (
        None
        if topics is None
        else [
            TopicPartition(t["name"], int(p))
            for t in topics
            for p in t.get("partition_indexes", ())
        ]
    )
    timeout_s = max(0, int(body.get("timeout_ms", 60000))) / 1000
    try:
        code, ongoing = await controller.list_partition_reassignments(partitions, timeout_s)
    except TimeoutError:
        return {**_top_level(Errors.REQUEST_TIMED_OUT), "topics": []}
    if code != Errors.NONE:
        return {**_top_level(code), "topics": []}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, a in sorted(ongoing.items()):
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "replicas": list(a.replicas),
                "adding_replicas": list(a.adding_replicas),
                "removing_replicas": list(a.removing_replicas),
            }
        )
    return {
        **_top_level(Errors.NONE),
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
