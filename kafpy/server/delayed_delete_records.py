"""DelayedDeleteRecords: a DeleteRecords that waits until every replica moved its log start.

The leader moves its own log start offset at once; the followers move theirs when a fetch
response tells them the leader's, and report it in their next Fetch. The partition's low
watermark (the smallest log start offset over the leader and its live followers) reaching
the requested offset completes the partition. Moves of the low watermark call
`check_and_complete`; a partition whose leadership moved answers NOT_LEADER_OR_FOLLOWER;
what is still missing when the request's timeout runs out answers REQUEST_TIMED_OUT with
the low watermark the leader reached alone (as Kafka).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.server.delayed_partition_operation import DelayedPartitionOperation, PartitionStatus


@dataclass(slots=True)
class DeleteRecordsPartitionStatus(PartitionStatus):
    """The offset the low watermark must reach and the partition's answer
    (a DeleteRecords partition dict: partition_index, low_watermark, error_code)."""


class DelayedDeleteRecords(DelayedPartitionOperation):
    """Waits for each partition's low watermark to reach its `required_offset`.

    `check_partition(tp)` returns (error code, low watermark): the partition's current
    low watermark with NONE while this broker leads it, or an error (and -1).
    """

    def __init__(
        self,
        timeout_ms: int,
        statuses: dict[TopicPartition, DeleteRecordsPartitionStatus],
        check_partition: Callable[[TopicPartition], tuple[int, int]],
        on_complete: Callable[[dict[TopicPartition, dict[str, Any]]], None],
    ) -> None:
        super().__init__(timeout_ms, statuses, on_complete)
        self._check = check_partition

    def try_complete_partition(self, tp: TopicPartition, status: PartitionStatus) -> bool:
        error, low_watermark = self._check(tp)
        if error != Errors.NONE or low_watermark >= status.required_offset:
            status.response["error_code"] = error
            status.response["low_watermark"] = low_watermark
            return True
        return False
