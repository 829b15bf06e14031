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
- a producer the partition does not know (its state expired, or lost with its records
  in a truncation) may go on from any sequence, as Kafka 2.5+ accepts it (KIP-360), where
  Kafka 2.0–2.4 answered UNKNOWN_PRODUCER_ID. Retention and DeleteRecords moving the log
  start offset forget no producer (Kafka 2.8, KAFKA-7190): only expiration does.

Followers update the state without checks. The state is written to
`<20-digit offset>.snapshot` files in Kafka's format when a segment rolls and when the
log closes, and is loaded from the latest snapshot at start-up, then brought up to the
log end offset by reading the batch headers after it (`rebuild_producer_state`).

The snapshot format is in `producer_snapshot_file`, the per-producer state in
`producer_state_entry`, the checks of one append in `producer_append_info`; the types of
the manager's API are imported from here too.

Only each producer's last batch is in a snapshot (as in Kafka), so after a restart a
retry is recognised as a duplicate only if it repeats the last batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.record_batch import (
    CONTROL_MASK,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_SEQUENCE,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    LOG_OVERHEAD,
    BatchHeader,
    iter_headers,
)
from kafpy.storage.producer_append_info import (
    AppendOrigin,
    ProducerAppendInfo,
    ProducerStateUpdate,
)
from kafpy.storage.producer_snapshot_file import (
    PRODUCER_SNAPSHOT_FILE_SUFFIX,
    CorruptSnapshotError,
    producer_snapshot_file,
    read_snapshot,
    snapshots_in,
    write_snapshot,
)
from kafpy.storage.producer_state_entry import (
    NO_PRODUCER_ID,
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    CompletedTxn,
    ProducerStateEntry,
    increment_sequence,
)
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

# transactional.id.expiration.ms's default, which Kafka 2.x also uses for producer ids
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 7 * 24 * 60 * 60 * 1000


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
        OutOfOrderSequenceError or InvalidTxnStateError.
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
        self._snapshots = snapshots_in(file_names)

    def _snapshot_names(self) -> dict[int, str]:
        if self._snapshots is None:
            try:
                with os.scandir(self.log_dir) as entries:
                    names = [entry.name for entry in entries if entry.is_file()]
            except FileNotFoundError:
                return {}
            self._snapshots = snapshots_in(names)
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
        """The log start offset moved (retention or DeleteRecords): forget the snapshots
        below it. Producers are kept, even those whose batches all lie below it, until they
        expire (Kafka 2.8, KAFKA-7190): a transactional producer goes on in sequence, and
        the marker of a transaction it just ended still finds its state."""
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
