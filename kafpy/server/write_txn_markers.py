"""The partition leader's side of ending a transaction: serving WriteTxnMarkers (Kafka's
KafkaApis.handleWriteTxnMarkersRequest).

A transaction coordinator sends, per producer, the COMMIT or ABORT result with its
coordinator epoch and the partitions of the transaction. For each partition this broker
hosts, the leader appends one control batch (origin COORDINATOR, acks=-1: the answer
waits until the ISR has the marker, as an acks=all produce does). The partition's
producer state checks the coordinator epoch and the producer epoch, so a marker from a
zombie coordinator gets TRANSACTION_COORDINATOR_FENCED and writes nothing; an ABORT
marker adds the transaction to the segment's `.txnindex`. Markers written to
__consumer_offsets partitions also complete the transaction's pending offset commits in
the group coordinator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafpy.protocol.errors import Errors
from kafpy.records.control_record import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from kafpy.records.record_batch import MAGIC_V2
from kafpy.server.replica_manager import ReplicaManager
from kafpy.storage.producer_state_manager import AppendOrigin

# Kafka bounds the markers' acks=-1 append by request.timeout.ms (default 30 s)
MARKER_APPEND_TIMEOUT_MS = 30000


class TxnMarkerWriter:
    """Writes the transaction markers of WriteTxnMarkers requests to the partitions this
    broker leads, and tells the group coordinator about markers on offsets partitions."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator | None,
        time: Time,
        timeout_ms: int = MARKER_APPEND_TIMEOUT_MS,
    ) -> None:
        self.replica_manager = replica_manager
        self.group_coordinator = group_coordinator
        self.time = time
        self.timeout_ms = timeout_ms

    async def write_txn_markers(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The WriteTxnMarkers response body for a request body; markers are written
        concurrently, each answered per partition."""
        results = await asyncio.gather(*(self._write_marker(m) for m in body["markers"]))
        return {"markers": list(results)}

    async def _write_marker(self, marker: Mapping[str, Any]) -> dict[str, Any]:
        producer_id = marker["producer_id"]
        is_commit = bool(marker["transaction_result"])
        control = build_end_transaction_marker(
            EndTransactionMarker(
                ControlRecordType.COMMIT if is_commit else ControlRecordType.ABORT,
                marker["coordinator_epoch"],
            ),
            producer_id=producer_id,
            producer_epoch=marker["producer_epoch"],
            timestamp=self.time.milliseconds(),
        )
        errors: dict[TopicPartition, int] = {}
        entries: dict[TopicPartition, bytes] = {}
        for topic in marker["topics"]:
            for index in topic["partition_indexes"]:
                tp = TopicPartition(topic["name"], index)
                partition = self.replica_manager.get_partition(tp)
                if partition is None or partition.log is None:
                    # as Kafka: a partition without a local log is unknown to this broker
                    errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif partition.log.config.record_version < MAGIC_V2:
                    # a log of format v0/v1 holds no transactions (as Kafka's getMagic check)
                    errors[tp] = Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT
                else:
                    entries[tp] = control
        if entries:
            answers = await self.replica_manager.append_records(
                self.timeout_ms, -1, entries,
                internal_topics_allowed=True, origin=AppendOrigin.COORDINATOR,
            )  # fmt: skip
            for tp, answer in answers.items():
                errors[tp] = answer["error_code"]
        offsets_partitions = {
            tp.partition
            for tp, error in errors.items()
            if tp.topic == GROUP_METADATA_TOPIC_NAME and error == Errors.NONE
        }
        if offsets_partitions and self.group_coordinator is not None:
            self.group_coordinator.handle_txn_completion(producer_id, offsets_partitions, is_commit)
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp, error in errors.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "error_code": error}
            )
        return {
            "producer_id": producer_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
