"""DelayedDeleteRecords: a DeleteRecords that waits until every replica moved its log start.

The leader moves its own log start offset at once; the followers move theirs when a fetch
response tells them the leader's, and report it in their next Fetch. The partition's low
watermark (the smallest log start offset over the leader and its live followers) reaching
the requested offset completes the partition. Moves of the low watermark call
`check_and_complete`; a partition whose leadership moved answers NOT_LEADER_OR_FOLLOWER;
what is still missing when the request's timeout runs out answers REQUEST_TIMED_OUT with
the low watermark the leader reached alone (as Kafka). `delete_records_on_leaders` is
ReplicaManager's deleteRecords: the leader's move, then the wait in the purgatory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.server.delayed_partition_operation import DelayedPartitionOperation, PartitionStatus

if TYPE_CHECKING:
    from kafpy.server.replica_manager import ReplicaManager


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


async def delete_records_on_leaders(
    rm: ReplicaManager, timeout_ms: int, offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, tuple[int, int]]:
    """DeleteRecords on the partitions `rm`'s broker leads: tp -> (low watermark, error code).

    The leader moves its log start offset at once; the answer waits (in the DeleteRecords
    purgatory) until every live replica moved its own, i.e. until the low watermark reaches
    the requested offset, or answers REQUEST_TIMED_OUT after `timeout_ms`.
    """
    statuses: dict[TopicPartition, DeleteRecordsPartitionStatus] = {}
    for tp, offset in offsets.items():
        response: dict[str, Any] = {
            "partition_index": tp.partition,
            "low_watermark": -1,
            "error_code": Errors.NONE,
        }
        required = -1
        try:
            partition = rm.get_partition_or_error(tp)
            required, response["low_watermark"] = partition.delete_records_on_leader(
                offset, rm.broker_alive
            )
        except KafkaError as e:
            response["error_code"] = error_code_of(e)
        except Exception as e:  # a bug or an I/O failure: the partition answers, the broker lives
            rm.log.exception("Error processing delete records operation on partition %s", tp)
            response["error_code"] = Errors.UNKNOWN_SERVER_ERROR
            response["error_message"] = str(e)
        statuses[tp] = DeleteRecordsPartitionStatus(required, response)
        if response["error_code"] == Errors.NONE:
            rm.complete_delayed_requests(tp)
    if all(s.response["error_code"] != Errors.NONE for s in statuses.values()):
        return {
            tp: (s.response["low_watermark"], s.response["error_code"])
            for tp, s in statuses.items()
        }
    future: asyncio.Future[dict[TopicPartition, dict[str, Any]]] = (
        asyncio.get_running_loop().create_future()
    )

    def done(answer: dict[TopicPartition, dict[str, Any]]) -> None:
        if not future.done():
            future.set_result(answer)

    def low_watermark(tp: TopicPartition) -> tuple[int, int]:
        partition = rm.partitions.get(tp)
        if partition is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
        if not partition.is_leader or partition.log is None:
            return Errors.NOT_LEADER_OR_FOLLOWER, -1
        return Errors.NONE, partition.low_watermark_if_leader(rm.broker_alive)

    op = DelayedDeleteRecords(timeout_ms, statuses, low_watermark, done)
    rm.delayed_delete_records_purgatory.try_complete_else_watch(op, list(offsets))
    answer = await future
    return {tp: (r["low_watermark"], r["error_code"]) for tp, r in answer.items()}
