"""DelayedProduce on its own: partitions answered with an error are not waited for, the
others answer REQUEST_TIMED_OUT until the ISR has their records, and the answer is built
once."""

from __future__ import annotations

from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.server.delayed_produce import DelayedProduce, ProducePartitionStatus

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def status(required: int, error: int = Errors.NONE) -> ProducePartitionStatus:
    return ProducePartitionStatus(required, {"index": 0, "error_code": error, "base_offset": 0})


def test_completes_when_every_waiting_partition_is_replicated_or_failed() -> None:
    replicated: dict[TopicPartition, tuple[bool, int]] = {A: (False, 0), B: (False, 0)}
    checked: list[TopicPartition] = []

    def check(tp: TopicPartition, required: int) -> tuple[bool, int]:
        checked.append(tp)
        return replicated[tp]

    answers: list[dict[TopicPartition, dict[str, Any]]] = []
    statuses = {A: status(5), B: status(9), C: status(-1, Errors.NOT_LEADER_OR_FOLLOWER)}
    op = DelayedProduce(1000, statuses, check, answers.append)
    assert op.statuses[A].response["error_code"] == Errors.REQUEST_TIMED_OUT
    assert op.try_complete() is False
    assert C not in checked  # answered at once, never waited for
    replicated[A] = (True, Errors.NONE)
    replicated[B] = (True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert op.try_complete() is True
    assert [{tp: r["error_code"] for tp, r in a.items()} for a in answers] == [
        {
            A: Errors.NONE,
            B: Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            C: Errors.NOT_LEADER_OR_FOLLOWER,
        }
    ]
    assert op.try_complete() is False and len(answers) == 1


def test_what_is_missing_at_expiry_is_a_timeout() -> None:
    answers: list[dict[TopicPartition, dict[str, Any]]] = []
    op = DelayedProduce(1000, {A: status(5)}, lambda tp, required: (False, 0), answers.append)
    op.force_complete()
    assert answers[0][A]["error_code"] == Errors.REQUEST_TIMED_OUT
