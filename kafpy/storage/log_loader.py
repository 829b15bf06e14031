"""LogLoader: loads a partition's log from its directory, recovering it if needed.

Kafka 2.8 did this inside Log; Kafka 3.0 moved it into LogLoader, and so does kafpy. The
loader deletes leftover `.deleted` and `.cleaned` files, opens every segment (rebuilding
missing or corrupt indexes), completes interrupted `.swap` operations of the cleaner,
recovers the segments after the recovery point when the broker did not shut down
cleanly (truncating a corrupt tail), and rebuilds the producer state.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kafpy.storage.abstract_index import (
    CorruptIndexError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from kafpy.storage.log_segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    LogSegment,
    filename_prefix_from_offset,
    offset_from_file_name,
    offset_index_file_name,
    time_index_file_name,
    transaction_index_file_name,
)
from kafpy.storage.producer_state_manager import producer_state_at, rebuild_producer_state

if TYPE_CHECKING:
    from kafpy.storage.log import Log

__all__ = ["LoadedLogOffsets", "LogLoader"]

_INDEX_SUFFIXES = (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)


class LoadedLogOffsets(NamedTuple):
    """The offsets a loaded log starts with (Kafka's LoadedLogOffsets)."""

    log_start_offset: int
    recovery_point: int
    next_offset: int


def _is_index_file(name: str) -> bool:
    return name.endswith(_INDEX_SUFFIXES)


def _strip_suffix(path: Path, suffix: str) -> Path:
    return path.with_name(path.name[: -len(suffix)])


def _list_files(dir: Path) -> set[str]:
    """The names of the regular files in `dir`, from one listing (no stat per file)."""
    with os.scandir(dir) as entries:
        return {entry.name for entry in entries if entry.is_file()}


class LogLoader:
    """Fills a new Log with the segments found in its directory (Kafka's LogLoader).

    `LogLoader(log, log_start_offset, recovery_point, had_clean_shutdown,
    marked_for_deletion).load()` adds the segments to `log` through its segment map and
    returns the offsets the log starts with. After an unclean shutdown every segment from
    `recovery_point` on is recovered; the first corrupt batch and everything after it go.
    A directory marked for deletion is only opened: no recovery, no producer state.
    """

    def __init__(
        self,
        log: Log,
        log_start_offset: int,
        recovery_point: int,
        had_clean_shutdown: bool,
        marked_for_deletion: bool,
    ) -> None:
        self._log = log
        self.dir = log.dir
        self.config = log.config
        self.time = log.time
        self.log = log.log  # the log's own logger: the lines keep Kafka 2.8's Log prefix
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.had_clean_shutdown = had_clean_shutdown
        self.marked_for_deletion = marked_for_deletion
        self._files: set[str] = set()  # the names of the dir's files, once listed

    def load(self) -> LoadedLogOffsets:
        """Load the segments into the log, recover them and rebuild the producer state."""
        log = self._log
        next_offset = self._load_segments()
        self.log_start_offset = max(self.log_start_offset, log.log_segments()[0].base_offset)
        if not self.marked_for_deletion:
            rebuild_producer_state(
                log.producer_state_manager,
                log.log_segments(),
                self.log_start_offset,
                next_offset,
                self.time.milliseconds(),
            )
        return LoadedLogOffsets(self.log_start_offset, self.recovery_point, next_offset)

    def _load_segments(self) -> int:
        log = self._log
        # One listing of the directory serves every pass (and the producer state's
        # snapshots): thousands of logs are loaded at start-up, and each listing, stat and
        # Path built per file shows in the total. The passes keep `_files` up to date.
        self._files = _list_files(self.dir)
        swap_files = self._remove_temp_files_and_collect_swap_files()
        log.producer_state_manager.load_snapshots(self._files)
        self._load_segment_files()
        self._complete_swap_operations(swap_files)
        if not log.log_segments():
            log.segments.add(
                LogSegment.open(
                    self.dir, 0, self.config, self.time, preallocate=self.config.preallocate
                )
            )
            return 0
        if self.marked_for_deletion:
            return log.active_segment.read_next_offset()
        next_offset = self._recover_log()
        log.active_segment.resize_indexes(self.config.segment_index_bytes)
        return next_offset

    def _delete_file(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        self._files.discard(path.name)

    def _delete_indices_if_exist(self, base_file: Path, suffix: str = "") -> None:
        self.log.info("Deleting index files with suffix %s for baseFile %s", suffix, base_file)
        offset = offset_from_file_name(base_file.name)
        for path in (
            offset_index_file_name(self.dir, offset, suffix),
            time_index_file_name(self.dir, offset, suffix),
            transaction_index_file_name(self.dir, offset, suffix),
        ):
            self._delete_file(path)

    def _remove_temp_files_and_collect_swap_files(self) -> list[Path]:
        swap_files: list[Path] = []
        clean_files: list[Path] = []
        min_cleaned_offset: int | None = None
        for name in sorted(self._files):
            if not name.endswith((DELETED_FILE_SUFFIX, CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)):
                continue  # the common case: no Path is built for it
            file = self.dir / name
            if name.endswith(DELETED_FILE_SUFFIX):
                self.log.debug("Deleting stray temporary file %s", file)
                self._delete_file(file)
            elif name.endswith(CLEANED_FILE_SUFFIX):
                offset = offset_from_file_name(name)
                min_cleaned_offset = (
                    offset if min_cleaned_offset is None else min(offset, min_cleaned_offset)
                )
                clean_files.append(file)
            elif name.endswith(SWAP_FILE_SUFFIX):
                # Crashed in the middle of a swap: the indexes are rebuilt; a log swap file
                # is completed once the other segments are loaded.
                base_file = _strip_suffix(file, SWAP_FILE_SUFFIX)
                self.log.info("Found file %s from interrupted swap operation.", file)
                if _is_index_file(base_file.name):
                    self._delete_indices_if_exist(base_file)
                elif base_file.name.endswith(LOG_FILE_SUFFIX):
                    self._delete_indices_if_exist(base_file)
                    swap_files.append(file)
        valid_swaps: list[Path] = []
        for file in swap_files:
            # A swap at or after a .cleaned file is part of an unfinished split: drop it.
            if (
                min_cleaned_offset is not None
                and offset_from_file_name(file.name) >= min_cleaned_offset
            ):
                self.log.debug(
                    "Deleting invalid swap file %s minCleanedFileOffset: %d",
                    file,
                    min_cleaned_offset,
                )
                self._delete_indices_if_exist(
                    _strip_suffix(file, SWAP_FILE_SUFFIX), SWAP_FILE_SUFFIX
                )
                self._delete_file(file)
            else:
                valid_swaps.append(file)
        for file in clean_files:
            self.log.debug("Deleting stray .clean file %s", file)
            self._delete_file(file)
        return valid_swaps

    def _load_segment_files(self) -> None:
        files = self._files
        for name in sorted(files):
            if _is_index_file(name):
                offset = offset_from_file_name(name)
                if filename_prefix_from_offset(offset) + LOG_FILE_SUFFIX not in files:
                    file = self.dir / name
                    self.log.warning(
                        "Found an orphaned index file %s, with no corresponding log file.", file
                    )
                    self._delete_file(file)
            elif name.endswith(LOG_FILE_SUFFIX):
                base_offset = offset_from_file_name(name)
                prefix = filename_prefix_from_offset(base_offset)
                offset_index_missing = prefix + INDEX_FILE_SUFFIX not in files
                time_index_missing = prefix + TIME_INDEX_FILE_SUFFIX not in files
                segment = LogSegment.open(
                    self.dir, base_offset, self.config, self.time, file_already_exists=True
                )
                if offset_index_missing or time_index_missing:
                    self.log.error(
                        "Could not find %s file corresponding to log file %s, recovering segment "
                        "and rebuilding index files...",
                        "offset index" if offset_index_missing else "time index",
                        segment.log.file,
                    )
                    self._recover_segment(segment)
                else:
                    try:
                        self._sanity_check(segment)
                    except CorruptIndexError as e:
                        self.log.warning(
                            "Found a corrupted index file corresponding to log file %s due to %s}, "
                            "recovering segment and rebuilding index files...",
                            segment.log.file,
                            e,
                        )
                        self._recover_segment(segment)
                self._log.segments.add(segment)

    def _recover_segment(self, segment: LogSegment) -> int:
        """Recover one segment with the producer state at its base offset, so that its
        `.txnindex` is rebuilt too (Kafka's recoverSegment); the segments before it are
        loaded already. Returns the bytes cut off its end."""
        log = self._log
        earlier = [s for s in log.log_segments() if s.base_offset < segment.base_offset]
        manager = producer_state_at(
            log.topic_partition, self.dir, earlier, self.log_start_offset,
            segment.base_offset, self.time.milliseconds(), self._files,
        )  # fmt: skip
        return segment.recover(manager)

    @staticmethod
    def _sanity_check(segment: LogSegment) -> None:
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
        segment.txn_index.sanity_check()
        # Beyond Kafka's checks: an index pointing past the end of the log is stale.
        last = segment.offset_index.last_entry()
        if segment.offset_index.entries and last.position >= segment.size:
            raise CorruptIndexError(
                f"Index file {segment.offset_index.file} points at position {last.position} "
                f"but the log {segment.log.file} has only {segment.size} bytes"
            )

    def _complete_swap_operations(self, swap_files: list[Path]) -> None:
        log = self._log
        for swap_file in swap_files:
            log_path = _strip_suffix(swap_file, SWAP_FILE_SUFFIX)
            base_offset = offset_from_file_name(log_path.name)
            swap_segment = LogSegment.open(
                self.dir,
                base_offset,
                self.config,
                self.time,
                file_already_exists=True,
                file_suffix=SWAP_FILE_SUFFIX,
            )
            self.log.info(
                "Found log file %s from interrupted swap operation, repairing.", swap_file
            )
            swap_segment.recover()
            next_offset = swap_segment.read_next_offset()
            old = [
                s
                for s in log.segments.in_range(swap_segment.base_offset, next_offset)
                if s.read_next_offset() > swap_segment.base_offset
            ]
            log.replace_segments([swap_segment], old, is_recovered_swap_file=True)

    def _recover_log(self) -> int:
        log = self._log
        if not self.had_clean_shutdown:
            unflushed = log.segments.in_range(self.recovery_point, 2**63 - 1)
            for i, segment in enumerate(unflushed):
                self.log.info(
                    "Recovering unflushed segment %d. %d/%d recovered for %s.",
                    segment.base_offset,
                    i,
                    len(unflushed),
                    log.topic_partition,
                )
                try:
                    truncated = self._recover_segment(segment)
                except (InvalidOffsetError, IndexOffsetOverflowError):
                    self.log.warning(
                        "Found invalid offset during recovery. Deleting the corrupt segment and "
                        "creating an empty one with starting offset %d",
                        segment.base_offset,
                    )
                    truncated = segment.truncate_to(segment.base_offset)
                if truncated > 0:
                    self.log.warning(
                        "Corruption found in segment %d, truncating to offset %d",
                        segment.base_offset,
                        segment.read_next_offset(),
                    )
                    for later in unflushed[i + 1 :]:
                        log.delete_segment(later)
                    break
        if log.log_segments():
            log_end_offset = log.active_segment.read_next_offset()
            if log_end_offset < self.log_start_offset:
                self.log.warning(
                    "Deleting all segments because logEndOffset (%d) is smaller than logStartOffset "
                    "(%d). This could happen if segment files were deleted from the file system.",
                    log_end_offset,
                    self.log_start_offset,
                )
                for segment in log.log_segments():
                    log.delete_segment(segment)
                log.segments.add(
                    LogSegment.open(
                        self.dir,
                        self.log_start_offset,
                        self.config,
                        self.time,
                        preallocate=self.config.preallocate,
                    )
                )
        self.recovery_point = log.active_segment.read_next_offset()
        return self.recovery_point
