"""DelayedDeleteRecords on its own: per-partition completion by low watermark or error,
REQUEST_TIMED_OUT until then, and the answer built once."""

from __future__ import annotations

from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.server.delayed_delete_records import DelayedDeleteRecords, DeleteRecordsPartitionStatus

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def status(
    tp: TopicPartition, required: int, low: int, error: int = 0
) -> DeleteRecordsPartitionStatus:
    return DeleteRecordsPartitionStatus(
        required, {"partition_index": tp.partition, "low_watermark": low, "error_code": error}
    )


def test_completes_when_every_partition_reached_its_offset_or_failed() -> None:
    lows = {A: (0, 1), B: (0, 0)}
    answers: list[dict[TopicPartition, dict[str, Any]]] = []
    op = DelayedDeleteRecords(
        1000, {A: status(A, 3, 1), B: status(B, 5, 0)}, lambda tp: lows[tp], answers.append
    )
    assert op.statuses[A].response["error_code"] == 7  # a timeout until confirmed
    assert op.try_complete() is False
    lows[A] = (0, 3)
    assert op.try_complete() is False and not op.statuses[A].acks_pending
    lows[A] = (0, 1)  # a partition once satisfied stays satisfied
    lows[B] = (6, -1)  # NOT_LEADER_OR_FOLLOWER
    assert op.try_complete() is True
    assert answers == [{
        A: {"partition_index": 0, "low_watermark": 3, "error_code": 0},
        B: {"partition_index": 1, "low_watermark": -1, "error_code": 6},
    }]  # fmt: skip


def test_partitions_that_failed_on_the_leader_do_not_wait() -> None:
    answers: list[dict[TopicPartition, dict[str, Any]]] = []
    op = DelayedDeleteRecords(
        1000, {A: status(A, -1, -1, error=1)}, lambda tp: (0, 0), answers.append
    )
    assert op.try_complete() is True
    assert answers == [{A: {"partition_index": 0, "low_watermark": -1, "error_code": 1}}]


def test_expiry_answers_request_timed_out_with_the_low_watermark_so_far() -> None:
    answers: list[dict[TopicPartition, dict[str, Any]]] = []
    op = DelayedDeleteRecords(1000, {A: status(A, 3, 1)}, lambda tp: (0, 2), answers.append)
    assert op.try_complete() is False
    op._expire()
    assert answers == [{A: {"partition_index": 0, "low_watermark": 1, "error_code": 7}}]
    assert op.force_complete() is False  # once
