"""Cleaner: one round of compaction of one log (Kafka's Cleaner in LogCleaner.scala).

A round builds an offset map (key -> latest offset) over the dirty section, then
rewrites every segment below the map's end into `.cleaned` segments that keep a record
only when no later record has its key, and swaps them in crash-safely through
`Log.replace_segments` (`.cleaned` -> `.swap` -> live). Offsets never change: the
cleaned log has gaps. Records are scanned for their keys (kafpy.storage.cleaner.record_scan)
but output is written per batch: a batch whose records all survive is copied byte for
byte, one that loses some is written once, its kept records' bytes spliced after its own
header (same codec and producer fields, recompressed). Transactions (Kafka 2.x): batches
of aborted transactions are removed, and their markers once no data of theirs is left and
the delete horizon passed (CleanedTransactionMetadata); the cleaned segment's `.txnindex`
keeps the entries of the aborts whose markers stay.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from kafpy.common.time import Time
from kafpy.records.record_batch import (
    CONTROL_MASK,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_LAST_OFFSET_DELTA,
    H_MAGIC,
    H_MAX_TIMESTAMP,
    H_PRODUCER_ID,
    H_RECORD_COUNT,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    RecordBatch,
    iter_file_batches,
    iter_headers,
)
from kafpy.storage.cleaner.cleaned_transaction_metadata import CleanedTransactionMetadata
from kafpy.storage.cleaner.log_to_clean import LogToClean, in_range, segments_in_range
from kafpy.storage.cleaner.offset_map import SkimpyOffsetMap
from kafpy.storage.cleaner.record_scan import (
    filter_batch,
    filter_legacy,
    records_section,
    scan_legacy,
    scan_records,
)
from kafpy.storage.cleaner.throttler import Throttler
from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_segment import CLEANED_FILE_SUFFIX, LogSegment
from kafpy.storage.transaction_index import AbortedTxn

_INT32_MAX = (1 << 31) - 1
_INT64 = struct.Struct(">q")

log = logging.getLogger("kafpy.log.LogCleaner")


@dataclass
class CleanerStats:
    """What one round read, wrote and dropped (Kafka's CleanerStats)."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    # how full the offset map got (0.0-1.0): the cleaner's max-buffer-utilization-percent
    buffer_utilization: float = 0.0
    start_ms: int = 0
    map_complete_ms: int = 0
    end_ms: int = 0
    groups: list[int] = field(default_factory=list)

    def elapsed_secs(self) -> float:
        return max(self.end_ms - self.start_ms, 1) / 1000.0


class IndexSize(Protocol):
    """What grouping segments needs of an index: its size in bytes."""

    @property
    def size_in_bytes(self) -> int: ...


class SegmentRecords(Protocol):
    """What the cleaner reads a segment's batches through: its file descriptor and size."""

    @property
    def fd(self) -> int: ...

    @property
    def size(self) -> int: ...


class SourceSegment(Protocol):
    """What the cleaner needs of a segment it reads: a LogSegment in the broker, a
    read-only view of the segment's files in the cleaner's worker process."""

    @property
    def base_offset(self) -> int: ...

    @property
    def log(self) -> SegmentRecords: ...

    @property
    def last_modified(self) -> int: ...

    @property
    def largest_timestamp(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def offset_index(self) -> IndexSize: ...

    @property
    def time_index(self) -> IndexSize: ...


S = TypeVar("S", bound=SourceSegment)


def _read_batches(
    records: SegmentRecords, chunk_size: int, check: Callable[[], None]
) -> Iterator[tuple[tuple[int, ...], memoryview]]:
    """(header, bytes) of each batch of a segment file, read `chunk_size` bytes at a time.

    `check` runs before each chunk, so an abort or shutdown is seen between reads.
    """
    for _pos, header, data in iter_file_batches(records.fd, 0, records.size, chunk_size, "", check):
        yield header, data


class _SegmentWriter:
    """Buffers retained batches and appends them to the cleaned segment in runs of about
    index.interval.bytes, so the cleaned segment's index is as dense as a normal one's."""

    def __init__(self, dest: LogSegment, flush_bytes: int) -> None:
        self.dest = dest
        self.flush_bytes = max(flush_bytes, 1)
        self._parts: list[bytes | memoryview] = []
        self._size = 0
        self._largest_offset = -1
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1
        self.written = 0

    def add(self, data: bytes | memoryview, last_offset: int, max_timestamp: int) -> None:
        self._parts.append(data)
        self._size += len(data)
        self._largest_offset = last_offset
        if max_timestamp > self._max_timestamp:
            self._max_timestamp = max_timestamp
            self._offset_of_max_timestamp = last_offset
        if self._size >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        if not self._parts:
            return
        data = memoryview(b"".join(self._parts))
        self.dest.append(
            self._largest_offset, self._max_timestamp, self._offset_of_max_timestamp, data
        )
        self.written += len(data)
        self._parts = []
        self._size = 0
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1


class Cleaner:
    """Compacts one log per `clean()` call (Kafka's Cleaner).

    `offset_map` is reused between rounds; `io_buffer_size` is the read chunk (and the
    write buffer); `throttler` limits I/O; `check_done(tp)` raises to abort a round
    (LogCleaningAbortedError, or a shutdown) and runs between chunks.
    """

    def __init__(
        self,
        id: int,
        offset_map: SkimpyOffsetMap,
        io_buffer_size: int,
        max_io_buffer_size: int,
        dup_buffer_load_factor: float,
        throttler: Throttler,
        time: Time,
        check_done: Callable[[object], None],
    ) -> None:
        self.id = id
        self.offset_map = offset_map
        self.io_buffer_size = io_buffer_size
        self.max_io_buffer_size = max_io_buffer_size
        self.dup_buffer_load_factor = dup_buffer_load_factor
        self.throttler = throttler
        self.time = time
        self.check_done = check_done
        self.log = logging.getLogger("kafpy.log.LogCleaner")
        # The round's log's max.message.bytes: with the record count it bounds how far a
        # batch may decompress (decompressed_limit), as on produce.
        self.max_message_bytes: int | None = None

    def _account(self, n: int) -> None:
        """Count `n` bytes of I/O against the throttle."""
        self.throttler.maybe_throttle(n)

    # -- a round -----------------------------------------------------------------------------------

    def clean(self, cleanable: LogToClean) -> tuple[int, CleanerStats]:
        """Clean the log up to the end of the map; returns (next dirty offset, stats)."""
        return self.do_clean(cleanable, cleanable.delete_horizon_ms())

    def do_clean(self, cleanable: LogToClean, delete_horizon_ms: int) -> tuple[int, CleanerStats]:
        """A round in this process: each group's `.cleaned` segment is swapped into the
        Log as soon as it is written."""
        log_ = cleanable.log
        return self.clean_round(
            cleanable.topic_partition, log_.dir, log_.config,
            segments_in_range(log_, 0, cleanable.first_uncleanable_offset),
            cleanable.first_dirty_offset, cleanable.first_uncleanable_offset, delete_horizon_ms,
            last_offsets_of_producers(log_),
            lambda cleaned, group: self._swap_in(log_, cleaned, group),
            aborted_transactions_below(log_, cleanable.first_uncleanable_offset),
        )  # fmt: skip

    def clean_round(
        self,
        tp: object,
        dir: Path,
        config: LogConfig,
        segments: Sequence[S],
        first_dirty_offset: int,
        first_uncleanable_offset: int,
        delete_horizon_ms: int,
        last_offset_of_producer: dict[int, int],
        on_group: Callable[[LogSegment, list[S]], None],
        aborted_transactions: Sequence[AbortedTxn] = (),
    ) -> tuple[int, CleanerStats]:
        """One round over `segments` (the log's segments below `first_uncleanable_offset`,
        oldest first): map the keys of the dirty section, then write each group of
        segments into one `.cleaned` segment and hand it to `on_group` (which swaps it in,
        here or in the broker); returns (next dirty offset, stats). Shared by the broker's
        in-process rounds and the cleaner's worker process. `aborted_transactions` (from
        the `.txnindex` files) are removed, and their markers once safe."""
        self.log.info("Beginning cleaning of log %s.", tp)
        self.max_message_bytes = config.max_message_bytes
        stats = CleanerStats(start_ms=self.time.milliseconds())
        self.log.info("Building offset map for %s...", tp)
        dirty = in_range(segments, first_dirty_offset, first_uncleanable_offset)
        self.build_offset_map_for_segments(
            tp, dirty, first_dirty_offset, first_uncleanable_offset, self.offset_map, stats,
            aborted_transactions,
        )  # fmt: skip
        end_offset = self.offset_map.latest_offset + 1
        stats.map_complete_ms = self.time.milliseconds()
        self.log.info(
            "Cleaning log %s (cleaning prior to %d, discarding tombstones prior to %d)...",
            tp,
            end_offset,
            delete_horizon_ms,
        )
        groups = self.group_segments_by_size(
            in_range(segments, 0, end_offset), config.segment_bytes, config.segment_index_bytes,
            first_uncleanable_offset,
        )  # fmt: skip
        for group in groups:
            stats.groups.append(len(group))
            cleaned = self.write_cleaned_segment(
                tp,
                dir,
                config,
                group,
                self.offset_map,
                delete_horizon_ms,
                last_offset_of_producer,
                stats,
                aborted_transactions,
            )
            on_group(cleaned, group)
        stats.end_ms = self.time.milliseconds()
        return end_offset, stats

    # -- the offset map ----------------------------------------------------------------------------

    def build_offset_map(
        self, log_: Log, start: int, end: int, offset_map: SkimpyOffsetMap, stats: CleanerStats
    ) -> None:
        """Map every key in [start, end) to its latest offset, stopping early (at a batch
        boundary) when the map is full; `offset_map.latest_offset` says how far it got."""
        self.build_offset_map_for_segments(
            log_.topic_partition, segments_in_range(log_, start, end), start, end, offset_map, stats
        )

    def build_offset_map_for_segments(
        self,
        tp: object,
        dirty: Sequence[SourceSegment],
        start: int,
        end: int,
        offset_map: SkimpyOffsetMap,
        stats: CleanerStats,
        aborted_transactions: Sequence[AbortedTxn] = (),
    ) -> None:
        """build_offset_map over the given dirty segments (what the worker process calls);
        the records of aborted transactions are not mapped (they must not shadow the
        committed records of their keys)."""
        offset_map.clear()
        self.log.info(
            "Building offset map for log %s for %d segments in offset range [%d, %d).",
            tp,
            len(dirty),
            start,
            end,
        )
        # latest_offset starts just below the dirty section so an all-keyless section moves on
        offset_map.update_latest_offset(start - 1)
        txns = CleanedTransactionMetadata(t for t in aborted_transactions if t.last_offset >= start)
        for segment in dirty:
            self.check_done(tp)
            full = self._build_offset_map_for_segment(
                tp, segment, offset_map, start, end, stats, txns
            )
            if full:
                self.log.debug(
                    "Offset map is full, %d segments fully mapped, segment with base offset %d is partially mapped",
                    dirty.index(segment),
                    segment.base_offset,
                )
                break
        stats.buffer_utilization = offset_map.utilization

    def _build_offset_map_for_segment(
        self,
        tp: object,
        segment: SourceSegment,
        offset_map: SkimpyOffsetMap,
        start: int,
        end: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata,
    ) -> bool:
        put = offset_map.put
        check = lambda: self.check_done(tp)  # noqa: E731
        for header, data in _read_batches(segment.log, self.io_buffer_size, check):
            base = header[H_BASE_OFFSET]
            last = base + header[H_LAST_OFFSET_DELTA]
            if base >= end:
                return False
            stats.map_bytes_read += len(data)
            if last < start:
                continue
            if header[H_ATTRIBUTES] & CONTROL_MASK:
                txns.on_control_batch_read(header, data)
                offset_map.update_latest_offset(last)
                continue
            if txns.on_batch_read(header):
                offset_map.update_latest_offset(last)  # aborted: nothing to map
                continue
            batch = RecordBatch(data)
            # A batch is mapped whole or not at all, so the round ends on a batch boundary.
            if batch.record_count > offset_map.free_entries():
                if offset_map.size == 0:
                    raise ValueError(
                        f"The cleaner's offset map ({offset_map.slots} slots) cannot hold the "
                        f"{batch.record_count} keys of one batch of {tp}; raise "
                        "log.cleaner.dedupe.buffer.size"
                    )
                return True
            if header[H_MAGIC] < MAGIC_V2:
                scanned = scan_legacy(batch)
            else:
                scanned = scan_records(batch, records_section(batch, self.max_message_bytes))
            for record in scanned:
                if record.key is not None and record.offset >= start:
                    put(record.key, record.offset)
            offset_map.update_latest_offset(last)
            self._account(len(data))
        return False

    # -- grouping ------------------------------------------------------------------------------------

    @staticmethod
    def group_segments_by_size(
        segments: Sequence[S], max_size: int, max_index_size: int, first_uncleanable_offset: int
    ) -> list[list[S]]:
        """Runs of consecutive segments whose log, offset index and time index each fit
        `max_size` / `max_index_size`, and whose offsets fit one segment's int32 range."""
        groups: list[list[S]] = []
        i = 0
        while i < len(segments):
            group = [segments[i]]
            log_size = segments[i].size
            index_size = segments[i].offset_index.size_in_bytes
            time_index_size = segments[i].time_index.size_in_bytes
            i += 1
            while i < len(segments):
                nxt = segments[i]
                if (
                    log_size + nxt.size <= max_size
                    and index_size + nxt.offset_index.size_in_bytes <= max_index_size
                    and time_index_size + nxt.time_index.size_in_bytes <= max_index_size
                    and _last_offset_for(segments, i, first_uncleanable_offset)
                    - group[0].base_offset
                    <= _INT32_MAX
                ):
                    group.append(nxt)
                    log_size += nxt.size
                    index_size += nxt.offset_index.size_in_bytes
                    time_index_size += nxt.time_index.size_in_bytes
                    i += 1
                else:
                    break
            groups.append(group)
        return groups

    # -- rewriting -----------------------------------------------------------------------------------

    def _swap_in(self, log_: Log, cleaned: LogSegment, segments: list[LogSegment]) -> None:
        """Swap a `.cleaned` segment into `log_` for the segments it replaces; it keeps
        the last one's modification time (the next round's delete horizon)."""
        try:
            cleaned.last_modified = segments[-1].last_modified
            self.check_done(log_.topic_partition)
            self.log.info(
                "Swapping in cleaned segment %s for segment(s) %s in log %s",
                cleaned,
                [s.base_offset for s in segments],
                log_.name,
            )
            log_.replace_segments([cleaned], segments)
        except BaseException:
            cleaned.delete_if_exists()
            raise

    def write_cleaned_segment(
        self,
        tp: object,
        dir: Path,
        config: LogConfig,
        segments: Sequence[SourceSegment],
        offset_map: SkimpyOffsetMap,
        delete_horizon_ms: int,
        last_offset_of_producer: dict[int, int],
        stats: CleanerStats,
        aborted_transactions: Sequence[AbortedTxn] = (),
    ) -> LogSegment:
        """Write the surviving records of `segments` into a new `.cleaned` segment of
        `dir`, with its final index entries written and its files flushed; the caller
        swaps it in. On any error the `.cleaned` files are deleted."""
        cleaned = new_cleaned_segment(dir, segments[0].base_offset, config, self.time)
        first = segments[0].base_offset
        txns = CleanedTransactionMetadata(
            (t for t in aborted_transactions if t.last_offset >= first), cleaned.txn_index
        )
        try:
            for old in segments:
                retain_deletes = old.last_modified > delete_horizon_ms
                self.log.info(
                    "Cleaning segment %d in log %s (largest timestamp %d) into %d, %s deletes.",
                    old.base_offset,
                    Path(dir).name,
                    old.largest_timestamp,
                    cleaned.base_offset,
                    "retaining" if retain_deletes else "discarding",
                )
                self.clean_into(
                    tp,
                    old,
                    cleaned,
                    offset_map,
                    retain_deletes,
                    last_offset_of_producer,
                    config.index_interval_bytes,
                    stats,
                    txns,
                )
            cleaned.on_become_inactive_segment()
            cleaned.flush()
        except BaseException:
            cleaned.delete_if_exists()
            raise
        return cleaned

    def clean_into(
        self,
        tp: object,
        source: SourceSegment,
        dest: LogSegment,
        offset_map: SkimpyOffsetMap,
        retain_deletes: bool,
        last_offset_of_producer: dict[int, int],
        flush_bytes: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata | None = None,
    ) -> None:
        """Copy the records of `source` that survive into `dest`, batch by batch: the
        latest record of each key (tombstones until the delete horizon), nothing of an
        aborted transaction, and markers until `txns` and the delete horizon let them go."""
        if txns is None:
            txns = CleanedTransactionMetadata()
        writer = _SegmentWriter(dest, flush_bytes)
        latest = offset_map.latest_offset
        digest = offset_map.digest
        lookup = offset_map.get_digest
        check = lambda: self.check_done(tp)  # noqa: E731
        account = self._account
        for header, data in _read_batches(source.log, self.io_buffer_size, check):
            stats.bytes_read += len(data)
            account(2 * len(data))  # read and (at most) written again
            base = header[H_BASE_OFFSET]
            last = base + header[H_LAST_OFFSET_DELTA]
            pid = header[H_PRODUCER_ID]
            is_control = header[H_ATTRIBUTES] & CONTROL_MASK
            if is_control:
                # markers go like tombstones: only past the delete horizon
                discard = txns.on_control_batch_read(header, data) and not retain_deletes
            else:
                discard = txns.on_batch_read(header)
            if discard:
                stats.messages_read += header[H_RECORD_COUNT]
                if not is_control and pid >= 0 and last_offset_of_producer.get(pid) == last:
                    # an aborted batch that is its producer's last stays, emptied
                    batch = RecordBatch(data)
                    emptied = filter_batch(
                        batch, records_section(batch, self.max_message_bytes), []
                    )
                    writer.add(emptied, last, _INT64.unpack_from(emptied, MAX_TIMESTAMP_OFFSET)[0])
                continue
            if is_control or base > latest:
                # kept markers stay as they are, and batches past the map were not
                # deduplicated this round
                writer.add(data, last, header[H_MAX_TIMESTAMP])
                continue
            batch = RecordBatch(data)
            legacy = header[H_MAGIC] < MAGIC_V2
            if legacy:
                section = b""
                records = scan_legacy(batch)
            else:
                section = records_section(batch, self.max_message_bytes)
                records = scan_records(batch, section)
            stats.messages_read += len(records)
            kept = []
            for r in records:
                if r.offset > latest:
                    kept.append(r)
                elif r.key is None:
                    stats.invalid_messages += 1  # keyless records have no place in a compacted log
                elif r.offset >= lookup(digest(r.key)) and (not r.null_value or retain_deletes):
                    kept.append(r)
            stats.messages_written += len(kept)
            if len(kept) == len(records):
                writer.add(data, last, header[H_MAX_TIMESTAMP])
                continue
            if not kept and not (pid >= 0 and last_offset_of_producer.get(pid) == last):
                continue
            if legacy:
                # a v0/v1 message is rewritten in its own format (it has no producer)
                rewritten = filter_legacy(batch, kept)
                kept_ts = max(h[H_MAX_TIMESTAMP] for _p, h in iter_headers(rewritten))
                writer.add(rewritten, kept[-1].offset, kept_ts)
                continue
            # a producer's last batch stays, emptied, so that its sequence survives
            filtered = filter_batch(batch, section, kept)
            writer.add(filtered, last, _INT64.unpack_from(filtered, MAX_TIMESTAMP_OFFSET)[0])
        writer.flush()
        stats.bytes_written += writer.written


def _last_offset_for(
    segments: Sequence[SourceSegment], i: int, first_uncleanable_offset: int
) -> int:
    """The last offset segments[i] may hold: just below the next segment's base offset,
    or below the first uncleanable offset for the last segment of the list."""
    if i + 1 < len(segments):
        return segments[i + 1].base_offset - 1
    return first_uncleanable_offset - 1


def aborted_transactions_below(log_: Log, end_offset: int) -> list[AbortedTxn]:
    """The aborted transactions of `log_` that start below `end_offset`, from its
    segments' `.txnindex` files (the marker of one may sit in a later segment)."""
    aborted: list[AbortedTxn] = []
    for segment in log_.log_segments():
        aborted.extend(
            t for t in segment.txn_index.all_aborted_txns() if t.first_offset < end_offset
        )
    return aborted


def last_offsets_of_producers(log_: Log) -> dict[int, int]:
    """Each active producer's last data offset: the cleaner keeps a producer's last batch
    so that its sequence numbers survive compaction."""
    with log_.lock:  # the producer map changes on appends
        return {
            pid: e.last_data_offset
            for pid, e in log_.producer_state_manager.active_producers().items()
        }


def create_new_cleaned_segment(log_: Log, base_offset: int) -> LogSegment:
    """An empty `<base>.log.cleaned` segment in `log_`'s directory (see new_cleaned_segment)."""
    return new_cleaned_segment(log_.dir, base_offset, log_.config, log_.time)


def new_cleaned_segment(dir: Path, base_offset: int, config: LogConfig, time: Time) -> LogSegment:
    """An empty `<base>.log.cleaned` segment (and indexes), replacing any left by a crash."""
    seg = LogSegment.open(
        Path(dir),
        base_offset,
        config,
        time,
        file_already_exists=False,
        file_suffix=CLEANED_FILE_SUFFIX,
    )
    seg.log.truncate_to(0)
    seg.offset_index.reset()
    seg.time_index.reset()
    seg.txn_index.reset()
    return seg


__all__ = [
    "Cleaner",
    "CleanerStats",
    "aborted_transactions_below",
    "SourceSegment",
    "create_new_cleaned_segment",
    "last_offsets_of_producers",
    "new_cleaned_segment",
]
