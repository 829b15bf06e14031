"""DelayedProduce: an acks=all produce that waits until the ISR has the appended records.

After the leader appended, each partition needs its high watermark to reach the end of
what was appended (every ISR member has it). Moves of the high watermark call
`check_and_complete`; a partition whose leadership moved or whose ISR fell below
min.insync.replicas answers with an error; what is still missing when the request's
timeout runs out answers REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.server.delayed_partition_operation import DelayedPartitionOperation, PartitionStatus


@dataclass(slots=True)
class ProducePartitionStatus(PartitionStatus):
    """The offset the ISR must reach and the partition's answer (a Produce partition dict)."""


class DelayedProduce(DelayedPartitionOperation):
    """Waits for each partition's high watermark to reach its `required_offset`.

    `check_partition(tp, required_offset)` returns (done, error code): done when the
    high watermark reached the offset or the partition can no longer get there.
    """

    def __init__(
        self,
        timeout_ms: int,
        statuses: dict[TopicPartition, ProducePartitionStatus],
        check_partition: Callable[[TopicPartition, int], tuple[bool, int]],
        on_complete: Callable[[dict[TopicPartition, dict[str, Any]]], None],
    ) -> None:
        super().__init__(timeout_ms, statuses, on_complete)
        self._check = check_partition

    def try_complete_partition(self, tp: TopicPartition, status: PartitionStatus) -> bool:
        done, error = self._check(tp, status.required_offset)
        if done:
            status.response["error_code"] = error
        return done
