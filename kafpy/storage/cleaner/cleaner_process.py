"""CleanerProcess: the broker's handle on one cleaner thread's worker process.

A compaction round is CPU-bound Python; run on a thread of the broker it holds the GIL
against the broker's event loop and produce latency suffers. So a CleanerThread keeps
in the broker only what must stay there (the cleaner states and checkpoint, choosing
the log, the swap of cleaned segments under the Log's lock) and sends the rest of the
round to its own worker process (kafpy.storage.cleaner.cleaner_worker), started with
the 'spawn' method (never 'fork' from a process with threads and an event loop).
"""

from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import queue
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from kafpy.storage.cleaner.cleaner import (
    CleanerStats,
    aborted_transactions_below,
    last_offsets_of_producers,
)
from kafpy.storage.cleaner.cleaner_config import CleanerConfig
from kafpy.storage.cleaner.cleaner_worker import (
    CleanedSegmentInfo,
    CleanTask,
    RoundAbortedError,
    SegmentInfo,
    clean_in_worker,
    discard_cleaned_files,
    init_worker,
    log_level,
    logs_dir,
)
from kafpy.storage.cleaner.log_to_clean import LogToClean, segments_in_range
from kafpy.storage.log_segment import CLEANED_FILE_SUFFIX, LogSegment

POLL_INTERVAL_S = 0.05

log = logging.getLogger("kafpy.log.LogCleaner")


class WorkerRoundError(Exception):
    """A round in the worker process ended with an error the broker did not ask for."""


class CleanerProcess:
    """Runs the rounds of one cleaner thread in one worker process.

    `clean(cleanable, check_done)` describes the round, submits it, and while it runs
    calls `check_done(tp)` every POLL_INTERVAL_S: when that raises (the partition's
    cleaning was aborted, or the thread shuts down) the worker is told to stop, its
    `.cleaned` files are discarded and the exception propagates. Otherwise the cleaned
    segments are reopened and swapped into the Log, group by group, each after one more
    `check_done`. The worker is started on the first round and stopped by `shutdown()`.
    """

    def __init__(self, config: CleanerConfig, thread_id: int) -> None:
        self.config = config
        self.thread_id = thread_id
        self._ctx = multiprocessing.get_context("spawn")
        # made on the first round: making them starts multiprocessing's resource tracker
        # process, which a broker that never compacts does without
        self._abort_event: EventType | None = None
        self._progress_queue: Queue[tuple[int, CleanedSegmentInfo]] | None = None
        self._round = 0
        self.stopped_by_abort = False  # the last aborted round stopped in the worker, unfinished
        self._executor: ProcessPoolExecutor | None = None

    @property
    def _abort(self) -> EventType:
        if self._abort_event is None:
            self._abort_event = self._ctx.Event()
        return self._abort_event

    @property
    def _progress(self) -> Queue[tuple[int, CleanedSegmentInfo]]:
        if self._progress_queue is None:
            self._progress_queue = self._ctx.Queue()
        return self._progress_queue

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            c = self.config
            threads = max(c.num_threads, 1)
            self._executor = ProcessPoolExecutor(
                max_workers=1,
                mp_context=self._ctx,
                initializer=init_worker,
                initargs=(
                    self._abort,
                    self._progress,
                    c.dedupe_buffer_size // threads,
                    c.hash_algorithm,
                    c.dedupe_buffer_load_factor,
                    c.io_buffer_size // 2,
                    c.max_message_size,
                    c.max_io_bytes_per_second / threads,
                    self.thread_id,
                    log_level(),
                    logs_dir(),
                    os.getpid(),
                ),
            )
        return self._executor

    def worker_pids(self) -> list[int]:
        """The worker's process id, once started (tests)."""
        ex = self._executor
        procs = getattr(ex, "_processes", None) or {}
        return list(procs)

    def shutdown(self) -> None:
        """Stop the worker (a round still running is told to abort first)."""
        if self._abort_event is not None:
            self._abort_event.set()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    # -- a round -------------------------------------------------------------------------------------

    @staticmethod
    def describe(cleanable: LogToClean, round_id: int = 0) -> CleanTask:
        """The round as plain data; what Cleaner.clean computes from the Log first."""
        log_ = cleanable.log
        segments = segments_in_range(log_, 0, cleanable.first_uncleanable_offset)
        return CleanTask(
            round_id,
            cleanable.topic_partition,
            str(log_.dir),
            log_.config,
            [
                SegmentInfo(
                    s.base_offset,
                    str(s.log.file),
                    s.size,
                    s.offset_index.size_in_bytes,
                    s.time_index.size_in_bytes,
                    s.last_modified,
                    s.largest_timestamp,
                )
                for s in segments
            ],
            cleanable.first_dirty_offset,
            cleanable.first_uncleanable_offset,
            cleanable.delete_horizon_ms(),
            last_offsets_of_producers(log_),
            aborted_transactions_below(log_, cleanable.first_uncleanable_offset),
        )

    def clean(
        self, cleanable: LogToClean, check_done: Callable[[object], None]
    ) -> tuple[int, CleanerStats]:
        """One round of `cleanable` in the worker, each group swapped in here as soon as
        the worker has written it; (next dirty offset, stats)."""
        self._round += 1
        task = self.describe(cleanable, self._round)
        tp = cleanable.topic_partition
        bases = [s.base_offset for s in task.segments]
        self._abort.clear()
        future = self._pool().submit(clean_in_worker, task)
        swapped: set[int] = set()
        try:
            while True:
                try:
                    round_id, info = self._progress.get(timeout=POLL_INTERVAL_S)
                except queue.Empty:
                    pass
                else:
                    if round_id == task.round_id and info.base_offset not in swapped:
                        self._swap_in(cleanable, info, check_done)
                        swapped.add(info.base_offset)
                    continue
                if future.done():
                    result = future.result()
                    for info in result.cleaned:  # announcements may still be on their way
                        if info.base_offset not in swapped:
                            self._swap_in(cleanable, info, check_done)
                            swapped.add(info.base_offset)
                    return result.end_offset, result.stats
                check_done(tp)
        except BrokenProcessPool:
            # the worker died (killed, out of memory): the next round starts a new one
            self._executor = None
            discard_cleaned_files(Path(task.dir), bases)
            raise
        except RoundAbortedError:
            discard_cleaned_files(Path(task.dir), bases)
            check_done(tp)  # raises the reason the round was stopped for
            raise WorkerRoundError(
                f"The cleaner worker stopped the round of {tp} unasked"
            ) from None
        except BaseException:
            self._abort.set()
            concurrent.futures.wait([future])  # the worker stops between chunks
            self.stopped_by_abort = not future.cancelled() and isinstance(
                future.exception(), RoundAbortedError
            )
            # files of groups already swapped in were renamed: only the rest is deleted
            discard_cleaned_files(Path(task.dir), bases)
            raise

    def _swap_in(
        self, cleanable: LogToClean, info: CleanedSegmentInfo, check_done: Callable[[object], None]
    ) -> None:
        """Reopen one `.cleaned` segment the worker wrote and swap it in for the segments
        it replaces, under the Log's lock, unless the round was aborted."""
        log_ = cleanable.log
        tp = cleanable.topic_partition
        with log_.lock:
            check_done(tp)
            current = {s.base_offset: s for s in log_.log_segments()}
            old = [current[b] for b in info.replaces if b in current]
            if len(old) != len(info.replaces):
                raise WorkerRoundError(
                    f"Segments {info.replaces} of {tp} changed while the cleaner's worker "
                    "cleaned them; the round is discarded"
                )
            cleaned = LogSegment.open(
                Path(log_.dir),
                info.base_offset,
                log_.config,
                log_.time,
                file_already_exists=True,
                file_suffix=CLEANED_FILE_SUFFIX,
            )
            log.info(
                "Swapping in cleaned segment %s for segment(s) %s in log %s",
                cleaned,
                info.replaces,
                log_.name,
            )
            try:
                log_.replace_segments([cleaned], old)
            except BaseException:
                cleaned.close_handlers()
                raise
