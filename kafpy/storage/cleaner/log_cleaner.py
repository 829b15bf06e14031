"""LogCleaner: the cleaner threads that compact logs with `cleanup.policy=compact`."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kafpy.common.errors import KafkaError, KafkaStorageError
from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.cleaner.cleaner import Cleaner, CleanerStats
from kafpy.storage.cleaner.cleaner_config import CleanerConfig
from kafpy.storage.cleaner.cleaner_process import CleanerProcess
from kafpy.storage.cleaner.log_cleaner_manager import LogCleanerManager, LogCleaningAbortedError
from kafpy.storage.cleaner.log_to_clean import LogToClean
from kafpy.storage.cleaner.offset_map import SkimpyOffsetMap
from kafpy.storage.cleaner.throttler import Throttler
from kafpy.storage.log import Log

GIL_SWITCH_INTERVAL_S = 0.001


class ThreadShutdownError(Exception):
    """Raised inside a cleaning round when its thread is shutting down."""


class LogCleaner:
    """The log compaction subsystem (Kafka's LogCleaner): `config.num_threads`
    CleanerThreads, each repeatedly taking the dirtiest compacted log from the
    LogCleanerManager and cleaning it, sleeping `backoff_ms` when none is dirty enough.

    With `config.worker_process` (the default) each thread sends the CPU-heavy part of
    a round (offset map, rewriting into `.cleaned` segments) to its own worker process
    (CleanerProcess) so that it does not hold the GIL against the broker's event loop;
    the thread keeps the cleaner states and checkpoint and swaps the cleaned segments in
    under the Log's lock. Without it the threads clean in-process (tests with MockTime).
    The offset map memory and the I/O rate limit are split between threads (in-process,
    all threads share one throttler).
    """

    def __init__(
        self,
        config: CleanerConfig,
        log_dirs: Iterable[Path],
        logs: Callable[[], Mapping[TopicPartition, Log]],
        time: Time = SYSTEM_TIME,
    ) -> None:
        self.config = config
        self.time = time
        self.log = component_logger("kafpy.log.LogCleaner", "LogCleaner")
        self.cleaner_manager = LogCleanerManager(log_dirs, logs, time)
        self.throttler = Throttler(config.max_io_bytes_per_second, 300, time)
        self.cleaners = [CleanerThread(self, i) for i in range(config.num_threads)]

    # -- lifecycle -----------------------------------------------------------------------------------

    def startup(self) -> None:
        self.log.info("Starting the log cleaner")
        self._saved_switch_interval = None
        if self.config.worker_process:
            for t in self.cleaners:
                t.start()
            return
        # In-process rounds only (worker_process off): the cleaner threads run CPU-bound
        # Python; with the default 5 ms switch interval the event loop waits up to 5 ms for
        # the GIL at every wake-up while a round runs (bench/cleaner_bench.py: produce p99
        # ~30 ms at 5 ms, ~12 ms at 1 ms).
        self._saved_switch_interval = sys.getswitchinterval()
        if self.cleaners and self._saved_switch_interval > GIL_SWITCH_INTERVAL_S:
            sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        for t in self.cleaners:
            t.start()

    def shutdown(self) -> None:
        self.log.info("Shutting down the log cleaner.")
        for t in self.cleaners:
            t.initiate_shutdown()
        for t in self.cleaners:
            if t.is_alive():
                t.join()
        for t in self.cleaners:
            t.process.shutdown()
        saved = getattr(self, "_saved_switch_interval", None)
        if saved is not None and sys.getswitchinterval() == GIL_SWITCH_INTERVAL_S:
            sys.setswitchinterval(saved)

    def reconfigure(self, config: CleanerConfig) -> None:
        """Take new thread count, buffers, throttle and backoff (Kafka's
        LogCleaner.reconfigure for the dynamic log.cleaner.* configs): the threads stop
        (a round in progress is aborted) and new ones start; the cleaning states and
        checkpoints in the LogCleanerManager are kept. Blocks until the old threads end."""
        self.shutdown()
        self.config = config
        self.throttler = Throttler(config.max_io_bytes_per_second, 300, self.time)
        self.cleaners = [CleanerThread(self, i) for i in range(config.num_threads)]
        self.startup()

    # -- used by LogManager -------------------------------------------------------------------------

    def abort_cleaning(self, tp: TopicPartition) -> None:
        self.cleaner_manager.abort_cleaning(tp)

    def abort_and_pause_cleaning(self, tp: TopicPartition) -> None:
        self.cleaner_manager.abort_and_pause_cleaning(tp)

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        self.cleaner_manager.resume_cleaning(tps)

    def update_checkpoints(self, data_dir: Path) -> None:
        self.cleaner_manager.update_checkpoints(data_dir)

    def handle_log_dir_failure(self, data_dir: Path) -> None:
        """Stop writing `data_dir`'s cleaner checkpoint: the dir is offline."""
        self.cleaner_manager.handle_log_dir_failure(data_dir)

    def maybe_truncate_checkpoint(self, data_dir: Path, tp: TopicPartition, offset: int) -> None:
        self.cleaner_manager.maybe_truncate_checkpoint(data_dir, tp, offset)

    def wake(self) -> None:
        """End the threads' backoff now (tests, and a topic newly switched to compact)."""
        for t in self.cleaners:
            t.wake()

    @property
    def rounds_completed(self) -> int:
        return sum(t.rounds for t in self.cleaners)


class CleanerThread(threading.Thread):
    """One cleaner thread (Kafka's CleanerThread): clean the filthiest log, run retention
    on compact,delete logs, or back off. `clean_once()` does one pass synchronously."""

    def __init__(self, owner: LogCleaner, thread_id: int) -> None:
        super().__init__(name=f"kafka-log-cleaner-thread-{thread_id}", daemon=True)
        self.owner = owner
        self.manager = owner.cleaner_manager
        config = owner.config
        self.log = component_logger("kafpy.log.LogCleaner", f"kafka-log-cleaner-thread-{thread_id}")
        self.cleaner = Cleaner(
            thread_id,
            SkimpyOffsetMap(
                config.dedupe_buffer_size // max(config.num_threads, 1),
                config.hash_algorithm,
                config.dedupe_buffer_load_factor,
            ),
            config.io_buffer_size // 2,
            config.max_message_size,
            config.dedupe_buffer_load_factor,
            owner.throttler,
            owner.time,
            self._check_done,
        )
        self.process = CleanerProcess(config, thread_id)
        self._running = True
        self._wakeup = threading.Event()
        self.rounds = 0
        self.last_stats: CleanerStats | None = None

    def initiate_shutdown(self) -> None:
        self._running = False
        self._wakeup.set()

    def wake(self) -> None:
        self._wakeup.set()

    def _check_done(self, tp: object) -> None:
        if not self._running:
            raise ThreadShutdownError()
        self.manager.check_cleaning_aborted(tp)  # type: ignore[arg-type]

    def run(self) -> None:
        self.log.info("Starting")
        try:
            while self._running:
                try:
                    cleaned = self.clean_once()
                except ThreadShutdownError:
                    break
                except Exception:
                    self.log.exception("Uncaught exception in the log cleaner thread")
                    cleaned = False
                if not cleaned and self._running:
                    self._wakeup.wait(self.owner.config.backoff_ms / 1000)
                    self._wakeup.clear()
        finally:
            self.log.info("Stopped")

    def clean_once(self) -> bool:
        """Clean the filthiest log, if any, then apply retention to compact,delete logs.
        True if a log was cleaned."""
        cleanable = self.manager.grab_filthiest_compacted_log()
        cleaned = False
        if cleanable is not None:
            self._clean_log(cleanable)
            cleaned = True
        deletable = self.manager.deletable_logs()
        try:
            for tp, log in deletable:
                try:
                    log.delete_old_segments()
                except KafkaStorageError as e:
                    self.log.warning("Failed to apply retention to %s: %s", tp, e)
        finally:
            self.manager.done_deleting(tp for tp, _ in deletable)
        return cleaned

    def _clean_log(self, cleanable: LogToClean) -> None:
        tp = cleanable.topic_partition
        data_dir = Path(cleanable.log.dir).parent
        end_offset = cleanable.first_dirty_offset
        try:
            if self.owner.config.worker_process:
                end_offset, stats = self.process.clean(cleanable, self._check_done)
            else:
                end_offset, stats = self.cleaner.clean(cleanable)
            self.rounds += 1
            self.last_stats = stats
            self._record_stats(cleanable, stats, end_offset)
        except LogCleaningAbortedError:
            self.log.info("Cleaning of %s was aborted", tp)
        except KafkaStorageError as e:
            self.log.warning("Cleaning of %s stopped: its log is offline (%s)", tp, e)
        except ThreadShutdownError:
            raise
        except (OSError, ValueError, KafkaError) as e:
            if self.manager.cleaning_state(tp) == "LogCleaningAborted":
                self.log.info("Cleaning of %s was aborted (%s)", tp, e)
            else:
                self.log.error("Failed to clean %s, marking it uncleanable: %s", tp, e)
                self.manager.mark_partition_uncleanable(data_dir, tp)
        finally:
            self.manager.done_cleaning(tp, data_dir, end_offset)

    def _record_stats(self, cleanable: LogToClean, stats: CleanerStats, end_offset: int) -> None:
        mb = 1024.0 * 1024.0
        secs = stats.elapsed_secs()
        map_secs = max(stats.map_complete_ms - stats.start_ms, 1) / 1000.0
        self.log.info(
            "Log cleaner thread %d cleaned log %s (dirty section = [%d, %d])\n"
            "\t%.1f MB of log processed in %.1f seconds (%.1f MB/sec).\n"
            "\tIndexed %.1f MB in %.1f seconds (%.1f Mb/sec)\n"
            "\t%d messages read, %d written, %d keyless dropped; %.1f MB written (%.1f%% size reduction)",
            self.cleaner.id,
            cleanable.topic_partition,
            cleanable.first_dirty_offset,
            end_offset,
            stats.bytes_read / mb,
            secs,
            stats.bytes_read / mb / secs,
            stats.map_bytes_read / mb,
            map_secs,
            stats.map_bytes_read / mb / map_secs,
            stats.messages_read,
            stats.messages_written,
            stats.invalid_messages,
            stats.bytes_written / mb,
            100.0 * (1.0 - stats.bytes_written / stats.bytes_read) if stats.bytes_read else 0.0,
        )
