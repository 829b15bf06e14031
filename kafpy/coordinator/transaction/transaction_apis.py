"""TransactionApis: the transactional producer's request and response bodies, translated to
TransactionCoordinator calls (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn), with Kafka 2.8 KafkaApis' per-version error mapping:
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH to versions that predate it
(InitProducerId < 4, the others < 2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafpy.common.topic import GROUP_METADATA_TOPIC_NAME
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from kafpy.protocol.errors import Errors


def _fenced_for(version: int, first_fenced_version: int, error: int) -> int:
    if error == Errors.PRODUCER_FENCED and version < first_fenced_version:
        return int(Errors.INVALID_PRODUCER_EPOCH)
    return error


class TransactionApis:
    """Request bodies in, response bodies out, for the transactional producer's APIs.

    `partition_exists(tp)`: whether the cluster has the partition (AddPartitionsToTxn answers
    UNKNOWN_TOPIC_OR_PARTITION for one it has not, OPERATION_NOT_ATTEMPTED for the rest).
    `group_partition_for(group_id)`: the group's __consumer_offsets partition.
    """

    def __init__(
        self,
        coordinator: TransactionCoordinator,
        partition_exists: Callable[[TopicPartition], bool],
        group_partition_for: Callable[[str], int],
    ) -> None:
        self.coordinator = coordinator
        self.partition_exists = partition_exists
        self.group_partition_for = group_partition_for

    async def init_producer_id(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        pid, epoch = body.get("producer_id", -1), body.get("producer_epoch", -1)
        expected = None if pid == -1 and epoch == -1 else (pid, epoch)
        result = await self.coordinator.handle_init_producer_id(
            body.get("transactional_id"), body["transaction_timeout_ms"], expected,
            enable_2pc=bool(body.get("enable2_pc")),
            keep_prepared_txn=bool(body.get("keep_prepared_txn")),
        )  # fmt: skip
        return {
            "throttle_time_ms": 0,
            "error_code": _fenced_for(version, 4, result.error),
            "producer_id": result.producer_id,
            "producer_epoch": result.producer_epoch,
            "ongoing_txn_producer_id": result.ongoing_txn_producer_id,
            "ongoing_txn_producer_epoch": result.ongoing_txn_producer_epoch,
        }

    async def add_partitions_to_txn(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        partitions = [
            TopicPartition(t["name"], p)
            for t in body["v3_and_below_topics"]
            for p in t["partitions"]
        ]
        missing = {tp for tp in partitions if not self.partition_exists(tp)}
        if missing:
            codes: dict[TopicPartition, int] = {
                tp: Errors.UNKNOWN_TOPIC_OR_PARTITION
                if tp in missing
                else Errors.OPERATION_NOT_ATTEMPTED
                for tp in partitions
            }
        else:
            error = await self.coordinator.handle_add_partitions_to_transaction(
                body["v3_and_below_transactional_id"],
                body["v3_and_below_producer_id"],
                body["v3_and_below_producer_epoch"],
                set(partitions),
            )
            codes = dict.fromkeys(partitions, _fenced_for(version, 2, error))
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp, code in codes.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "partition_error_code": int(code)}
            )
        return {
            "throttle_time_ms": 0,
            "results_by_topic_v3_and_below": [
                {"name": t, "results_by_partition": rs} for t, rs in by_topic.items()
            ],
        }

    async def add_offsets_to_txn(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, self.group_partition_for(body["group_id"]))
        error = await self.coordinator.handle_add_partitions_to_transaction(
            body["transactional_id"], body["producer_id"], body["producer_epoch"], {tp}
        )
        return {"throttle_time_ms": 0, "error_code": _fenced_for(version, 2, error)}

    async def end_txn(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        error = await self.coordinator.handle_end_transaction(
            body["transactional_id"], body["producer_id"], body["producer_epoch"], body["committed"]
        )
        return {"throttle_time_ms": 0, "error_code": _fenced_for(version, 2, error)}

    async def describe_transactions(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        states = []
        for tid in body["transactional_ids"]:
            error, m = self.coordinator.handle_describe_transaction(tid)
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(m.topic_partitions) if m is not None else ():
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            states.append({
                "error_code": error, "transactional_id": tid,
                "transaction_state": m.state.kafka_name if m else "",
                "transaction_timeout_ms": m.txn_timeout_ms if m else 0,
                "transaction_start_time_ms": m.txn_start_timestamp if m else -1,
                "producer_id": m.producer_id if m else -1, "producer_epoch": m.producer_epoch if m else -1,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            })  # fmt: skip
        return {"throttle_time_ms": 0, "transaction_states": states}

    async def list_transactions(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        error, unknown, matching = self.coordinator.handle_list_transactions(
            body.get("state_filters") or [], body.get("producer_id_filters") or []
        )
        return {
            "throttle_time_ms": 0,
            "error_code": error,
            "unknown_state_filters": unknown,
            "transaction_states": [
                {
                    "transactional_id": m.transactional_id,
                    "producer_id": m.producer_id,
                    "transaction_state": m.state.kafka_name,
                }
                for m in matching
            ],  # fmt: skip
        }
