"""ProducerAppendInfo: checks the batches one producer adds in one append (Kafka's
ProducerAppendInfo), where an append comes from (AppendOrigin), and what checking an
append found (ProducerStateUpdate).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from kafpy.common.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from kafpy.common.logger import PrefixAdapter, component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.control_record import ControlRecordType, EndTransactionMarker
from kafpy.records.record_batch import (
    CONTROL_MASK,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_SEQUENCE,
    H_LAST_OFFSET_DELTA,
    H_MAX_TIMESTAMP,
    H_PRODUCER_EPOCH,
    TRANSACTIONAL_MASK,
    RecordBatch,
)
from kafpy.storage.log_append_info import LogAppendInfo
from kafpy.storage.producer_state_entry import (
    INT32_MAX,
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchMetadata,
    CompletedTxn,
    ProducerStateEntry,
    increment_sequence,
)


class AppendOrigin(enum.Enum):
    """Where an append comes from, which decides how much is checked.

    CLIENT: full checks (epoch, sequence, duplicates). COORDINATOR: epoch only (the group
    or transaction coordinator writes without sequences). REPLICATION: no checks (the
    leader did them); an older epoch is only logged.
    """

    CLIENT = "Client"
    COORDINATOR = "Coordinator"
    REPLICATION = "Replication"


class ProducerAppendInfo:
    """Checks the batches one producer adds in one append, and collects the new state.

    Built from the producer's state before the append (`current_entry`); each batch is
    checked against the state the previous batches of the same append left, so several
    batches of one producer in one request are checked in order. Nothing is changed in
    the manager until `ProducerStateManager.update` is called after the write.
    """

    __slots__ = (
        "topic_partition",
        "producer_id",
        "current_entry",
        "origin",
        "updated_entry",
        "started_txns",
    )

    def __init__(
        self,
        topic_partition: TopicPartition,
        producer_id: int,
        current_entry: ProducerStateEntry,
        origin: AppendOrigin,
    ) -> None:
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = origin
        self.updated_entry = ProducerStateEntry(
            producer_id,
            (),
            current_entry.producer_epoch,
            current_entry.coordinator_epoch,
            current_entry.last_timestamp,
            current_entry.current_txn_first_offset,
        )
        self.started_txns: list[int] = []  # first offsets of transactions begun here

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        if producer_epoch < self.updated_entry.producer_epoch:
            message = (
                f"Producer's epoch at offset {offset} in {self.topic_partition} is {producer_epoch}, "
                f"which is smaller than the last seen epoch {self.updated_entry.producer_epoch}"
            )
            if self.origin is AppendOrigin.REPLICATION:
                _log_for(self.topic_partition).warning("%s", message)
            else:
                raise InvalidProducerEpochError(
                    message + "; a newer producer with this id has fenced this one."
                )

    def _check_sequence(self, producer_epoch: int, first_seq: int, offset: int) -> None:
        updated = self.updated_entry
        if producer_epoch != updated.producer_epoch:
            # a producer this partition knows must start a new epoch at 0; one it does not
            # know (its records deleted by retention or DeleteRecords) may go on from any
            # sequence (Kafka 2.5+, KIP-360)
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch at offset {offset} in partition "
                    f"{self.topic_partition}: {producer_epoch} (request epoch), {first_seq} "
                    "(seq. number); a new epoch must start at sequence 0."
                )
            return
        if not updated.is_empty:
            current_last_seq = updated.last_seq
        elif producer_epoch == self.current_entry.producer_epoch:
            current_last_seq = self.current_entry.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        in_sequence = first_seq == current_last_seq + 1 or (
            first_seq == 0 and current_last_seq == INT32_MAX
        )
        if not (self.current_entry.producer_epoch == NO_PRODUCER_EPOCH or in_sequence):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producerId {self.producer_id} at offset {offset} "
                f"in partition {self.topic_partition}: {first_seq} (incoming seq. number), "
                f"{current_last_seq} (current end sequence number)"
            )

    def append_data_batch(
        self,
        epoch: int,
        first_seq: int,
        last_seq: int,
        last_timestamp: int,
        first_offset: int,
        last_offset: int,
        is_transactional: bool,
    ) -> None:
        """Check one data batch and record it in the pending state."""
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        updated = self.updated_entry
        updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        if updated.current_txn_first_offset is not None and not is_transactional:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {self.producer_id} at offset "
                f"{first_offset} in partition {self.topic_partition}: it has an ongoing "
                "transaction, which must be committed or aborted first."
            )
        if updated.current_txn_first_offset is None and is_transactional:
            updated.current_txn_first_offset = first_offset
            self.started_txns.append(first_offset)

    def append_end_txn_marker(
        self, marker: EndTransactionMarker, producer_epoch: int, offset: int, timestamp: int
    ) -> CompletedTxn:
        """Record a commit or abort marker; returns the transaction it ends."""
        self._check_producer_epoch(producer_epoch, offset)
        updated = self.updated_entry
        if updated.coordinator_epoch > marker.coordinator_epoch:
            message = (
                f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} "
                f"in partition {self.topic_partition}: {marker.coordinator_epoch} (zombie), "
                f"{updated.coordinator_epoch} (current)"
            )
            if self.origin is AppendOrigin.REPLICATION:
                _log_for(self.topic_partition).info("%s", message)
            else:
                raise TransactionCoordinatorFencedError(message)
        first_offset = updated.current_txn_first_offset
        if first_offset is None:
            first_offset = offset
        updated.maybe_update_producer_epoch(producer_epoch)
        updated.current_txn_first_offset = None
        updated.coordinator_epoch = marker.coordinator_epoch
        updated.last_timestamp = timestamp
        return CompletedTxn(
            self.producer_id, first_offset, offset, marker.control_type is ControlRecordType.ABORT
        )

    def append_batch_header(
        self, header: Sequence[int], batch: memoryview | None
    ) -> CompletedTxn | None:
        """Check and record the batch whose header tuple is `header`.

        A control batch needs its bytes (`batch`, the whole batch) to read its marker.
        """
        attributes = header[H_ATTRIBUTES]
        base_offset = header[H_BASE_OFFSET]
        if attributes & CONTROL_MASK:
            if batch is None:
                raise ValueError(
                    "a control batch needs its bytes to read the end transaction marker"
                )
            for record in RecordBatch(batch, 0).records():
                marker = EndTransactionMarker.from_record(record)
                return self.append_end_txn_marker(
                    marker, header[H_PRODUCER_EPOCH], base_offset, record.timestamp
                )
            return None  # an empty control batch: the cleaner removed the transaction
        delta = header[H_LAST_OFFSET_DELTA]
        first_seq = header[H_BASE_SEQUENCE]
        last_seq = increment_sequence(first_seq, delta) if first_seq != NO_SEQUENCE else NO_SEQUENCE
        self.append_data_batch(
            header[H_PRODUCER_EPOCH],
            first_seq,
            last_seq,
            header[H_MAX_TIMESTAMP],
            base_offset,
            base_offset + delta,
            bool(attributes & TRANSACTIONAL_MASK),
        )
        return None

    def to_entry(self) -> ProducerStateEntry:
        return self.updated_entry

    def __repr__(self) -> str:
        u = self.updated_entry
        return (
            f"ProducerAppendInfo(producerId={self.producer_id}, producerEpoch={u.producer_epoch}, "
            f"firstSequence={u.first_seq}, lastSequence={u.last_seq}, "
            f"currentTxnFirstOffset={u.current_txn_first_offset}, "
            f"coordinatorEpoch={u.coordinator_epoch}, lastTimestamp={u.last_timestamp}, "
            f"startedTransactions={self.started_txns})"
        )


@dataclass(slots=True)
class ProducerStateUpdate:
    """What checking one append found: the producers' pending states, the transactions
    it completes, and, for a retried batch, the metadata of the batch already written."""

    producers: dict[int, ProducerAppendInfo] = field(default_factory=dict)
    completed_txns: list[CompletedTxn] = field(default_factory=list)
    duplicate: BatchMetadata | None = None

    def duplicate_append_info(
        self, info: LogAppendInfo, log_start_offset: int, log_append_time: bool
    ) -> LogAppendInfo:
        """Turn `info` into the answer to a retried batch: its original offsets, nothing written."""
        dup = self.duplicate
        assert dup is not None
        info.first_offset = dup.first_offset
        info.last_offset = dup.last_offset
        info.log_start_offset = log_start_offset
        # Kafka 2.x reports the batch timestamp as the append time even for CreateTime
        # topics; kafpy only does so when the stored timestamp is the append time.
        info.log_append_time = dup.timestamp if log_append_time else NO_TIMESTAMP
        info.shallow_count = 0  # nothing written
        info.num_messages = 0
        return info


def _log_for(tp: TopicPartition) -> PrefixAdapter:
    """The manager's logger: these lines keep its name and prefix."""
    return component_logger(
        "kafpy.log.ProducerStateManager", f"ProducerStateManager partition={tp}"
    )
