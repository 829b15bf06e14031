"""TxnMarkerWriter (WriteTxnMarkers on the partition leader) against a real ReplicaManager
and logs on disk: markers are appended as control batches, an abort lands in the
`.txnindex`, a zombie coordinator epoch is fenced with nothing written, and partitions
this broker does not lead or host get their own errors."""

from __future__ import annotations

import asyncio
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.records.control_record import ControlRecordType, EndTransactionMarker
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.write_txn_markers import TxnMarkerWriter
from kafpy.storage.transaction_index import AbortedTxn
from tests.unit.server import fixtures
from tests.unit.server.fixtures import Broker, leader_and_isr, partition_state

TP = TopicPartition("t", 0)
PID = 4000


def txn_batch(*values: bytes, pid: int = PID, epoch: int = 0, seq: int = 0) -> memoryview:
    return fixtures.txn_batch(*values, pid=pid, epoch=epoch, seq=seq)


def produce(b: Broker, data: memoryview, tp: TopicPartition = TP) -> dict[str, Any]:
    return asyncio.run(b.replica_manager.append_records(1000, 1, {tp: data}))[tp]


def marker(
    commit: bool, coordinator_epoch: int = 0, pid: int = PID, epoch: int = 0,
    partitions: dict[str, list[int]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    topics = partitions if partitions is not None else {TP.topic: [TP.partition]}
    return fixtures.txn_marker(
        pid, commit, topics, coordinator_epoch=coordinator_epoch, epoch=epoch
    )


def write(b: Broker, *markers: dict[str, Any]) -> dict[tuple[int, str, int], int]:
    writer = TxnMarkerWriter(b.replica_manager, None, b.time)
    answer = asyncio.run(writer.write_txn_markers({"markers": list(markers)}))
    return {
        (m["producer_id"], t["name"], p["partition_index"]): p["error_code"]
        for m in answer["markers"] for t in m["topics"] for p in t["partitions"]
    }  # fmt: skip


def control_batches(b: Broker) -> list[tuple[int, EndTransactionMarker]]:
    log = b.log_manager.get_log(TP)
    assert log is not None
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        for batch in MemoryRecords(log.read(offset, 1 << 20).records.buffer()).batches():
            offset = batch.next_offset
            if batch.is_control:
                for record in batch.records():
                    out.append((batch.base_offset, EndTransactionMarker.from_record(record)))
    return out


def test_commit_marker_is_appended_and_ends_the_transaction(broker: Broker) -> None:
    broker.lead("t")
    assert produce(broker, txn_batch(b"a", b"b"))["error_code"] == Errors.NONE
    log = broker.log_manager.get_log(TP)
    assert log is not None
    assert log.producer_state_manager.first_unstable_offset() == 0
    assert write(broker, marker(True, coordinator_epoch=3)) == {(PID, "t", 0): Errors.NONE}
    assert control_batches(broker) == [(2, EndTransactionMarker(ControlRecordType.COMMIT, 3))]
    assert log.producer_state_manager.first_unstable_offset() is None
    assert log.active_segment.txn_index.all_aborted_txns() == []


def test_abort_marker_adds_the_transaction_to_the_txnindex(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, txn_batch(b"a", b"b"))
    # another producer's transaction stays open: the LSO at the abort is its first offset
    produce(broker, txn_batch(b"c", pid=PID + 1))
    assert write(broker, marker(False, coordinator_epoch=1)) == {(PID, "t", 0): Errors.NONE}
    log = broker.log_manager.get_log(TP)
    assert log is not None
    assert log.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(PID, 0, 3, 2)]
    assert control_batches(broker) == [(3, EndTransactionMarker(ControlRecordType.ABORT, 1))]


def test_stale_coordinator_epoch_is_fenced_and_writes_nothing(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, txn_batch(b"a"))
    assert write(broker, marker(True, coordinator_epoch=5))[(PID, "t", 0)] == Errors.NONE
    produce(broker, txn_batch(b"b", seq=1))
    log = broker.log_manager.get_log(TP)
    assert log is not None
    end = log.log_end_offset
    fenced = write(broker, marker(False, coordinator_epoch=4))
    assert fenced == {(PID, "t", 0): Errors.TRANSACTION_COORDINATOR_FENCED}
    assert log.log_end_offset == end
    assert log.producer_state_manager.first_unstable_offset() == 2  # still open


def test_stale_producer_epoch_is_refused(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, txn_batch(b"a", epoch=2))
    assert write(broker, marker(True, epoch=1)) == {(PID, "t", 0): Errors.INVALID_PRODUCER_EPOCH}


def test_unknown_and_follower_partitions_get_their_own_errors(broker: Broker) -> None:
    broker.lead("t")
    # a follower with no live leader known: no fetcher starts
    follower = partition_state("f", 0, leader=1, replicas=[1, 0])
    broker.replica_manager.become_leader_or_follower(leader_and_isr([follower]))
    produce(broker, txn_batch(b"a"))
    errors = write(broker, marker(True, partitions={"t": [0, 7], "f": [0], "nope": [0]}))
    assert errors == {
        (PID, "t", 0): Errors.NONE,
        (PID, "t", 7): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        (PID, "f", 0): Errors.NOT_LEADER_OR_FOLLOWER,
        (PID, "nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }
