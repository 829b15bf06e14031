"""LogSegment: one `.log` file of a partition with its offset, time and transaction indexes.

A segment holds the batches whose offsets start at its base offset (the 20-digit number
in its file names) and end before the next segment's. Only the last (active) segment
of a log is appended to. This module also names the segment files as Kafka does.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kafpy.common.errors import CorruptRecordError, InvalidRecordError
from kafpy.common.time import Time
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import (
    H_BASE_OFFSET,
    H_LAST_OFFSET_DELTA,
    H_MAX_TIMESTAMP,
    H_PRODUCER_ID,
    HEADER_LOCATION,
    LOG_OVERHEAD,
    MAGIC_V2,
    ensure_entry_valid,
)
from kafpy.storage.abstract_index import INT32_MAX, IndexOffsetOverflowError, InvalidOffsetError
from kafpy.storage.file_records import FileRecords, LogOffsetPosition
from kafpy.storage.log_append_info import FetchDataInfo, LogOffsetMetadata
from kafpy.storage.log_config import LogConfig
from kafpy.storage.offset_index import OffsetIndex
from kafpy.storage.producer_state_manager import ProducerStateManager, load_producers_from_batches
from kafpy.storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from kafpy.storage.transaction_index import TransactionIndex

log = logging.getLogger("kafpy.log.LogSegment")

# The segment remembers where the batches of its latest appends start (a consumer that
# keeps up fetches from one of them), at most this many
_RECENT_BATCHES = 256

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"


def filename_prefix_from_offset(offset: int) -> str:
    """Kafka's 20-digit zero-padded file name of a base offset."""
    return f"{offset:020d}"


def log_file_name(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / f"{filename_prefix_from_offset(offset)}{LOG_FILE_SUFFIX}{suffix}"


def offset_index_file_name(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / f"{filename_prefix_from_offset(offset)}{INDEX_FILE_SUFFIX}{suffix}"


def time_index_file_name(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / f"{filename_prefix_from_offset(offset)}{TIME_INDEX_FILE_SUFFIX}{suffix}"


def transaction_index_file_name(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / f"{filename_prefix_from_offset(offset)}{TXN_INDEX_FILE_SUFFIX}{suffix}"


def offset_from_file_name(name: str) -> int:
    """The base offset in a segment file name (`00000000000000000042.index` → 42)."""
    prefix = name.split(".", 1)[0]
    if not prefix.isdigit():
        raise ValueError(f"'{name}' is not a segment file name (20 digits then a suffix)")
    return int(prefix)


def _replace_suffix(path: Path, old: str, new: str) -> Path:
    name = path.name
    if not name.endswith(old):
        raise ValueError(f"Expected file name {name} to end with {old!r}")
    return path.with_name(name[: len(name) - len(old)] + new)


class LogSegment:
    """A segment of a log: the `.log` file and its three indexes (Kafka's LogSegment).

    Appends write whole batches and add a sparse index entry every `index.interval.bytes`;
    reads return stored bytes located through the offset index and a scan of batch
    headers (or, for the batches of the latest appends and past the last one, through
    what the appends noted: no scan for a consumer that keeps up); `recover()` rebuilds
    the indexes from the data and cuts off a torn or corrupt tail. `roll_jitter_ms` is
    subtracted from segment.ms for this segment.
    """

    def __init__(
        self,
        log_file: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        txn_index: TransactionIndex,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int,
        time: Time,
    ) -> None:
        self.log = log_file
        self.offset_index = offset_index
        self.time_index = time_index
        # a sealed index's copy in memory goes when the cache closes the segment's file
        log_file.released_with = (offset_index, time_index)
        self.txn_index = txn_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.time = time
        self.created = time.milliseconds()
        self._bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        last = time_index.last_entry()
        self._max_timestamp_so_far = last.timestamp
        self._offset_of_max_timestamp_so_far = last.offset
        # what this object's appends wrote (forgotten when the file is cut): the first batch
        # of each of the latest, by base offset, and the offset after the last one
        self._recent: dict[int, LogOffsetPosition] = {}
        self._next_offset: int | None = None

    @classmethod
    def open(
        cls,
        dir: Path,
        base_offset: int,
        config: LogConfig,
        time: Time,
        file_already_exists: bool = False,
        preallocate: bool = False,
        file_suffix: str = "",
    ) -> LogSegment:
        """Open (or create) the segment files of `base_offset` in `dir`. An existing
        segment holds no descriptor until it is first read or written. With `preallocate`
        (the log's `preallocate` config, which Kafka's Log passes when it creates a
        segment) a new `.log` file is made `config.init_file_size` bytes long on disk."""
        max_index_size = config.segment_index_bytes
        log_file = FileRecords.open(
            log_file_name(dir, base_offset, file_suffix),
            file_already_exists,
            config.init_file_size,
            preallocate,
        )
        try:
            return cls(
                log_file,
                OffsetIndex(
                    offset_index_file_name(dir, base_offset, file_suffix),
                    base_offset,
                    max_index_size,
                ),
                TimeIndex(
                    time_index_file_name(dir, base_offset, file_suffix), base_offset, max_index_size
                ),
                TransactionIndex(
                    base_offset, transaction_index_file_name(dir, base_offset, file_suffix)
                ),
                base_offset,
                config.index_interval_bytes,
                config.random_segment_jitter(),
                time,
            )
        except BaseException:
            log_file.close()  # its descriptor would stay in the FileHandleCache
            raise

    # -- state -----------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max_timestamp_so_far

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's modification time if none is known."""
        if self._max_timestamp_so_far >= 0:
            return self._max_timestamp_so_far
        return self.last_modified

    @property
    def last_modified(self) -> int:
        return self.log.last_modified()

    @last_modified.setter
    def last_modified(self, ms: int) -> None:
        self.log.set_last_modified(ms)
        os.utime(self.offset_index.file, ns=(ms * 1_000_000, ms * 1_000_000))
        os.utime(self.time_index.file, ns=(ms * 1_000_000, ms * 1_000_000))

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise IndexOffsetOverflowError(
                f"Detected offset overflow at offset {offset} in segment {self}"
            )

    # -- append ----------------------------------------------------------------------------------

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        records: MemoryRecords | memoryview,
    ) -> None:
        """Write `records` (whole batches, offsets assigned) at the end of the segment.

        `largest_offset` is the last offset in `records`; the timestamps are the largest
        batch max timestamp and the last offset of that batch. Adds an index entry when
        more than `index.interval.bytes` were written since the last one.
        """
        data = records.buffer() if isinstance(records, MemoryRecords) else records
        size = len(data)
        if size == 0:
            return
        log_file = self.log
        physical_position = log_file.size
        if physical_position == 0:
            self._rolling_based_timestamp = largest_timestamp
        if not 0 <= largest_offset - self.base_offset <= INT32_MAX:
            self._ensure_offset_in_range(largest_offset)
        log_file.append(data)
        self._next_offset = largest_offset + 1
        if size >= HEADER_LOCATION.size:
            base, length, magic, last_delta = HEADER_LOCATION.unpack_from(data, 0)
            if magic == MAGIC_V2:
                recent = self._recent
                recent[base] = LogOffsetPosition(
                    base + last_delta, physical_position, length + LOG_OVERHEAD
                )
                if len(recent) > _RECENT_BATCHES:
                    del recent[next(iter(recent))]
        if largest_timestamp > self._max_timestamp_so_far:
            self._max_timestamp_so_far = largest_timestamp
            self._offset_of_max_timestamp_so_far = shallow_offset_of_max_timestamp
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, physical_position)
            self.time_index.maybe_append(
                self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far
            )
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    # -- read ------------------------------------------------------------------------------------

    def translate_offset(
        self, offset: int, starting_file_position: int = 0
    ) -> LogOffsetPosition | None:
        """The first batch whose last offset is >= `offset` (None past the end of the segment)."""
        if self._next_offset is not None and offset >= self._next_offset:
            return None
        recent = self._recent.get(offset)
        if recent is not None and recent.position >= starting_file_position:
            return recent  # the previous batch ends before `offset`: this is the first
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_with_size(
            offset, max(mapping.position, starting_file_position)
        )

    def read(
        self,
        start_offset: int,
        max_offset: int | None,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = False,
    ) -> FetchDataInfo | None:
        """Read up to `max_size` bytes from the batch holding `start_offset`.

        Stops before the batch holding `max_offset` (exclusive bound, e.g. the high
        watermark) and at byte `max_position`. With `min_one_message` the first batch is
        returned whole even if larger than `max_size`. None if `start_offset` is past the
        last batch of the segment.
        """
        if max_size < 0:
            raise ValueError(
                f"Invalid max size {max_size} for log read from segment {self.log.file}"
            )
        log_size = self.log.size
        if max_position is None:
            max_position = log_size
        start = self.translate_offset(start_offset)
        if start is None:
            return None
        start_position = start.position
        offset_metadata = LogOffsetMetadata(start_offset, self.base_offset, start_position)
        adjusted_max_size = max(max_size, start.size) if min_one_message else max_size
        if adjusted_max_size == 0:
            return FetchDataInfo(offset_metadata, MemoryRecords.empty())
        if max_offset is None:
            fetch_size = min(max_position - start_position, adjusted_max_size)
        else:
            if max_offset < start_offset:
                return FetchDataInfo(offset_metadata, MemoryRecords.empty())
            mapping = self.translate_offset(max_offset, start_position)
            end_position = log_size if mapping is None else mapping.position
            fetch_size = min(min(max_position, end_position) - start_position, adjusted_max_size)
        data = self.log.read(start_position, max(fetch_size, 0))
        return FetchDataInfo(
            offset_metadata,
            MemoryRecords(data),
            first_entry_incomplete=adjusted_max_size < start.size,
        )

    def read_next_offset(self) -> int:
        """The offset after the last batch of the segment (base offset when empty)."""
        last_indexed = self.offset_index.last_entry()
        next_offset = self.base_offset
        for _, header in self.log.batch_headers(last_indexed.position):
            next_offset = header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA] + 1
        return next_offset

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int | None = None
    ) -> TimestampOffset | None:
        """The first record at or after `starting_offset` with a timestamp >= `timestamp`."""
        if starting_offset is None:
            starting_offset = self.base_offset
        ts_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(ts_offset.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    # -- rolling ---------------------------------------------------------------------------------

    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None:
            for _, header in self.log.batch_headers(0):
                self._rolling_based_timestamp = header[H_MAX_TIMESTAMP]
                break

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Time since the first batch's timestamp (by the new batch's clock), else since creation."""
        self._load_first_batch_timestamp()
        t = self._rolling_based_timestamp
        if t is not None and t >= 0:
            return message_timestamp - t
        return now - self.created

    def should_roll(
        self,
        max_segment_bytes: int,
        max_segment_ms: int,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        now: int,
    ) -> bool:
        """Kafka's roll conditions: size, age (with jitter), a full index, offset overflow.

        Runs on every append, hence the inlined checks.
        """
        size = self.log.size
        if size > max_segment_bytes - messages_size:
            return True
        if size > 0:
            t = self._rolling_based_timestamp
            if t is None:
                self._load_first_batch_timestamp()
                t = self._rolling_based_timestamp
            waited = (
                max_timestamp_in_messages - t if t is not None and t >= 0 else now - self.created
            )
            if waited > max_segment_ms - self.roll_jitter_ms:
                return True
        return (
            self.offset_index.is_full()
            or self.time_index.is_full()
            or not 0 <= max_offset_in_messages - self.base_offset <= INT32_MAX
        )

    def on_become_inactive_segment(self) -> None:
        """Write the final time index entry and trim the files: the segment is read-only now."""
        self.time_index.maybe_append(
            self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # -- recovery and truncation -------------------------------------------------------------------

    def recover(self, producer_state_manager: ProducerStateManager | None = None) -> int:
        """Rebuild the indexes from the log, cutting it at the first invalid or torn batch.

        Each batch must be magic 2 with a matching CRC-32C, or a v0/v1 message with a
        matching CRC-32, with offsets that increase from the base offset. With `producer_state_manager` (the producer state at the
        segment's base offset) the batches of producers are replayed into it and the
        transactions aborted in this segment are written to its `.txnindex` again.
        Returns the number of bytes cut off the end of the file.
        """
        self._forget_appends()
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        self._max_timestamp_so_far = NO_TIMESTAMP
        self._offset_of_max_timestamp_so_far = -1
        next_expected = self.base_offset
        try:
            for position, header, data in self.log.batches_with_data(0):
                ensure_entry_valid(data, 0, header)
                base = header[H_BASE_OFFSET]
                last = base + header[H_LAST_OFFSET_DELTA]
                if base < next_expected or last < base:
                    raise CorruptRecordError(
                        f"Record batch at position {position} has offsets [{base}, {last}] but "
                        f"offsets from {next_expected} were expected"
                    )
                self._ensure_offset_in_range(last)
                next_expected = last + 1
                if producer_state_manager is not None and header[H_PRODUCER_ID] >= 0:
                    for aborted in load_producers_from_batches(
                        producer_state_manager, [(header, data)]
                    ):
                        self.txn_index.append(aborted)
                if header[H_MAX_TIMESTAMP] > self._max_timestamp_so_far:
                    self._max_timestamp_so_far = header[H_MAX_TIMESTAMP]
                    self._offset_of_max_timestamp_so_far = last
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    # Appends after a restart index more sparsely than a rebuild does, so a
                    # rebuild can run out of slots; a sparser index is still correct, while
                    # failing here would throw the segment away.
                    if not self.offset_index.is_full():
                        self.offset_index.append(last, valid_bytes)
                    if not self.time_index.is_full():
                        self.time_index.maybe_append(
                            self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far
                        )
                    last_index_entry = valid_bytes
                valid_bytes += len(data)
        except (CorruptRecordError, InvalidRecordError) as e:
            log.warning(
                "Found invalid messages in log segment %s at byte offset %d: %s.",
                self.log.file,
                valid_bytes,
                e,
            )
        truncated = self.log.size - valid_bytes
        if truncated > 0:
            log.debug(
                "Truncated %d invalid bytes at the end of segment %s during recovery",
                truncated,
                self.log.file,
            )
        self.log.truncate_to(valid_bytes)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(
            self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.time_index.trim_to_valid_size()
        self._bytes_since_last_index_entry = valid_bytes - last_index_entry
        return truncated

    def _load_largest_timestamp(self) -> None:
        last = self.time_index.last_entry()
        self._max_timestamp_so_far = last.timestamp
        self._offset_of_max_timestamp_so_far = last.offset
        position = self.offset_index.lookup(last.offset).position
        after = self.log.largest_timestamp_after(position)
        if after.timestamp > self._max_timestamp_so_far:
            self._max_timestamp_so_far = after.timestamp
            self._offset_of_max_timestamp_so_far = after.offset

    def _forget_appends(self) -> None:
        self._recent.clear()
        self._next_offset = None

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= `offset`; returns the bytes removed.

        A batch holding `offset` goes as a whole (batches are never split).
        """
        mapping = self.translate_offset(offset)
        self._forget_appends()
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        bytes_truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self.created = self.time.milliseconds()
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        if self._max_timestamp_so_far >= 0 or bytes_truncated:
            self._load_largest_timestamp()
        return bytes_truncated

    # -- files -------------------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the log and flush the index mappings."""
        if self.log.closed:
            return
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename every file of the segment, e.g. from "" to ".deleted"."""
        self.log.rename_to(_replace_suffix(self.log.file, old_suffix, new_suffix))
        self.offset_index.rename_to(_replace_suffix(self.offset_index.file, old_suffix, new_suffix))
        self.time_index.rename_to(_replace_suffix(self.time_index.file, old_suffix, new_suffix))
        self.txn_index.rename_to(_replace_suffix(self.txn_index.file, old_suffix, new_suffix))

    def update_dir(self, dir: Path) -> None:
        """Point the segment at its files after the partition directory was renamed."""
        self.log.update_parent_dir(dir)
        self.offset_index.update_parent_dir(dir)
        self.time_index.update_parent_dir(dir)
        self.txn_index.update_parent_dir(dir)

    def close(self) -> None:
        """Write the final time index entry, trim the indexes and the log, close every file."""
        if self.log.closed:
            return
        if self._max_timestamp_so_far >= 0 and self.time_index.writable:
            try:
                self.time_index.maybe_append(
                    self._max_timestamp_so_far,
                    self._offset_of_max_timestamp_so_far,
                    skip_full_check=True,
                )
            except InvalidOffsetError:
                pass
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        """Close the files without trimming or writing anything."""
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.txn_index.close()
        self.log.close_handlers()

    def delete_if_exists(self) -> None:
        """Close and delete every file of the segment."""
        self.log.delete_if_exists()
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        self.txn_index.delete_if_exists()

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size}, file={self.log.file})"


__all__ = [
    "CLEANED_FILE_SUFFIX",
    "DELETED_FILE_SUFFIX",
    "INDEX_FILE_SUFFIX",
    "LOG_FILE_SUFFIX",
    "LOG_OVERHEAD",
    "SWAP_FILE_SUFFIX",
    "TIME_INDEX_FILE_SUFFIX",
    "TXN_INDEX_FILE_SUFFIX",
    "LogSegment",
    "filename_prefix_from_offset",
    "log_file_name",
    "offset_from_file_name",
    "offset_index_file_name",
    "time_index_file_name",
    "transaction_index_file_name",
]
