"""ProducerStateManager: what a partition knows of each idempotent producer (Kafka's
`kafka.log.ProducerStateManager`).

Per producer id it keeps the epoch, the metadata of the last five batches written
(sequence range and offsets), the last timestamp, the coordinator epoch and the first
offset of an ongoing transaction. With that, a leader append is checked batch by batch
before it is written:

- a batch from an older epoch is fenced (INVALID_PRODUCER_EPOCH);
- a batch of a new epoch must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER);
- a batch whose sequence range equals one of the last five is a retry: the append
  returns the original offsets and writes nothing;
- a batch that does not continue the last sequence is a gap (OUT_OF_ORDER_SEQUENCE_NUMBER);
- a producer the partition does not know must start at sequence 0, else
  UNKNOWN_PRODUCER_ID (Kafka 2.0–2.4; the client compares the log start offset in the
  response with its last acknowledged offset to tell retention from data loss).

Followers update the state without checks. The state is written to
`<20-digit offset>.snapshot` files in Kafka's format when a segment rolls and when the
log closes, and is loaded from the latest snapshot at start-up, then brought up to the
log end offset by reading the batch headers after it (`rebuild_producer_state`).

Snapshot file (big-endian)::

    version int16 (1), crc uint32 (CRC-32C of everything after it),
    count int32, then per producer:
      producerId int64, epoch int16, lastSequence int32, lastOffset int64,
      offsetDelta int32, timestamp int64, coordinatorEpoch int32,
      currentTxnFirstOffset int64 (-1: none)

Only each producer's last batch is in a snapshot (as in Kafka), so after a restart a
retry is recognised as a duplicate only if it repeats the last batch.
"""

from __future__ import annotations

import enum
import os
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crc32c import crc32c

from kafpy.common.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    KafkaError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
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
    H_LENGTH,
    H_MAX_TIMESTAMP,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    LOG_OVERHEAD,
    TRANSACTIONAL_MASK,
    BatchHeader,
    RecordBatch,
    iter_headers,
)
from kafpy.storage.log_append_info import LogAppendInfo
from kafpy.storage.transaction_index import AbortedTxn

if TYPE_CHECKING:
    from kafpy.storage.log_segment import LogSegment

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_SNAPSHOT_FILE_SUFFIX",
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptSnapshotError",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "ProducerStateUpdate",
    "producer_snapshot_file",
    "read_snapshot",
    "rebuild_producer_state",
    "write_snapshot",
]

PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
NUM_BATCHES_TO_RETAIN = 5
PRODUCER_SNAPSHOT_VERSION = 1
# transactional.id.expiration.ms's default, which Kafka 2.x also uses for producer ids
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 7 * 24 * 60 * 60 * 1000

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

_SNAPSHOT_HEADER = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_ENTRIES_OFFSET = _SNAPSHOT_HEADER.size  # the CRC covers the bytes from here


def increment_sequence(sequence: int, increment: int) -> int:
    """`sequence + increment`, wrapping past Int32.MAX to 0 as producers do."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """`sequence - decrement`, wrapping below 0 to Int32.MAX."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def producer_snapshot_file(log_dir: Path, offset: int) -> Path:
    """`<log_dir>/<20-digit offset>.snapshot`."""
    return log_dir / f"{offset:020d}{PRODUCER_SNAPSHOT_FILE_SUFFIX}"


def _snapshot_offset(name: str) -> int | None:
    if not name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX):
        return None
    prefix = name[: -len(PRODUCER_SNAPSHOT_FILE_SUFFIX)]
    return int(prefix) if prefix.isdigit() else None


def _snapshots_in(file_names: Iterable[str]) -> dict[int, str]:
    """offset -> name of the snapshot files among `file_names`."""
    snapshots = {}
    for name in file_names:
        offset = _snapshot_offset(name)
        if offset is not None:
            snapshots[offset] = name
    return snapshots


class AppendOrigin(enum.Enum):
    """Where an append comes from, which decides how much is checked.

    CLIENT: full checks (epoch, sequence, duplicates). COORDINATOR: epoch only (the group
    or transaction coordinator writes without sequences). REPLICATION: no checks (the
    leader did them); an older epoch is only logged.
    """

    CLIENT = "Client"
    COORDINATOR = "Coordinator"
    REPLICATION = "Replication"


class CorruptSnapshotError(KafkaError):
    """A producer snapshot file cannot be read; it is deleted and the state rebuilt."""


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """The sequence range and offsets of one batch a producer wrote."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a commit or abort marker at `last_offset`."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerStateEntry:
    """One producer's state in one partition: epoch and its last batches, oldest first."""

    __slots__ = (
        "producer_id",
        "batch_metadata",
        "producer_epoch",
        "coordinator_epoch",
        "last_timestamp",
        "current_txn_first_offset",
    )

    def __init__(
        self,
        producer_id: int,
        batch_metadata: Iterable[BatchMetadata] = (),
        producer_epoch: int = NO_PRODUCER_EPOCH,
        coordinator_epoch: int = -1,
        last_timestamp: int = NO_TIMESTAMP,
        current_txn_first_offset: int | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.batch_metadata: deque[BatchMetadata] = deque(batch_metadata, NUM_BATCHES_TO_RETAIN)
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """A new epoch forgets the batches of the old one; True if the epoch changed."""
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def add_batch(
        self,
        producer_epoch: int,
        last_seq: int,
        last_offset: int,
        offset_delta: int,
        timestamp: int,
    ) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, next_entry: ProducerStateEntry) -> None:
        """Take on what an append did (the entry a ProducerAppendInfo built)."""
        self.maybe_update_producer_epoch(next_entry.producer_epoch)
        self.batch_metadata.extend(next_entry.batch_metadata)
        self.coordinator_epoch = next_entry.coordinator_epoch
        self.current_txn_first_offset = next_entry.current_txn_first_offset
        self.last_timestamp = next_entry.last_timestamp

    def find_duplicate_batch(
        self, producer_epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        """The retained batch with exactly this epoch and sequence range, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        for metadata in self.batch_metadata:
            if metadata.last_seq == last_seq and metadata.first_seq == first_seq:
                return metadata
        return None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.batch_metadata,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
            f"currentTxnFirstOffset={self.current_txn_first_offset}, "
            f"coordinatorEpoch={self.coordinator_epoch}, lastTimestamp={self.last_timestamp}, "
            f"batchMetadata={list(self.batch_metadata)})"
        )


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
            if first_seq != 0:
                if updated.producer_epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"Invalid sequence number for new epoch at offset {offset} in partition "
                        f"{self.topic_partition}: {producer_epoch} (request epoch), {first_seq} "
                        "(seq. number); a new epoch must start at sequence 0."
                    )
                raise UnknownProducerIdError(
                    f"Found no record of producerId={self.producer_id} on the broker at offset "
                    f"{offset} in partition {self.topic_partition}. It is possible that the last "
                    f"message with the producerId={self.producer_id} has been removed due to "
                    "hitting the retention limit."
                )
            return
        if not updated.is_empty:
            current_last_seq = updated.last_seq
        elif producer_epoch == self.current_entry.producer_epoch:
            current_last_seq = self.current_entry.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        if current_last_seq == NO_SEQUENCE and first_seq != 0:
            # The epoch matches but no batch is known, e.g. only a transaction marker was written.
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producerId {self.producer_id} at offset {offset} "
                f"in partition {self.topic_partition}: found {first_seq} (incoming seq. number), "
                "but expected 0"
            )
        if not (
            first_seq == current_last_seq + 1 or (first_seq == 0 and current_last_seq == INT32_MAX)
        ):
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


class ProducerStateManager:
    """The producer state of one partition's log, and its snapshot files.

    Not thread-safe: the Log calls it under its own lock. `map_end_offset` is the offset
    up to which the state reflects the log (the log end offset after each append).
    """

    def __init__(
        self,
        topic_partition: TopicPartition,
        log_dir: Path,
        max_producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.topic_partition = topic_partition
        self.log_dir = Path(log_dir)
        self.max_producer_id_expiration_ms = max_producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, int] = {}  # first offset -> producer id
        self.map_end_offset = 0
        self.last_snap_offset = 0
        # offset -> file name of the snapshots in log_dir (Kafka's `snapshots`): listed on
        # first use, or taken from the LogLoader's listing, then kept up to date here
        self._snapshots: dict[int, str] | None = None
        self.log = component_logger(
            "kafpy.log.ProducerStateManager", f"ProducerStateManager partition={topic_partition}"
        )

    # -- reading the state -----------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return not self.producers and not self.ongoing_txns

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def active_producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self.producers)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction, if any."""
        return min(self.ongoing_txns) if self.ongoing_txns else None

    # -- appends ---------------------------------------------------------------------------------

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(self.topic_partition, producer_id, current, origin)

    def analyze_and_validate(
        self,
        buffer: memoryview,
        origin: AppendOrigin,
        producer_batches: Iterable[tuple[int, BatchHeader]] | None = None,
    ) -> ProducerStateUpdate | None:
        """Check the batches of an append (offsets assigned) against the producers' state.

        `producer_batches` are (position in `buffer`, header) of the batches that carry a
        producer id, as the LogValidator's walk collected them; without them the headers
        of `buffer` are walked here. Returns None when no batch has a producer id (the
        usual non-idempotent case). For a client append, a batch repeating one of its
        producer's last five batches stops the walk: `duplicate` holds the batch already
        written and nothing must be appended. Raises InvalidProducerEpochError,
        OutOfOrderSequenceError, UnknownProducerIdError or InvalidTxnStateError.
        """
        if producer_batches is None:
            producer_batches = (
                (pos, h) for pos, h in iter_headers(buffer) if h[H_PRODUCER_ID] != NO_PRODUCER_ID
            )
        update: ProducerStateUpdate | None = None
        for pos, header in producer_batches:
            producer_id = header[H_PRODUCER_ID]
            if update is None:
                update = ProducerStateUpdate()
            if origin is AppendOrigin.CLIENT:
                last = self.producers.get(producer_id)
                if last is not None:
                    first_seq = header[H_BASE_SEQUENCE]
                    duplicate = last.find_duplicate_batch(
                        header[H_PRODUCER_EPOCH],
                        first_seq,
                        increment_sequence(first_seq, header[H_LAST_OFFSET_DELTA]),
                    )
                    if duplicate is not None:
                        update.duplicate = duplicate
                        return update
            info = update.producers.get(producer_id)
            if info is None:
                info = update.producers[producer_id] = self.prepare_update(producer_id, origin)
            batch = None
            if header[H_ATTRIBUTES] & CONTROL_MASK:
                batch = buffer[pos : pos + header[H_LENGTH] + LOG_OVERHEAD]
            completed = info.append_batch_header(header, batch)
            if completed is not None:
                update.completed_txns.append(completed)
        return update

    def update(self, append_info: ProducerAppendInfo) -> None:
        """Make an append's checked producer state current (after the write)."""
        if append_info.producer_id == NO_PRODUCER_ID:
            raise ValueError(
                f"Invalid producer id {append_info.producer_id} passed to update for partition "
                f"{self.topic_partition}"
            )
        updated = append_info.to_entry()
        current = self.producers.get(append_info.producer_id)
        if current is None:
            self.producers[append_info.producer_id] = updated.copy()
        else:
            current.update(updated)
        for first_offset in append_info.started_txns:
            self.ongoing_txns[first_offset] = append_info.producer_id

    def complete_txn(self, completed: CompletedTxn) -> None:
        if self.ongoing_txns.pop(completed.first_offset, None) is None:
            self.log.debug(
                "Completed transaction %s has no ongoing transaction starting at offset %d",
                completed,
                completed.first_offset,
            )

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once `completed` ends: the first offset of the oldest transaction of
        another producer still open, else the offset after its marker (Kafka's rule)."""
        for first_offset in sorted(self.ongoing_txns):
            if self.ongoing_txns[first_offset] != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def apply(self, update: ProducerStateUpdate) -> list[AbortedTxn]:
        """`update` for every producer of an append, then complete its transactions.

        Returns the aborted ones as `.txnindex` entries (with the LSO at their marker),
        for the segment that holds the markers."""
        for info in update.producers.values():
            self.update(info)
        aborted: list[AbortedTxn] = []
        for completed in update.completed_txns:
            if completed.is_aborted:
                aborted.append(
                    AbortedTxn(
                        completed.producer_id,
                        completed.first_offset,
                        completed.last_offset,
                        self.last_stable_offset(completed),
                    )
                )
            self.complete_txn(completed)
        return aborted

    def update_map_end_offset(self, offset: int) -> None:
        self.map_end_offset = offset

    # -- snapshots -------------------------------------------------------------------------------

    def load_snapshots(self, file_names: Iterable[str]) -> None:
        """Know the snapshot files from these names of the log dir's files (a listing the
        caller made anyway) instead of listing the dir again."""
        self._snapshots = _snapshots_in(file_names)

    def _snapshot_names(self) -> dict[int, str]:
        if self._snapshots is None:
            try:
                with os.scandir(self.log_dir) as entries:
                    names = [entry.name for entry in entries if entry.is_file()]
            except FileNotFoundError:
                return {}
            self._snapshots = _snapshots_in(names)
        return self._snapshots

    def snapshot_files(self) -> list[tuple[int, Path]]:
        """(offset, path) of every snapshot file in the log dir, oldest first."""
        names = self._snapshot_names()
        return [(offset, self.log_dir / names[offset]) for offset in sorted(names)]

    def _delete_snapshot(self, offset: int) -> None:
        names = self._snapshot_names()
        name = names.pop(offset, None)
        if name is not None:
            (self.log_dir / name).unlink(missing_ok=True)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return max(self._snapshot_names(), default=None)

    @property
    def oldest_snapshot_offset(self) -> int | None:
        return min(self._snapshot_names(), default=None)

    def take_snapshot(self, sync: bool = False) -> None:
        """Write the state at `map_end_offset`, unless a snapshot at that offset exists.

        Without `sync` the file is not fsynced: a snapshot torn by a crash fails its CRC
        and is deleted at load, and the state is rebuilt from the log instead.
        """
        if self.map_end_offset > self.last_snap_offset:
            path = producer_snapshot_file(self.log_dir, self.map_end_offset)
            self.log.info("Writing producer snapshot at offset %d", self.map_end_offset)
            write_snapshot(path, self.producers.values(), sync)
            if self._snapshots is not None:
                self._snapshots[self.map_end_offset] = path.name
            self.last_snap_offset = self.map_end_offset

    def _delete_snapshot_files(self, predicate: Callable[[int], bool]) -> None:
        for offset in [o for o in self._snapshot_names() if predicate(o)]:
            self._delete_snapshot(offset)

    def delete_snapshots_before(self, offset: int) -> None:
        self._delete_snapshot_files(lambda o: o < offset)

    def _is_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return (
            entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= self.max_producer_id_expiration_ms
        )

    def _load_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self.ongoing_txns[entry.current_txn_first_offset] = entry.producer_id

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        names = self._snapshot_names()
        for offset in sorted(names, reverse=True):
            path = self.log_dir / names[offset]
            try:
                self.log.info("Loading producer state from snapshot file '%s'", path)
                for entry in read_snapshot(path):
                    if not self._is_expired(now_ms, entry):
                        self._load_entry(entry)
            except CorruptSnapshotError as e:
                self.log.warning("Failed to load producer snapshot from '%s': %s", path, e)
                self.producers.clear()
                self.ongoing_txns.clear()
                self._delete_snapshot(offset)
                continue
            self.last_snap_offset = self.map_end_offset = offset
            return
        self.last_snap_offset = self.map_end_offset = log_start_offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log_start_offset, log_end_offset] and, unless the state
        is already at the log end, reload it from the latest snapshot left (or start empty
        at the log start offset); the caller reads the log from `map_end_offset` on."""
        self._delete_snapshot_files(lambda o: o > log_end_offset or o <= log_start_offset)
        if log_end_offset != self.map_end_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.truncate_head(log_start_offset)

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose batches are all below the new log start offset, and the
        snapshots below it (the log start offset moved: retention or DeleteRecords)."""
        evicted = [
            pid
            for pid, entry in self.producers.items()
            if entry.is_empty or entry.last_data_offset < log_start_offset
        ]
        for pid in evicted:
            del self.producers[pid]
        if evicted:
            gone = set(evicted)
            self.ongoing_txns = {o: p for o, p in self.ongoing_txns.items() if p not in gone}
        if self.map_end_offset < log_start_offset:
            self.map_end_offset = log_start_offset
        self.delete_snapshots_before(log_start_offset)
        latest = self.latest_snapshot_offset
        self.last_snap_offset = latest if latest is not None else log_start_offset

    def truncate(self) -> None:
        """Forget everything and delete every snapshot (the log restarts empty)."""
        self.producers.clear()
        self.ongoing_txns.clear()
        self._delete_snapshot_files(lambda o: True)
        self.last_snap_offset = 0
        self.map_end_offset = 0

    def remove_expired_producers(self, now_ms: int) -> None:
        """Forget producers idle for longer than the expiration (none with an open transaction)."""
        expired = [pid for pid, e in self.producers.items() if self._is_expired(now_ms, e)]
        for pid in expired:
            del self.producers[pid]

    def __repr__(self) -> str:
        return (
            f"ProducerStateManager(partition={self.topic_partition}, producers={len(self.producers)}, "
            f"mapEndOffset={self.map_end_offset}, lastSnapOffset={self.last_snap_offset})"
        )


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], sync: bool = False) -> None:
    """Write `entries` to `path` in Kafka's producer snapshot format."""
    items = list(entries)
    body = bytearray(_COUNT.size + _ENTRY.size * len(items))
    _COUNT.pack_into(body, 0, len(items))
    pos = _COUNT.size
    for e in items:
        txn_first = e.current_txn_first_offset
        _ENTRY.pack_into(
            body, pos,
            e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
            e.last_timestamp, e.coordinator_epoch, -1 if txn_first is None else txn_first,
        )  # fmt: skip
        pos += _ENTRY.size
    data = _SNAPSHOT_HEADER.pack(PRODUCER_SNAPSHOT_VERSION, crc32c(body)) + bytes(body)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    """The entries of a snapshot file; CorruptSnapshotError if it is not a valid one."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CorruptSnapshotError(f"Cannot read producer snapshot {path}: {e}") from e
    if len(data) < _ENTRIES_OFFSET + _COUNT.size:
        raise CorruptSnapshotError(
            f"Producer snapshot {path} has {len(data)} bytes, too few for its header"
        )
    version, crc = _SNAPSHOT_HEADER.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot {path} contained an unknown file version {version}")
    computed = crc32c(data[_ENTRIES_OFFSET:])
    if computed != crc:
        raise CorruptSnapshotError(
            f"Snapshot {path} is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    (count,) = _COUNT.unpack_from(data, _ENTRIES_OFFSET)
    expected = _ENTRIES_OFFSET + _COUNT.size + count * _ENTRY.size
    if count < 0 or expected != len(data):
        raise CorruptSnapshotError(
            f"Snapshot {path} says it holds {count} producers but has {len(data)} bytes"
        )
    entries = []
    for values in _ENTRY.iter_unpack(data[_ENTRIES_OFFSET + _COUNT.size :]):
        pid, epoch, seq, offset, delta, timestamp, coordinator_epoch, txn_first = values
        batches = [BatchMetadata(seq, offset, delta, timestamp)] if offset >= 0 else []
        entries.append(
            ProducerStateEntry(
                pid,
                batches,
                epoch,
                coordinator_epoch,
                timestamp,
                txn_first if txn_first >= 0 else None,
            )
        )
    return entries


def _batches_from(
    segment: LogSegment, start_offset: int, end_offset: int
) -> Iterator[tuple[tuple[int, ...], memoryview]]:
    """(header, bytes) of the segment's batches holding offsets in [start_offset, end_offset)."""
    located = segment.translate_offset(start_offset)
    if located is None:
        return
    for _pos, header, data in segment.log.batches_with_data(located.position):
        if header[H_BASE_OFFSET] >= end_offset:
            return
        yield header, data


def load_producers_from_batches(
    manager: ProducerStateManager, batches: Iterable[tuple[Sequence[int], memoryview]]
) -> list[AbortedTxn]:
    """Replay batches read from the log into the state, without checks (Kafka's
    loadProducersFromLog); returns the transactions they abort, as `.txnindex` entries."""
    update = ProducerStateUpdate()
    for header, data in batches:
        producer_id = header[H_PRODUCER_ID]
        if producer_id == NO_PRODUCER_ID:
            continue
        info = update.producers.get(producer_id)
        if info is None:
            info = update.producers[producer_id] = manager.prepare_update(
                producer_id, AppendOrigin.REPLICATION
            )
        completed = info.append_batch_header(header, data)
        if completed is not None:
            update.completed_txns.append(completed)
    return manager.apply(update)


def rebuild_producer_state(
    manager: ProducerStateManager,
    segments: Sequence[LogSegment],
    log_start_offset: int,
    last_offset: int,
    now_ms: int,
) -> None:
    """Bring the state to `last_offset` (Kafka's Log.rebuildProducerState).

    Drops the snapshots beyond `last_offset`, loads the latest one left (or starts empty
    at the log start offset) and replays the batch headers between it and `last_offset`,
    writing snapshots at the start of the last two segments on the way and one at
    `last_offset` at the end. Only batch headers are read, except the records of control
    batches (transaction markers).
    """
    bases = [s.base_offset for s in segments]
    to_snapshot = set(bases[-2:]) | {last_offset}
    is_empty_before = manager.is_empty and manager.map_end_offset >= last_offset
    manager.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > manager.map_end_offset and not is_empty_before:
        manager.log.info("Loading producer state till offset %d", last_offset)
        for segment in segments:
            next_base = _next_base(bases, segment.base_offset)
            if next_base is not None and next_base <= manager.map_end_offset:
                continue
            if segment.base_offset >= last_offset:
                break
            start = max(segment.base_offset, manager.map_end_offset, log_start_offset)
            manager.update_map_end_offset(start)
            if segment.base_offset in to_snapshot:
                manager.take_snapshot()
            load_producers_from_batches(manager, _batches_from(segment, start, last_offset))
    manager.update_map_end_offset(last_offset)
    manager.take_snapshot()


def producer_state_at(
    topic_partition: TopicPartition,
    log_dir: Path,
    segments: Sequence[LogSegment],
    log_start_offset: int,
    offset: int,
    now_ms: int,
    file_names: Iterable[str] | None = None,
) -> ProducerStateManager:
    """A new manager holding the state at `offset`, for recovering the segment that
    starts there: loaded from the latest snapshot at or below it, then brought to it by
    replaying `segments`. Unlike `rebuild_producer_state` it writes and deletes no file.
    `file_names` are those of the log dir's files, if a listing is at hand."""
    manager = ProducerStateManager(topic_partition, log_dir)
    manager.last_snap_offset = manager.map_end_offset = log_start_offset
    if file_names is not None:
        manager.load_snapshots(file_names)
    names = manager._snapshot_names()
    for snap_offset in sorted(names, reverse=True):
        if not log_start_offset < snap_offset <= offset:
            continue
        path = manager.log_dir / names[snap_offset]
        try:
            entries = read_snapshot(path)
        except CorruptSnapshotError:
            continue
        for entry in entries:
            if not manager._is_expired(now_ms, entry):
                manager._load_entry(entry)
        manager.last_snap_offset = manager.map_end_offset = snap_offset
        break
    for segment in segments:
        start = max(segment.base_offset, manager.map_end_offset)
        if segment.base_offset >= offset or start >= offset:
            continue
        load_producers_from_batches(manager, _batches_from(segment, start, offset))
    manager.update_map_end_offset(offset)
    return manager


def _next_base(bases: list[int], base: int) -> int | None:
    i = bases.index(base)
    return bases[i + 1] if i + 1 < len(bases) else None


def _log_for(tp: TopicPartition) -> PrefixAdapter:
    return component_logger(
        "kafpy.log.ProducerStateManager", f"ProducerStateManager partition={tp}"
    )
