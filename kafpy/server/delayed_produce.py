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

from kafpy.common.delayed_operation import DelayedOperation
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors


@dataclass(slots=True)
class ProducePartitionStatus:
    """The offset the ISR must reach and the partition's answer (a Produce partition dict)."""

    required_offset: int
    response: dict[str, Any]
    acks_pending: bool = True


class DelayedProduce(DelayedOperation):
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
        super().__init__(timeout_ms)
        self.statuses = statuses
        self._check = check_partition
        self._callback = on_complete
        for status in statuses.values():
            if status.response["error_code"] != Errors.NONE:
                status.acks_pending = False
            else:
                # until the ISR confirms, the answer for this partition is a timeout
                status.response["error_code"] = Errors.REQUEST_TIMED_OUT

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if not status.acks_pending:
                continue
            done, error = self._check(tp, status.required_offset)
            if done:
                status.acks_pending = False
                status.response["error_code"] = error
        if not any(s.acks_pending for s in self.statuses.values()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._callback({tp: s.response for tp, s in self.statuses.items()})
