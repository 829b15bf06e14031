"""DelayedPartitionOperation: a request that waits until each of its partitions reached an
offset (the skeleton DelayedProduce and DelayedDeleteRecords share).

Each partition has a `PartitionStatus`: the offset it must reach and its answer (a response
partition dict). A partition answered with an error at once is not waited for; the others
answer REQUEST_TIMED_OUT until a check completes them, so whatever is still missing when the
delay runs out answers REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.common.delayed_operation import DelayedOperation
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors

__all__ = ["DelayedPartitionOperation", "PartitionStatus"]


@dataclass(slots=True)
class PartitionStatus:
    """The offset a partition must reach and its answer (a response partition dict)."""

    required_offset: int
    response: dict[str, Any]
    acks_pending: bool = True


class DelayedPartitionOperation(DelayedOperation):
    """Waits for every partition of `statuses` to be completed by `try_complete_partition`.

    `on_complete` is called once with each partition's answer.
    """

    def __init__(
        self,
        timeout_ms: int,
        statuses: Mapping[TopicPartition, PartitionStatus],
        on_complete: Callable[[dict[TopicPartition, dict[str, Any]]], None],
    ) -> None:
        super().__init__(timeout_ms)
        self.statuses = statuses
        self._callback = on_complete
        for status in statuses.values():
            if status.response["error_code"] != Errors.NONE:
                status.acks_pending = False
            else:
                # until the partition is confirmed, its answer is a timeout
                status.response["error_code"] = Errors.REQUEST_TIMED_OUT

    @abstractmethod
    def try_complete_partition(self, tp: TopicPartition, status: PartitionStatus) -> bool:
        """Check one waiting partition; if it is done, write its answer into
        `status.response` and return True."""

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if status.acks_pending and self.try_complete_partition(tp, status):
                status.acks_pending = False
        if not any(s.acks_pending for s in self.statuses.values()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._callback({tp: s.response for tp, s in self.statuses.items()})
