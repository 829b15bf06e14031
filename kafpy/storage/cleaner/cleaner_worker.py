"""The cleaner's worker process side: one compaction round's CPU-heavy part, on plain data.

The broker's CleanerThread describes a round as a CleanTask (segment file paths, base
offsets, the offsets range, the delete horizon, the log's config) and hands it to its
worker process (kafpy.storage.cleaner.cleaner_process). The worker opens the segments'
`.log` files read-only, builds the offset map, writes each group's `.cleaned` segment
(log and indexes), closes it and returns a CleanResult describing the cleaned segments,
with the round's CleanerStats. It never touches the Log, the cleaner states or the
checkpoint, and never renames a file: the broker reopens the `.cleaned` segments and
swaps them in under the Log's lock.

The broker aborts a round by setting the worker's abort Event; the worker sees it
between read chunks and segments, deletes its `.cleaned` files and raises
RoundAbortedError.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

from kafpy.common.time import SYSTEM_TIME
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.cleaner.cleaner import Cleaner, CleanerStats
from kafpy.storage.cleaner.offset_map import SkimpyOffsetMap
from kafpy.storage.cleaner.throttler import Throttler
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_segment import (
    CLEANED_FILE_SUFFIX,
    LogSegment,
    log_file_name,
    offset_index_file_name,
    time_index_file_name,
    transaction_index_file_name,
)
from kafpy.storage.transaction_index import AbortedTxn


class RoundAbortedError(Exception):
    """Raised in the worker when the broker asked it to stop the round."""


@dataclass(frozen=True)
class SegmentInfo:
    """One source segment as the worker sees it: its files and the sizes taken in the broker."""

    base_offset: int
    log_file: str
    size: int
    offset_index_bytes: int
    time_index_bytes: int
    last_modified: int
    largest_timestamp: int


@dataclass(frozen=True)
class CleanTask:
    """One round of one log, in plain data (see the module docstring).

    `segments` are the log's segments below `first_uncleanable_offset`, oldest first.
    """

    round_id: int
    topic_partition: TopicPartition
    dir: str
    config: LogConfig
    segments: list[SegmentInfo]
    first_dirty_offset: int
    first_uncleanable_offset: int
    delete_horizon_ms: int
    last_offset_of_producer: dict[int, int] = field(default_factory=dict)
    aborted_transactions: list[AbortedTxn] = field(default_factory=list)


@dataclass(frozen=True)
class CleanedSegmentInfo:
    """A `.cleaned` segment written by the worker and the source segments it replaces."""

    base_offset: int
    replaces: list[int]


@dataclass(frozen=True)
class CleanResult:
    """What a round produced: the next dirty offset, the cleaned segments (in offset
    order, all closed) and the stats."""

    end_offset: int
    cleaned: list[CleanedSegmentInfo]
    stats: CleanerStats


class _ReadOnlyRecords:
    """A segment's `.log` file opened read-only, its size fixed to the broker's view."""

    def __init__(self, file: str, size: int) -> None:
        self.fd = os.open(file, os.O_RDONLY)
        self.size = size

    def close(self) -> None:
        os.close(self.fd)


class _IndexSize:
    def __init__(self, size_in_bytes: int) -> None:
        self.size_in_bytes = size_in_bytes


class _SourceView:
    """A read-only stand-in for a LogSegment the Cleaner reads (its SourceSegment protocol,
    plus the sizes group_segments_by_size looks at)."""

    def __init__(self, info: SegmentInfo) -> None:
        self.info = info
        self.base_offset = info.base_offset
        self.size = info.size
        self.offset_index = _IndexSize(info.offset_index_bytes)
        self.time_index = _IndexSize(info.time_index_bytes)
        self.log = _ReadOnlyRecords(info.log_file, info.size)
        self.last_modified = info.last_modified
        self.largest_timestamp = info.largest_timestamp


def cleaned_file_names(dir: Path, base_offset: int) -> list[Path]:
    """Every file of the `.cleaned` segment of `base_offset` in `dir`."""
    return [
        f(dir, base_offset, CLEANED_FILE_SUFFIX)
        for f in (
            log_file_name,
            offset_index_file_name,
            time_index_file_name,
            transaction_index_file_name,
        )
    ]


def discard_cleaned_files(dir: Path, base_offsets: list[int]) -> None:
    """Delete the `.cleaned` files a round may have left for these base offsets."""
    for base in base_offsets:
        for f in cleaned_file_names(dir, base):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass


# -- the worker process ------------------------------------------------------------------------------

_abort: Event | None = None
_progress: Queue[tuple[int, CleanedSegmentInfo]] | None = None
_cleaner: Cleaner | None = None


def init_worker(
    abort: Event,
    progress: Queue[tuple[int, CleanedSegmentInfo]],
    offset_map_memory: int,
    hash_algorithm: str,
    load_factor: float,
    io_buffer_size: int,
    max_io_buffer_size: int,
    max_io_bytes_per_second: float,
    thread_id: int,
    log_level: int,
    logs_dir: str | None = None,
    broker_pid: int | None = None,
) -> None:
    """The worker's initializer: tie the worker's life to its broker's (`broker_pid`),
    keep the abort Event and the progress Queue (where each group's cleaned segment is
    announced as soon as it is written) and build this process's Cleaner (its offset map
    is reused by every round, as a cleaner thread's is)."""
    global _abort, _progress, _cleaner
    if broker_pid is not None:
        exit_with_parent(broker_pid)
    from kafpy.common.logger import configure_logging  # noqa: PLC0415

    # the broker rolls the files; the worker follows them
    configure_logging(log_level, logs_dir=logs_dir, roll_files=False)
    # Ctrl-C reaches the whole process group: the broker stops the worker itself on shutdown
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # background work: the broker's event loop gets the CPU first when both want it
    os.nice(10)
    _abort = abort
    _progress = progress
    _cleaner = Cleaner(
        thread_id,
        SkimpyOffsetMap(offset_map_memory, hash_algorithm, load_factor),
        io_buffer_size,
        max_io_buffer_size,
        load_factor,
        # each worker has its own throttler; the broker gives it its share of the rate
        Throttler(max_io_bytes_per_second, 300, SYSTEM_TIME),
        SYSTEM_TIME,
        _check_abort,
    )


PARENT_WATCH_INTERVAL_S = 1.0
_PR_SET_PDEATHSIG = 1


def exit_with_parent(parent_pid: int) -> None:
    """End this process when `parent_pid` (its parent, the broker) dies, however it dies.

    On Linux, prctl(PR_SET_PDEATHSIG) has the kernel send SIGKILL when the parent goes
    (a broker killed with SIGKILL runs no shutdown code, so nothing else would stop the
    worker; its .cleaned files are discarded when the broker loads the log again). As a
    fallback, and where prctl is missing, a daemon thread watches for the worker being
    handed to another parent. Exits at once if the parent is already gone.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        except (OSError, AttributeError) as e:
            logging.getLogger("kafpy.log.LogCleaner").warning(
                "Cleaner worker %d cannot ask to die with its broker (%s); watching it instead",
                os.getpid(),
                e,
            )
    # the parent may have died before prctl took effect: then this process has a new one
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_WATCH_INTERVAL_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="cleaner-parent-watch", daemon=True).start()


def _check_abort(tp: object) -> None:
    if _abort is not None and _abort.is_set():
        raise RoundAbortedError(f"Cleaning of partition {tp} was aborted")


def clean_in_worker(task: CleanTask) -> CleanResult:
    """Run the CPU-heavy part of a round (in the worker process, after init_worker)."""
    if _cleaner is None or _progress is None:
        raise RuntimeError("clean_in_worker runs only in a cleaner worker process (init_worker)")
    progress = _progress
    return run_round(_cleaner, task, lambda info: progress.put((task.round_id, info)))


def run_round(
    cleaner: Cleaner, task: CleanTask, on_group: Callable[[CleanedSegmentInfo], None] | None = None
) -> CleanResult:
    """Cleaner.clean_round over the task's segments, read-only: each group's `.cleaned`
    segment is closed, given the modification time of the last segment it replaces (the
    next round's delete horizon) and announced to `on_group` at once, so the caller can
    swap it in while the next is written (as in Kafka, about one group's worth of
    `.cleaned` files exists at a time)."""
    dir = Path(task.dir)
    views = [_SourceView(info) for info in task.segments]
    cleaned: list[CleanedSegmentInfo] = []

    def announce(seg: LogSegment, group: list[_SourceView]) -> None:
        try:
            seg.close()
            ns = group[-1].last_modified * 1_000_000
            for f in cleaned_file_names(dir, seg.base_offset)[:3]:
                os.utime(f, ns=(ns, ns))
        except BaseException:
            discard_cleaned_files(dir, [seg.base_offset])
            raise
        info = CleanedSegmentInfo(seg.base_offset, [v.base_offset for v in group])
        cleaned.append(info)
        if on_group is not None:
            on_group(info)  # the caller's now: it may be swapping it in

    try:
        end_offset, stats = cleaner.clean_round(
            task.topic_partition, dir, task.config, views, task.first_dirty_offset,
            task.first_uncleanable_offset, task.delete_horizon_ms, task.last_offset_of_producer,
            announce, task.aborted_transactions,
        )  # fmt: skip
        return CleanResult(end_offset, cleaned, stats)
    finally:
        for v in views:
            v.log.close()


def log_level() -> int:
    """The level the worker logs at: the broker's."""
    return logging.getLogger("kafpy").getEffectiveLevel()


def logs_dir() -> str | None:
    """The broker's logs directory (where server.log is), whose files the worker appends to as well
    (each record is one append of one line), or None when the broker logs to no file."""
    for handler in logging.getLogger("kafpy").handlers:
        if isinstance(handler, logging.FileHandler):
            return str(Path(handler.baseFilename).parent)
    return None
