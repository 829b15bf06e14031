"""Log: the append-only sequence of segments that stores one partition on disk (Kafka's Log).

A Log owns the directory `<topic>-<partition>`: it has LogLoader load (and if needed
recover) the segments found there, appends batches to the active segment, rolling to a new
one by size, age or index capacity, serves reads by offset, truncates, flushes up to a
recovery point, and deletes old segments by retention time, size and log start offset.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from kafpy.common.errors import (
    InconsistentTopicIdError,
    KafkaError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnsupportedForMessageFormatError,
)
from kafpy.common.file_descriptors import is_out_of_file_descriptors, too_many_open_files
from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.common.logger import component_logger
from kafpy.common.scheduler import Scheduler
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.memory_records import MemoryRecords
from kafpy.storage.abstract_index import (
    InvalidOffsetError,
)
from kafpy.storage.log_append_info import FetchDataInfo, LogAppendInfo, LogOffsetMetadata
from kafpy.storage.log_config import LogConfig, parse_api_version
from kafpy.storage.log_loader import LogLoader
from kafpy.storage.log_segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    LogSegment,
    filename_prefix_from_offset,
    log_file_name,
    offset_index_file_name,
    time_index_file_name,
    transaction_index_file_name,
)
from kafpy.storage.log_segments import LogSegments
from kafpy.storage.log_validator import LogValidator, analyze_and_validate
from kafpy.storage.partition_metadata_file import (
    MalformedPartitionMetadataError,
    PartitionMetadataFile,
)
from kafpy.storage.producer_state_manager import (
    AppendOrigin,
    ProducerStateManager,
    rebuild_producer_state,
)
from kafpy.storage.time_index import NO_TIMESTAMP, TimestampOffset

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1

_DELETE_DIR_PATTERN = re.compile(r"^(\S+)-(\S+)\.(\S+)" + re.escape(DELETE_DIR_SUFFIX) + "$")
_FUTURE_DIR_PATTERN = re.compile(r"^(\S+)-(\S+)\.(\S+)" + re.escape(FUTURE_DIR_SUFFIX) + "$")

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "DELETE_DIR_SUFFIX",
    "EARLIEST_TIMESTAMP",
    "FUTURE_DIR_SUFFIX",
    "LATEST_TIMESTAMP",
    "Log",
    "LogDirFailedError",
    "filename_prefix_from_offset",
    "log_delete_dir_name",
    "log_file_name",
    "offset_index_file_name",
    "parse_topic_partition_name",
    "time_index_file_name",
    "transaction_index_file_name",
]


# the longest file name the file systems Kafka runs on take, in bytes
MAX_FILE_NAME_BYTES = 255


def log_delete_dir_name(tp: TopicPartition) -> str:
    """The name a deleted partition's directory is renamed to: `t-0.<uuid hex>-delete`.

    As Kafka 3.x does, the topic part is cut so that the name fits in 255 bytes: a legal
    topic name has up to 249 characters, and with the suffix it would not fit otherwise.
    (Only the files' deletion reads the name back; a cut topic name is enough for it.)
    """
    suffix = f"-{tp.partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return tp.topic[: max(0, MAX_FILE_NAME_BYTES - len(suffix))] + suffix


def parse_topic_partition_name(dir: Path) -> TopicPartition:
    """The partition a log directory holds (`t-0`, or `t-0.<uuid>-delete` when deleted)."""
    name = Path(dir).name

    def error() -> KafkaStorageError:
        return KafkaStorageError(
            f"Found directory {Path(dir).resolve()}, '{name}' is not in the form of "
            "topic-partition or topic-partition.uniqueId-delete (if marked for deletion). "
            "Kafka's log directories (and children) should only contain Kafka topic data; "
            "move anything else out of the log dir."
        )

    if not name or "-" not in name:
        raise error()
    if name.endswith(DELETE_DIR_SUFFIX) or name.endswith(FUTURE_DIR_SUFFIX):
        pattern = _DELETE_DIR_PATTERN if name.endswith(DELETE_DIR_SUFFIX) else _FUTURE_DIR_PATTERN
        if not pattern.match(name):
            raise error()
        name = name[: name.rindex(".")]
    topic, _, partition = name.rpartition("-")
    if not topic or not partition or not partition.isdigit():
        raise error()
    return TopicPartition(topic, int(partition))


class Log:
    """An append-only log of one partition: ordered segments, the last one active.

    `Log(dir, config, log_start_offset, recovery_point, scheduler, time,
    had_clean_shutdown)` loads the segments in `dir` through LogLoader, which after an
    unclean shutdown recovers every segment from `recovery_point` on. All state changes
    happen under one re-entrant lock; `flush` does its fsyncs outside it.
    """

    def __init__(
        self,
        dir: Path,
        config: LogConfig,
        log_start_offset: int,
        recovery_point: int,
        scheduler: Scheduler,
        time: Time,
        had_clean_shutdown: bool = True,
    ) -> None:
        self.dir = Path(dir)
        self.config = config
        self.scheduler = scheduler
        self.time = time
        self.topic_partition = parse_topic_partition_name(self.dir)
        self._validator = LogValidator(config, self.topic_partition)
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        # called (on whichever thread made the change) after a truncation or a move of the
        # log start offset, changes that may bypass the Partition (retention, LogManager):
        # the Partition that serves this log listens, for the fetch sessions (KIP-227)
        self.change_listener: Callable[[], None] | None = None
        # guards every change of state; the cleaner holds it while it swaps segments in
        self.lock = threading.RLock()
        self.segments = LogSegments()
        self._closed = False
        self.last_flush_time = time.milliseconds()
        self.log = component_logger(
            "kafpy.log.Log", f"Log partition={self.topic_partition}, dir={self.dir.parent}"
        )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.partition_metadata_file = PartitionMetadataFile(self.dir)
        self.topic_id: uuid.UUID | None = None  # KIP-516; from partition.metadata
        try:
            self.topic_id = self.partition_metadata_file.read()
        except MalformedPartitionMetadataError as e:
            # the data is intact; the next LeaderAndIsr with the topic id writes the file again
            self.log.error("Ignoring the topic id of this log: %s", e)
        self.producer_state_manager = ProducerStateManager(self.topic_partition, self.dir)
        start = time.milliseconds()
        try:
            loaded = LogLoader(
                self,
                log_start_offset,
                recovery_point,
                had_clean_shutdown,
                marked_for_deletion=self.dir.name.endswith(DELETE_DIR_SUFFIX),
            ).load()
        except BaseException:
            self.close_handlers()  # the segments opened so far give their descriptors back
            raise
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        self._update_log_end_offset(loaded.next_offset)
        self.log.info(
            "Completed load of log with %d segments, log start offset %d and log end offset %d in %d ms",
            len(self.segments),
            self.log_start_offset,
            self._leo,
            time.milliseconds() - start,
        )

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Record the topic's id (in memory and in partition.metadata) the first time it is
        learnt; InconsistentTopicIdError if the log already belongs to another id."""
        if self.topic_id is not None:
            if self.topic_id != topic_id:
                raise InconsistentTopicIdError(
                    f"Tried to assign topic ID {uuid_to_string(topic_id)} to log for topic "
                    f"partition {self.topic_partition}, but log already contained topic ID "
                    f"{uuid_to_string(self.topic_id)}"
                )
            return
        self.partition_metadata_file.write(topic_id)
        self.topic_id = topic_id

    # -- properties --------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return LogOffsetMetadata(self._leo, self._leo_segment_base, self._leo_position)

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active_segment

    def log_segments(self) -> list[LogSegment]:
        """The segments, oldest first (a copy)."""
        with self.lock:
            return self.segments.values()

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        with self.lock:
            return self.segments.size_in_bytes()

    @property
    def unflushed_messages(self) -> int:
        return self._leo - self.recovery_point

    def update_config(self, config: LogConfig) -> None:
        with self.lock:
            old, new = self.config.record_version, config.record_version
            if new < old:
                self.log.warning(
                    "Record format version has been downgraded from V%d to V%d.", old, new
                )
            self.config = config
            self._validator = LogValidator(config, self.topic_partition)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(
                f"The log of partition {self.topic_partition} in {self.dir} is closed; "
                "it cannot be read or written until it is loaded again."
            )

    def _update_log_end_offset(self, offset: int) -> None:
        active = self.active_segment
        self._leo = offset
        self._leo_segment_base = active.base_offset
        self._leo_position = active.size

    def replace_segments(
        self,
        new_segments: list[LogSegment],
        old_segments: list[LogSegment],
        is_recovered_swap_file: bool = False,
    ) -> None:
        """Swap `old_segments` for `new_segments` crash-safely (the cleaner's last step,
        and the loader's completion of an interrupted one)."""
        with self.lock:
            new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
            if not is_recovered_swap_file:
                for s in new_sorted:
                    s.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
            for s in new_sorted:
                self.segments.add(s)
            new_bases = {s.base_offset for s in new_sorted}
            for s in sorted(old_segments, key=lambda s: s.base_offset):
                if s.base_offset not in new_bases:
                    self.segments.remove(s.base_offset)
                self._async_delete_segment(s)
            for s in new_sorted:
                s.change_file_suffixes(SWAP_FILE_SUFFIX, "")

    # -- appending ---------------------------------------------------------------------------------

    def append_as_leader(
        self, records: MemoryRecords, leader_epoch: int, is_from_client: bool = True
    ) -> LogAppendInfo:
        """Validate `records`, assign them the next offsets and append them.

        Raises MessageTooLargeError (a batch over max.message.bytes), RecordListTooLargeError
        (the append over segment.bytes), CorruptRecordError (bad CRC or length),
        InvalidRecordError (bad magic or header) and InvalidTimestampError; for idempotent
        producers OutOfOrderSequenceError, InvalidProducerEpochError and
        InvalidTxnStateError. A retried batch is not written again: the returned info
        carries the offsets it was written at (shallow_count 0). An I/O error raises
        LogDirFailedError, with the active segment as it was before the append.
        """
        # The produce hot path: one header walk (validator), one roll check, one write;
        # _write is inlined here because each Python call costs a few percent of an append.
        buffer = records.buffer()
        with self.lock:
            if self._closed:
                self._check_open()
            now = self.time.milliseconds()
            data, info = self._validator.validate_and_assign_offsets(
                buffer,
                self._leo,
                now,
                leader_epoch,
                is_from_client,
                records.records_validated,
                records.converted,
            )
            if not info.shallow_count:
                return info
            # Idempotent producers, per batch, before anything is written (Kafka's
            # analyzeAndValidateProducerState): a retried batch gets its original offsets.
            psm = self.producer_state_manager
            producers = psm.analyze_and_validate(
                data,
                AppendOrigin.CLIENT if is_from_client else AppendOrigin.COORDINATOR,
                info.producer_batches,
            )
            if producers is not None and producers.duplicate is not None:
                return producers.duplicate_append_info(
                    info, self.log_start_offset, self._validator.log_append_time
                )
            info.log_start_offset = self.log_start_offset
            config = self.config
            size = len(data)
            if size > config.segment_bytes:
                self._check_append_size(size)
            segment = self.segments.active_segment
            last_offset = info.last_offset
            try:
                if segment.should_roll(
                    config.segment_bytes,
                    config.max_segment_ms,
                    size,
                    info.max_timestamp,
                    last_offset,
                    now,
                ):
                    segment = self._roll_for_append(segment, info, now)
                segment.append(last_offset, info.max_timestamp, info.offset_of_max_timestamp, data)
            except OSError as e:
                raise self._io_error("Error while appending records to", e) from e
            self._leo = last_offset + 1
            if producers is not None:
                for aborted in psm.apply(producers):
                    segment.txn_index.append(aborted)
            psm.map_end_offset = self._leo
            self._leo_segment_base = segment.base_offset
            self._leo_position = segment.log.size
            if self._leo - self.recovery_point >= config.flush_messages:
                self.flush()
            return info

    def append_as_follower(self, records: MemoryRecords) -> LogAppendInfo:
        """Append batches replicated from the leader, keeping their offsets.

        The batches are checked (sizes, magic, CRC) and their offsets must increase from
        the log end offset (UnexpectedAppendOffsetError otherwise).
        """
        buffer = records.buffer()
        with self.lock:
            self._check_open()
            now = self.time.milliseconds()
            info = analyze_and_validate(buffer, self.config, False)
            if info.shallow_count == 0:
                return info
            data = buffer if info.valid_bytes == len(buffer) else buffer[: info.valid_bytes]
            if not info.offsets_monotonic:
                raise InvalidOffsetError(
                    f"Out of order offsets found in append to {self.topic_partition}: the batches "
                    f"end at offsets that do not increase (last {info.last_offset})"
                )
            if info.first_offset < self._leo:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.topic_partition}. First offset "
                    f"{info.first_offset} is less than the next offset {self._leo}. Last offset "
                    f"in append: {info.last_offset}. Log start offset = {self.log_start_offset}"
                )
            psm = self.producer_state_manager
            producers = psm.analyze_and_validate(data, AppendOrigin.REPLICATION)
            try:
                self._write(data, info, now)
            except OSError as e:
                raise self._io_error("Error while appending records to", e) from e
            if producers is not None:
                for aborted in psm.apply(producers):
                    self.segments.active_segment.txn_index.append(aborted)
            psm.map_end_offset = self._leo
            return info

    def _io_error(self, msg: str, e: OSError) -> KafkaStorageError:
        """`msg` about this log, for an I/O error: its data dir is to go offline. Running
        out of file descriptors is no I/O error: the operation is refused, the dir stays."""
        parent = self.dir.parent
        if is_out_of_file_descriptors(e):
            return too_many_open_files(f"{msg} {self.topic_partition} in dir {parent}", e)
        return LogDirFailedError(
            f"{msg} {self.topic_partition} in dir {parent}: {e.strerror or e}", parent
        )

    def _write(self, data: memoryview, info: LogAppendInfo, now: int) -> None:
        """Append validated batches to the active segment, rolling first if it is due."""
        info.log_start_offset = self.log_start_offset
        config = self.config
        size = len(data)
        if size > config.segment_bytes:
            self._check_append_size(size)
        segment = self.segments.active_segment
        if segment.should_roll(
            config.segment_bytes,
            config.max_segment_ms,
            size,
            info.max_timestamp,
            info.last_offset,
            now,
        ):
            segment = self._roll_for_append(segment, info, now)
        segment.append(info.last_offset, info.max_timestamp, info.offset_of_max_timestamp, data)
        self._leo = info.last_offset + 1
        self._leo_segment_base = segment.base_offset
        self._leo_position = segment.log.size
        if self._leo - self.recovery_point >= config.flush_messages:
            self.flush()

    def _check_append_size(self, size: int) -> None:
        if size > self.config.segment_bytes:
            raise RecordListTooLargeError(
                f"Message batch size is {size} bytes in append to partition {self.topic_partition}, "
                f"which exceeds the maximum configured segment size of {self.config.segment_bytes} "
                "(segment.bytes)."
            )

    def _roll_for_append(self, segment: LogSegment, info: LogAppendInfo, now: int) -> LogSegment:
        config = self.config
        self.log.debug(
            "Rolling new log segment (log_size = %d/%d, offset_index_size = %d/%d, "
            "time_index_size = %d/%d, inactive_time_ms = %d/%d).",
            segment.size,
            config.segment_bytes,
            segment.offset_index.entries,
            segment.offset_index.max_entries,
            segment.time_index.entries,
            segment.time_index.max_entries,
            segment.time_waited_for_roll(now, info.max_timestamp),
            config.max_segment_ms - segment.roll_jitter_ms,
        )
        if info.first_offset >= 0:
            return self.roll(info.first_offset)
        return self.roll(info.last_offset - (2**31 - 1))

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, log end offset)."""
        start = self.time.hi_res_milliseconds()
        with self.lock:
            self._check_open()
            new_offset = max(expected_next_offset or 0, self._leo)
            if new_offset in self.segments:
                active = self.active_segment
                if active.base_offset == new_offset and active.size == 0:
                    self.log.warning(
                        "Trying to roll a new log segment with start offset %d =max(provided offset = "
                        "%s, LEO = %d) while it already exists and is active with size 0. Size of time "
                        "index: %d, size of offset index: %d.",
                        new_offset,
                        expected_next_offset,
                        self._leo,
                        active.time_index.entries,
                        active.offset_index.entries,
                    )
                    self.delete_segment(active)
                else:
                    raise KafkaError(
                        f"Trying to roll a new log segment for topic partition {self.topic_partition} "
                        f"with start offset {new_offset} =max(provided offset = {expected_next_offset}, "
                        f"LEO = {self._leo}) while it already exists. Existing segment is "
                        f"{self.segments.get(new_offset)}."
                    )
            elif not self.segments.is_empty and new_offset < self.active_segment.base_offset:
                raise KafkaError(
                    f"Trying to roll a new log segment for topic partition {self.topic_partition} with "
                    f"start offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = "
                    f"{self._leo}) lower than start offset of the active segment {self.active_segment}"
                )
            else:
                for path in (
                    log_file_name(self.dir, new_offset),
                    offset_index_file_name(self.dir, new_offset),
                    time_index_file_name(self.dir, new_offset),
                    transaction_index_file_name(self.dir, new_offset),
                ):
                    if path.exists():
                        self.log.warning(
                            "Newly rolled segment file %s already exists; deleting it first", path
                        )
                        path.unlink()
                if not self.segments.is_empty:
                    self.active_segment.on_become_inactive_segment()
            segment = self.segments.add(
                LogSegment.open(
                    self.dir,
                    new_offset,
                    self.config,
                    self.time,
                    preallocate=self.config.preallocate,
                )
            )
            self._update_log_end_offset(self._leo)
            # a snapshot at the new segment's base offset lets recovery start from this segment
            self.producer_state_manager.update_map_end_offset(new_offset)
            self.producer_state_manager.take_snapshot()
            self._schedule("flush-log", lambda: self.flush(new_offset), 0)
            self.log.info(
                "Rolled new log segment at offset %d in %d ms.",
                new_offset,
                self.time.hi_res_milliseconds() - start,
            )
            return segment

    def _load_producer_state(self, last_offset: int) -> None:
        """Bring the producer state to `last_offset` from snapshots and the log."""
        rebuild_producer_state(
            self.producer_state_manager,
            self.log_segments(),
            self.log_start_offset,
            last_offset,
            self.time.milliseconds(),
        )

    def _schedule(self, name: str, fun: Callable[[], object], delay_ms: int) -> None:
        if self.scheduler.is_started:
            self.scheduler.schedule(name, fun, delay_ms)
        else:
            fun()  # no scheduler running (tools, shutdown): do it now

    # -- flushing ----------------------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets below `offset` (default: the log end offset)
        and move the recovery point there."""
        if offset is None:
            offset = self._leo
        if offset <= self.recovery_point:
            return
        self.log.debug(
            "Flushing log up to offset %d, last flushed: %d,  current time: %d, unflushed: %d",
            offset,
            self.last_flush_time,
            self.time.milliseconds(),
            self.unflushed_messages,
        )
        with self.lock:
            unflushed = self.segments.in_range(self.recovery_point, offset)
        for segment in unflushed:
            try:
                try:
                    segment.flush()
                except FileNotFoundError:
                    # Flushing opens the files by name (a closed segment file, the
                    # indexes): the dir may have been renamed meanwhile. rename_dir holds
                    # the lock until the segments know their new names; then try again.
                    with self.lock:
                        pass
                    segment.flush()
            except (OSError, ValueError) as e:
                if self.segments.holds(segment):
                    if isinstance(e, OSError):
                        raise self._io_error("Error while flushing the log of", e) from e
                    raise
                # the segment was deleted or closed meanwhile: nothing left to flush
        with self.lock:
            self._check_open()
            self.mark_flushed(offset)

    def mark_flushed(self, offset: int) -> None:
        """Move the recovery point to `offset`, for a caller that made everything below it
        durable itself (Kafka's LocalLog.markFlushed); the LogManager's clean shutdown
        syncs the file system once for all its closed logs."""
        with self.lock:
            if offset > self.recovery_point:
                self.recovery_point = offset
                self.last_flush_time = self.time.milliseconds()

    # -- reading -----------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_length: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
        include_aborted_txns: bool = False,
    ) -> FetchDataInfo:
        """Read up to `max_length` bytes of stored batches from the one holding `start_offset`.

        `max_offset` bounds the read (exclusive, e.g. the high watermark); with
        `min_one_message` the first batch comes whole even if larger than `max_length`.
        Raises OffsetOutOfRangeError outside [log_start_offset, log_end_offset].
        """
        with self.lock:
            self._check_open()
            next_offset = self._leo
            if start_offset == next_offset:
                return FetchDataInfo(
                    self.log_end_offset_metadata,
                    MemoryRecords.empty(),
                    aborted_transactions=[] if include_aborted_txns else None,
                )
            segment = self.segments.floor_segment(start_offset)
            if (
                start_offset > next_offset
                or segment is None
                or start_offset < self.log_start_offset
            ):
                raise OffsetOutOfRangeError(
                    f"Received request for offset {start_offset} for partition {self.topic_partition}, "
                    f"but we only have log segments in the range {self.log_start_offset} to {next_offset}."
                )
            active = self.segments.active_segment
            while segment is not None:
                max_position = self._leo_position if segment is active else segment.size
                info = segment.read(
                    start_offset, max_offset, max_length, max_position, min_one_message
                )
                if info is not None:
                    if include_aborted_txns:
                        return self._add_aborted_transactions(start_offset, segment, info)
                    return info
                segment = self.segments.higher_segment(segment.base_offset)
            return FetchDataInfo(self.log_end_offset_metadata, MemoryRecords.empty())

    def _add_aborted_transactions(
        self, start_offset: int, segment: LogSegment, info: FetchDataInfo
    ) -> FetchDataInfo:
        fetch_size = info.records.size_in_bytes
        start_position = info.fetch_offset_metadata.relative_position_in_segment
        upper = segment.offset_index.fetch_upper_bound_offset(
            segment.offset_index.lookup(start_offset)._replace(position=start_position), fetch_size
        )
        higher = self.segments.higher_segment(segment.base_offset)
        if upper is not None:
            upper_bound = upper.offset
        elif higher is not None:
            upper_bound = higher.base_offset
        else:
            upper_bound = self._leo
        aborted = []
        for s in self.segments.from_base(segment.base_offset):
            result = s.txn_index.collect_aborted_txns(start_offset, upper_bound)
            aborted.extend(result.aborted_transactions)
            if result.is_complete:
                break
        return FetchDataInfo(
            info.fetch_offset_metadata, info.records, info.first_entry_incomplete, aborted
        )

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampOffset | None:
        """The first offset whose record timestamp is >= target (-2: earliest, -1: latest)."""
        with self.lock:
            segments = self.log_segments()
            if target_timestamp == EARLIEST_TIMESTAMP:
                return TimestampOffset(NO_TIMESTAMP, self.log_start_offset)
            if target_timestamp == LATEST_TIMESTAMP:
                return TimestampOffset(NO_TIMESTAMP, self._leo)
            if self.config.record_version == 0:
                raise UnsupportedForMessageFormatError(
                    "Cannot search offsets based on timestamp because message format version "
                    f"for partition {self.topic_partition} is "
                    f"{parse_api_version(self.config.message_format_version)} which is earlier "
                    "than the minimum required version 0.10.0-IV0"
                )
            for segment in segments:
                if segment.largest_timestamp >= target_timestamp:
                    return segment.find_offset_by_timestamp(target_timestamp, self.log_start_offset)
            return None

    def legacy_fetch_offsets_before(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0's answer (Kafka's Log.legacyFetchOffsetsBefore): segment base
        offsets, newest first, of the segments last modified at or before `timestamp`,
        with the log end offset first when the active segment is not empty; -1 (latest)
        starts from the newest, -2 (earliest) gives the log start offset."""
        with self.lock:
            segments = self.log_segments()
            entries = [(s.base_offset, s.last_modified) for s in segments]
            if segments and segments[-1].size > 0:
                entries.append((self._leo, self.time.milliseconds()))
            if timestamp == LATEST_TIMESTAMP:
                start = len(entries) - 1
            elif timestamp == EARLIEST_TIMESTAMP:
                start = 0
            else:
                start = -1
                for i, (_offset, modified) in enumerate(entries):
                    if modified <= timestamp:
                        start = i
            offsets = [entries[i][0] for i in range(start, -1, -1)][:max_num_offsets]
            return [max(o, self.log_start_offset) for o in offsets]

    # -- truncation --------------------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every batch at or after `target_offset`; False if there was nothing to remove.

        Batches are never split: a batch holding `target_offset` goes whole, and the log end
        offset becomes that batch's base offset.
        """
        if target_offset < 0:
            raise ValueError(
                f"Cannot truncate partition {self.topic_partition} to a negative offset ({target_offset})."
            )
        with self.lock:
            self._check_open()
            if target_offset >= self._leo:
                self.log.info(
                    "Truncating to %d has no effect as the largest offset in the log is %d",
                    target_offset,
                    self._leo - 1,
                )
                return False
            self.log.info("Truncating to offset %d", target_offset)
            if self.segments.base_offsets[0] > target_offset:
                self.truncate_fully_and_start_at(target_offset)
            else:
                for segment in [s for s in self.log_segments() if s.base_offset > target_offset]:
                    self.delete_segment(segment)
                active = self.active_segment
                active.truncate_to(target_offset)
                self._update_log_end_offset(min(target_offset, active.read_next_offset()))
                self.recovery_point = min(self._leo, self.recovery_point)
                self.log_start_offset = min(self._leo, self.log_start_offset)
                self._load_producer_state(self._leo)
        self._changed()
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and start an empty log at `new_offset`."""
        with self.lock:
            self._check_open()
            self.log.debug("Truncate and start at offset %d", new_offset)
            for segment in self.log_segments():
                self.delete_segment(segment)
            self.segments.add(
                LogSegment.open(
                    self.dir,
                    new_offset,
                    self.config,
                    self.time,
                    preallocate=self.config.preallocate,
                )
            )
            self._update_log_end_offset(new_offset)
            self.recovery_point = min(new_offset, self.recovery_point)
            self.log_start_offset = new_offset
            self.producer_state_manager.truncate()
            self.producer_state_manager.update_map_end_offset(new_offset)
        self._changed()

    # -- retention ----------------------------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> None:
        """Move the log start offset forward (DeleteRecords); segments below it go at retention."""
        with self.lock:
            if new_log_start_offset > self._leo:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                    f"{self.topic_partition} since it is larger than the log end offset {self._leo}"
                )
            self._check_open()
            if new_log_start_offset <= self.log_start_offset:
                return
            self.log.info("Incrementing log start offset to %d", new_log_start_offset)
            self.log_start_offset = new_log_start_offset
            self.producer_state_manager.truncate_head(new_log_start_offset)
        self._changed()

    def _changed(self) -> None:
        listener = self.change_listener
        if listener is not None:
            listener()

    def delete_old_segments(
        self,
        predicate: Callable[[LogSegment, LogSegment | None], bool] | None = None,
        reason: str = "",
    ) -> int:
        """Delete the segments retention no longer keeps; returns how many.

        Without a predicate: by retention.ms and retention.bytes when cleanup.policy has
        "delete", and always the segments wholly below the log start offset.
        """
        if predicate is not None:
            return self._delete_old_segments(predicate, reason)
        if self.config.delete:
            return (
                self._delete_retention_ms_breached_segments()
                + self._delete_retention_size_breached_segments()
                + self._delete_log_start_offset_breached_segments()
            )
        return self._delete_log_start_offset_breached_segments()

    def _delete_retention_ms_breached_segments(self) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        start_ms = self.time.milliseconds()
        return self._delete_old_segments(
            lambda segment, _next: start_ms - segment.largest_timestamp > retention_ms,
            f"retention time {retention_ms}ms breach",
        )

    def _delete_retention_size_breached_segments(self) -> int:
        retention_bytes = self.config.retention_bytes
        size = self.size
        if retention_bytes < 0 or size < retention_bytes:
            return 0
        diff = size - retention_bytes

        def should_delete(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal diff
            if diff - segment.size >= 0:
                diff -= segment.size
                return True
            return False

        return self._delete_old_segments(
            should_delete, f"retention size in bytes {retention_bytes} breach"
        )

    def _delete_log_start_offset_breached_segments(self) -> int:
        def should_delete(segment: LogSegment, next_segment: LogSegment | None) -> bool:
            return next_segment is not None and next_segment.base_offset <= self.log_start_offset

        return self._delete_old_segments(
            should_delete, f"log start offset {self.log_start_offset} breach"
        )

    def _deletable_segments(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool]
    ) -> list[LogSegment]:
        deletable: list[LogSegment] = []
        segments = self.log_segments()
        for i, segment in enumerate(segments):
            next_segment = segments[i + 1] if i + 1 < len(segments) else None
            is_last_and_empty = next_segment is None and segment.size == 0
            if predicate(segment, next_segment) and not is_last_and_empty:
                deletable.append(segment)
            else:
                break
        return deletable

    def _delete_old_segments(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool], reason: str
    ) -> int:
        with self.lock:
            self._check_open()
            deletable = self._deletable_segments(predicate)
            if not deletable:
                return 0
            self.log.info(
                "Found deletable segments with base offsets [%s] due to %s",
                ",".join(str(s.base_offset) for s in deletable),
                reason,
            )
            if len(deletable) == len(self.segments):
                # a log always keeps one segment: roll first when every segment goes
                self.roll()
            for segment in deletable:
                self.delete_segment(segment)
            self.maybe_increment_log_start_offset(self.segments.base_offsets[0])
            return len(deletable)

    def delete_segment(self, segment: LogSegment) -> None:
        """Take `segment` out of the log and delete its files after file.delete.delay.ms."""
        self.log.info(
            "Scheduling log segment [baseOffset %d, size %d] for deletion.",
            segment.base_offset,
            segment.size,
        )
        with self.lock:
            if self.segments.holds(segment):
                self.segments.remove(segment.base_offset)
            self._async_delete_segment(segment)

    def _async_delete_segment(self, segment: LogSegment) -> None:
        """Rename the segment's files to `.deleted`, then delete them after file.delete.delay.ms."""
        segment.change_file_suffixes("", DELETED_FILE_SUFFIX)

        def delete_seg() -> None:
            self.log.info("Deleting segment %d", segment.base_offset)
            segment.delete_if_exists()

        self._schedule("delete-file", delete_seg, self.config.file_delete_delay_ms)

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self, sync: bool = True) -> None:
        """Close every segment (trimming the indexes); the files stay. Without `sync` the
        producer snapshot written here is not fsynced: the caller syncs the file system."""
        self.log.debug("Closing log")
        with self.lock:
            if self._closed:
                return
            # a snapshot at the log end offset spares the next start-up a scan of the log
            self.producer_state_manager.take_snapshot(sync=sync)
            for segment in self.log_segments():
                segment.close()
            self._closed = True

    def close_handlers(self) -> None:
        """Close the files without trimming (after a storage error)."""
        with self.lock:
            for segment in self.log_segments():
                segment.close_handlers()
            self._closed = True

    def delete(self) -> None:
        """Delete every file of the log and its directory."""
        with self.lock:
            for segment in self.log_segments():
                segment.delete_if_exists()
            self.segments.clear()
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def rename_dir(self, name: str) -> None:
        """Move the log directory to `name` in the same parent (e.g. its `-delete` name)."""
        with self.lock:
            renamed = self.dir.parent / name
            os.replace(self.dir, renamed)
            if renamed != self.dir:
                self.dir = renamed
                self.producer_state_manager.log_dir = renamed
                for segment in self.log_segments():
                    segment.update_dir(renamed)
                self.log = component_logger(
                    "kafpy.log.Log", f"Log partition={self.topic_partition}, dir={self.dir.parent}"
                )

    def __repr__(self) -> str:
        return f"Log(dir={self.dir}, topic={self.topic_partition.topic}, partition={self.topic_partition.partition})"


class LogDirFailedError(KafkaStorageError):
    """An I/O error on a log's files (Kafka's KafkaStorageException from an IOException):
    `log_dir` names the data dir to take offline."""

    def __init__(self, message: str, log_dir: Path) -> None:
        super().__init__(message)
        self.log_dir = log_dir


class UnexpectedAppendOffsetError(KafkaError):
    """A follower append starts below the log end offset (Kafka's UnexpectedAppendOffsetException)."""
