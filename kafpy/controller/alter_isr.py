"""AlterIsr processing (KIP-497): the controller's side of a leader's ISR change.

As Kafka 2.8's `KafkaController.processAlterIsr`, run as the `AlterIsrReceived` event on
the controller's queue. The request is refused as a whole when this broker is not the
controller (NOT_CONTROLLER) or the requester is not live at the epoch it sent
(STALE_BROKER_EPOCH). Each partition is then checked against the controller's view: an
unknown partition is UNKNOWN_TOPIC_OR_PARTITION, an older leader epoch FENCED_LEADER_EPOCH,
a requester that is not the partition's leader NOT_LEADER_OR_FOLLOWER (a kafpy safeguard:
Kafka 2.8 would write the requester in as leader), and a state already as asked is answered
as it is. The rest are written to ZooKeeper at the partition's znode version (the
partition epoch): a version that moved on is INVALID_UPDATE_VERSION. UpdateMetadata then
goes to every live broker for every partition in the request (no LeaderAndIsr: the leader
learns its new state from the answer), and a reassignment waiting for a replica to join
the ISR may complete.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_context import ControllerContext
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.protocol.errors import Errors

# a partition's outcome: the error code, or its state as now written
PartitionResult = int | LeaderAndIsr


@dataclass(frozen=True)
class AlterIsrResult:
    """A top-level error code (NONE when the partitions were looked at) and the outcome of
    each partition."""

    error_code: int
    partitions: dict[TopicPartition, PartitionResult]


def alter_isr_request_items(body: Mapping[str, Any]) -> dict[TopicPartition, LeaderAndIsr]:
    """The ISR each partition of an AlterIsr request asks for, with the requester as
    leader and the version the leader knows (Kafka's KafkaController.alterIsrs)."""
    broker_id = int(body["broker_id"])
    items: dict[TopicPartition, LeaderAndIsr] = {}
    for topic in body.get("topics") or []:
        for p in topic["partitions"]:
            items[TopicPartition(topic["name"], p["partition_index"])] = LeaderAndIsr(
                broker_id, p["leader_epoch"], tuple(p["new_isr"]), p["current_isr_version"]
            )
    return items


def alter_isr_response(result: AlterIsrResult) -> dict[str, object]:
    """The AlterIsr response body for `result`, partitions grouped by topic."""
    topics: dict[str, list[dict[str, object]]] = {}
    for tp, outcome in result.partitions.items():
        if isinstance(outcome, LeaderAndIsr):
            part: dict[str, object] = {
                "partition_index": tp.partition, "error_code": Errors.NONE,
                "leader_id": outcome.leader, "leader_epoch": outcome.leader_epoch,
                "isr": list(outcome.isr), "current_isr_version": outcome.zk_version,
            }  # fmt: skip
        else:
            part = {"partition_index": tp.partition, "error_code": outcome, "isr": []}
        topics.setdefault(tp.topic, []).append(part)
    return {
        "throttle_time_ms": 0,
        "error_code": result.error_code,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
    }


class AlterIsrProcessor:
    """Validates AlterIsr requests against the controller's context and writes the ISRs
    that pass to ZooKeeper."""

    def __init__(
        self,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        send_update_metadata_request: Callable[[Iterable[int], Iterable[TopicPartition]], None],
        maybe_complete_reassignment: Callable[[TopicPartition], Awaitable[None]],
        log: logging.LoggerAdapter[logging.Logger],
    ) -> None:
        self.context = context
        self.zk_client = zk_client
        self.send_update_metadata_request = send_update_metadata_request
        self.maybe_complete_reassignment = maybe_complete_reassignment
        self.log = log

    def _check_broker(self, broker_id: int, broker_epoch: int) -> int:
        current = self.context.live_broker_epoch(broker_id)
        if current == -1:
            self.log.info("Ignoring AlterIsr due to unknown broker %d", broker_id)
            return Errors.STALE_BROKER_EPOCH
        if current != broker_epoch:
            self.log.info(
                "Ignoring AlterIsr due to stale broker epoch %d for broker %d",
                broker_epoch,
                broker_id,
            )
            return Errors.STALE_BROKER_EPOCH
        return Errors.NONE

    def _validate(
        self,
        isrs: Mapping[TopicPartition, LeaderAndIsr],
        results: dict[TopicPartition, PartitionResult],
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """The partitions to write; the others get their outcome in `results`."""
        to_write: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, new in isrs.items():
            current_state = self.context.partition_leadership_info.get(tp)
            if current_state is None:
                results[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            current = current_state.leader_and_isr
            if new.leader_epoch < current.leader_epoch:
                results[tp] = Errors.FENCED_LEADER_EPOCH
            elif new.leader != current.leader:
                self.log.info(
                    "Ignoring AlterIsr from broker %d for partition %s: its leader is %d",
                    new.leader, tp, current.leader,
                )  # fmt: skip
                results[tp] = Errors.NOT_LEADER_OR_FOLLOWER
            elif (new.leader, new.leader_epoch, new.isr) == (
                current.leader, current.leader_epoch, current.isr,
            ):  # fmt: skip
                results[tp] = current  # already as asked
            else:
                to_write[tp] = new
        return to_write

    async def process_alter_isr(
        self,
        is_active: bool,
        broker_id: int,
        broker_epoch: int,
        isrs: Mapping[TopicPartition, LeaderAndIsr],
    ) -> AlterIsrResult:
        """Process one AlterIsr request (ControllerMovedError propagates: the caller
        resigns and the leader retries against the new controller)."""
        if not is_active:
            return AlterIsrResult(Errors.NOT_CONTROLLER, {})
        error = self._check_broker(broker_id, broker_epoch)
        if error != Errors.NONE:
            return AlterIsrResult(error, {})
        ctx = self.context
        results: dict[TopicPartition, PartitionResult] = {}
        to_write = self._validate(isrs, results)
        if to_write:
            self.log.debug("Updating ISRs for partitions: %s.", ",".join(map(str, to_write)))
            written = await self.zk_client.update_leader_and_isr(
                to_write, ctx.epoch, ctx.epoch_zk_version
            )
            for tp, outcome in written.finished.items():
                if isinstance(outcome, Exception):
                    self.log.error("Failed to update ISR for partition %s", tp, exc_info=outcome)
                    results[tp] = Errors.UNKNOWN_SERVER_ERROR
                    continue
                self.log.debug(
                    "ISR for partition %s updated to [%s] and zkVersion updated to [%d]",
                    tp, ",".join(map(str, outcome.isr)), outcome.zk_version,
                )  # fmt: skip
                ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                results[tp] = outcome
            for tp in written.partitions_to_retry:
                self.log.info(
                    "Failed to update ISR to %s for partition %s, bad ZK version.", to_write[tp], tp
                )
                results[tp] = Errors.INVALID_UPDATE_VERSION
        self.send_update_metadata_request(sorted(ctx.live_or_shutting_down_broker_ids), list(isrs))
        for tp, answer in results.items():
            if isinstance(answer, LeaderAndIsr) and tp in ctx.partitions_being_reassigned:
                await self.maybe_complete_reassignment(tp)
        return AlterIsrResult(Errors.NONE, results)
