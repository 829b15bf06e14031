"""DescribeProducers (Kafka 3.0, KIP-664): the active producers of the partitions this broker
holds a replica of, read from each log's ProducerStateManager (Kafka's
Partition.activeProducerState). Served beyond Kafka 2.8 for `kafpy transactions --find-hanging`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.server.replica_manager import ReplicaManager


def describe_producers(replica_manager: ReplicaManager, body: Mapping[str, Any]) -> dict[str, Any]:
    """The DescribeProducers response body for a request body."""
    topics = []
    for t in body.get("topics") or ():
        partitions = []
        for index in t["partition_indexes"]:
            tp = TopicPartition(t["name"], index)
            entry: dict[str, Any] = {"partition_index": index, "error_code": Errors.NONE,
                                     "error_message": None, "active_producers": []}  # fmt: skip
            try:
                partition = replica_manager.get_partition_or_error(tp, expect_leader=False)
                log = partition.log
                if log is None:
                    raise KafkaError(
                        f"Broker {replica_manager.broker_id} has no local log of {tp}."
                    )
                for producer_id, state in log.producer_state_manager.active_producers().items():
                    start = state.current_txn_first_offset
                    entry["active_producers"].append({
                        "producer_id": producer_id, "producer_epoch": state.producer_epoch,
                        "last_sequence": state.last_seq, "last_timestamp": state.last_timestamp,
                        "coordinator_epoch": state.coordinator_epoch,
                        "current_txn_start_offset": -1 if start is None else start,
                    })  # fmt: skip
            except KafkaError as e:
                code = error_code_of(e)
                entry["error_code"] = (
                    Errors.NOT_LEADER_OR_FOLLOWER if code == Errors.UNKNOWN_SERVER_ERROR else code
                )
                entry["error_message"] = str(e)
            partitions.append(entry)
        topics.append({"name": t["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
