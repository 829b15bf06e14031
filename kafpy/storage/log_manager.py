"""LogManager: the entry point to the log management subsystem of one broker.

It owns the broker's log dirs (`log.dirs`): it validates and locks them, loads every
partition's Log at start-up (recovering after an unclean shutdown), creates, truncates and
deletes logs, and runs Kafka's background tasks under Kafka's names:

- `kafka-log-retention`: delete old segments of logs whose cleanup.policy has `delete`
- `kafka-log-flusher`: fsync logs whose `flush.ms` has passed since their last flush
- `kafka-recovery-point-checkpoint`: write `recovery-point-offset-checkpoint` per dir
- `kafka-log-start-offset-checkpoint`: write `log-start-offset-checkpoint` per dir
- `kafka-delete-logs`: remove the files of logs renamed to `-delete`, once
  `file.delete.delay.ms` has passed since they were queued

With `log.cleaner.enable`, it also starts the LogCleaner (kafpy.storage.cleaner), which
compacts logs with `cleanup.policy=compact` on its own threads.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafpy.common.errors import KafkaStorageError
from kafpy.common.file_descriptors import is_out_of_file_descriptors, too_many_open_files
from kafpy.common.logger import component_logger
from kafpy.common.scheduler import ScheduledTask, Scheduler
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic import validate_topic_partition
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.clean_shutdown import close_logs_durably
from kafpy.storage.cleaner.cleaner_config import CleanerConfig
from kafpy.storage.file_handle_cache import FILE_HANDLE_CACHE
from kafpy.storage.file_lock import FileLock
from kafpy.storage.log import (
    CLEAN_SHUTDOWN_FILE,
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    Log,
    LogDirFailedError,
    log_delete_dir_name,
    parse_topic_partition_name,
)
from kafpy.storage.log_config import BROKER_LOG_CONFIG_DEF, LogConfig
from kafpy.storage.log_dir_checkpoints import (
    LogDirCheckpoints,
)
from kafpy.storage.log_recovery import LOAD_PROGRESS_INTERVAL_MS, LogRecovery

if TYPE_CHECKING:
    from kafpy.storage.cleaner.log_cleaner import LogCleaner

LOCK_FILE_NAME = ".lock"
# Kafka waits this long after start-up before the first run of each periodic task.
INITIAL_TASK_DELAY_MS: int = BROKER_LOG_CONFIG_DEF.default("log.initial.task.delay.ms")

# kafka-delete-logs never reschedules itself sooner than this when nothing is due, so
# file.delete.delay.ms=0 does not turn it into a busy loop.
_MIN_DELETE_LOGS_POLL_MS = 1000

_default = BROKER_LOG_CONFIG_DEF.default


def _halt(status: int) -> None:
    """End the process at once (Kafka's Exit.halt), after writing out the log lines."""
    logging.shutdown()
    os._exit(status)


class LogDirLockError(KafkaStorageError):
    """Another process (or another LogManager in this one) holds a log dir's `.lock`."""


class LogManager:
    """The entry point to the log management subsystem: creates, loads, retains,
    flushes, checkpoints and deletes the logs of one broker.

    Parameters (Kafka's config keys in brackets):
      log_dirs: the data directories [log.dirs]; missing ones are created.
      initial_offline_dirs: dirs already known to be unusable (skipped, as Kafka does).
      topic_configs: topic name -> LogConfig for topics with overrides.
      initial_default_config: the LogConfig of topics without overrides.
      cleaner_config: log cleaner settings [log.cleaner.enable, ...].
      recovery_threads_per_data_dir: threads loading logs per dir [num.recovery.threads.per.data.dir].
      flush_check_ms: period of kafka-log-flusher [log.flush.scheduler.interval.ms].
      flush_recovery_offset_checkpoint_ms: [log.flush.offset.checkpoint.interval.ms].
      flush_start_offset_checkpoint_ms: [log.flush.start.offset.checkpoint.interval.ms].
      retention_check_ms: period of kafka-log-retention [log.retention.check.interval.ms].
      initial_task_delay_ms: delay before the first run of each task [log.initial.task.delay.ms].
      scheduler, time: where background tasks run and what clock they use.
      broker_id: for the `[LogManager id=N]` log prefix.
      log_dir_failure_handler: called with (dir, message, error) when a background task
        hits an I/O error on a dir (the broker's LogDirFailureChannel).
      halt: ends the process when no log dir is left (`handle_log_dir_failure`).

    Construction validates and locks the dirs and loads all logs (blocking). Raises
    KafkaStorageError (LogDirLockError for a locked dir) naming the dir at fault.
    """

    def __init__(
        self,
        log_dirs: Sequence[str | Path],
        *,
        initial_offline_dirs: Sequence[str | Path] = (),
        topic_configs: Mapping[str, LogConfig] | None = None,
        initial_default_config: LogConfig | None = None,
        cleaner_config: CleanerConfig | None = None,
        recovery_threads_per_data_dir: int = _default("num.recovery.threads.per.data.dir"),
        flush_check_ms: int = _default("log.flush.scheduler.interval.ms"),
        flush_recovery_offset_checkpoint_ms: int = _default(
            "log.flush.offset.checkpoint.interval.ms"
        ),
        flush_start_offset_checkpoint_ms: int = _default(
            "log.flush.start.offset.checkpoint.interval.ms"
        ),
        retention_check_ms: int = _default("log.retention.check.interval.ms"),
        initial_task_delay_ms: int = INITIAL_TASK_DELAY_MS,
        scheduler: Scheduler,
        time: Time = SYSTEM_TIME,
        broker_id: int | None = None,
        log_dir_failure_handler: Callable[[Path, str, BaseException], None] | None = None,
        halt: Callable[[int], None] = _halt,
        load_progress_interval_ms: int = LOAD_PROGRESS_INTERVAL_MS,
    ) -> None:
        if recovery_threads_per_data_dir < 1:
            raise ValueError(
                f"num.recovery.threads.per.data.dir must be at least 1, got {recovery_threads_per_data_dir}"
            )
        self.log = component_logger("kafpy.log.LogManager", "LogManager", broker_id)
        self.topic_configs: dict[str, LogConfig] = dict(topic_configs or {})
        self.current_default_config = initial_default_config or LogConfig()
        self.cleaner_config = cleaner_config or CleanerConfig()
        self.recovery_threads_per_data_dir = recovery_threads_per_data_dir
        self.flush_check_ms = flush_check_ms
        self.flush_recovery_offset_checkpoint_ms = flush_recovery_offset_checkpoint_ms
        self.flush_start_offset_checkpoint_ms = flush_start_offset_checkpoint_ms
        self.retention_check_ms = retention_check_ms
        self.initial_task_delay_ms = initial_task_delay_ms
        self.scheduler = scheduler
        self.time = time
        self.cleaner: LogCleaner | None = None
        # reports an I/O error on a dir (the broker's LogDirFailureChannel)
        self.log_dir_failure_handler = log_dir_failure_handler
        self._halt = halt
        self.load_progress_interval_ms = load_progress_interval_ms

        # logCreationOrDeletionLock: guards the maps below against the scheduler's threads
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        # logs being moved in by AlterReplicaLogDirs (`<tp>.<uuid>-future`), Kafka's futureLogs
        self._future_logs: dict[TopicPartition, Log] = {}
        # dirs AlterReplicaLogDirs chose for partitions not created here yet
        self._preferred_log_dirs: dict[TopicPartition, Path] = {}
        self._logs_to_be_deleted: deque[tuple[Log, int]] = deque()
        # partitions whose log could not be created for want of file descriptors: why
        self._refused_logs: dict[TopicPartition, str] = {}
        self._tasks: list[ScheduledTask] = []
        self._shutting_down = False

        self._offline_dirs: list[Path] = [Path(os.path.realpath(d)) for d in initial_offline_dirs]
        self._live_log_dirs: list[Path] = self._create_and_validate_log_dirs(log_dirs)
        self._dir_locks: list[FileLock] = self._lock_log_dirs(self._live_log_dirs)
        try:
            self._checkpoints = {d: LogDirCheckpoints(d, self.log) for d in self._live_log_dirs}
            self._load_logs()
        except BaseException:
            self._close_all_quietly()
            self._release_locks()
            raise

    # ------------------------------------------------------------------ dirs and locks

    def _create_and_validate_log_dirs(self, dirs: Sequence[str | Path]) -> list[Path]:
        if not dirs:
            raise KafkaStorageError("No log directories configured: set log.dirs (or log.dir).")
        canonical = [Path(os.path.realpath(d)) for d in dirs]
        seen: dict[Path, str] = {}
        for given, path in zip(dirs, canonical, strict=True):
            if path in seen:
                raise KafkaStorageError(
                    f"Duplicate log directory found: {', '.join(str(d) for d in dirs)}. "
                    f"'{seen[path]}' and '{given}' are the same directory ({path}); "
                    f"list each directory in log.dirs once."
                )
            seen[path] = str(given)
        live: list[Path] = []
        for path in canonical:
            if path in self._offline_dirs:
                self.log.error("Failed to load %s during broker startup: it is offline.", path)
                continue
            if not path.exists():
                self.log.info("Log directory %s not found, creating it.", path)
                try:
                    path.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise KafkaStorageError(
                        f"Failed to create data directory {path}: {e.strerror or e}. "
                        f"Check the path in log.dirs and the permissions of its parent."
                    ) from e
            if not path.is_dir():
                raise KafkaStorageError(
                    f"{path} is not a readable log directory: it is not a directory. "
                    f"Point log.dirs at a directory."
                )
            if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
                raise KafkaStorageError(
                    f"{path} is not a readable and writable log directory. "
                    f"Give the broker's user read and write permission on it."
                )
            live.append(path)
        if not live:
            raise KafkaStorageError(
                f"None of the specified log dirs from {', '.join(str(d) for d in dirs)} "
                f"can be created or validated."
            )
        return live

    def _lock_log_dirs(self, dirs: Sequence[Path]) -> list[FileLock]:
        locks: list[FileLock] = []
        try:
            for d in dirs:
                lock = FileLock(d / LOCK_FILE_NAME)
                if not lock.try_lock():
                    raise LogDirLockError(
                        f"Failed to acquire lock on file {LOCK_FILE_NAME} in {d}. A Kafka instance "
                        f"in another process or thread is using this directory."
                    )
                locks.append(lock)
        except BaseException:
            for lock in locks:
                lock.release()
            raise
        return locks

    def _release_locks(self) -> None:
        for lock in self._dir_locks:
            try:
                lock.release()
            except OSError as e:
                self.log.warning("Failed to release lock %s: %s", lock.path, e)
        self._dir_locks = []

    @property
    def live_log_dirs(self) -> list[Path]:
        """The log dirs in use (canonical paths), in configured order."""
        return list(self._live_log_dirs)

    @property
    def offline_log_dirs(self) -> list[Path]:
        return list(self._offline_dirs)

    def is_log_dir_online(self, d: Path | str) -> bool:
        return Path(d) in self._live_log_dirs

    def _report_log_dir_failure(self, d: Path, msg: str, e: BaseException) -> None:
        if self.log_dir_failure_handler is not None:
            self.log_dir_failure_handler(d, msg, e)

    def handle_log_dir_failure(self, d: Path | str) -> list[TopicPartition]:
        """Take `d` offline (Kafka's LogManager.handleLogDirFailure): it leaves the live
        dirs, its checkpoints are no longer written, and its logs are closed without
        flushing and removed. With no live dir left the broker halts, as Kafka does: it
        cannot serve anything, and a clean shutdown would write over what the disk holds.
        Returns the partitions whose logs went offline."""
        d = Path(d)
        self.log.warning("Stopping serving logs in dir %s", d)
        with self._lock:
            if d not in self._live_log_dirs:
                return []
            self._live_log_dirs.remove(d)
            self._offline_dirs.append(d)
            if not self._live_log_dirs:
                self.log.critical(
                    "Shutdown broker because all log dirs in %s have failed",
                    ", ".join(map(str, self._offline_dirs)),
                )
                self._halt(1)
                return []
            self._checkpoints.pop(d, None)
            offline = [tp for tp, log in self._logs.items() if Path(log.dir).parent == d]
            removed = [self._logs.pop(tp) for tp in offline]
            removed += [
                self._future_logs.pop(tp)
                for tp, log in list(self._future_logs.items())
                if Path(log.dir).parent == d
            ]
            self._logs_to_be_deleted = deque(
                (log, t) for log, t in self._logs_to_be_deleted if Path(log.dir).parent != d
            )
            locks = [lock for lock in self._dir_locks if lock.path.parent == d]
            self._dir_locks = [lock for lock in self._dir_locks if lock.path.parent != d]
        if self.cleaner is not None:
            self.cleaner.handle_log_dir_failure(d)
        for log in removed:
            try:
                log.close_handlers()
            except OSError as e:
                self.log.debug("Error closing the files of %s: %s", log, e)
        for lock in locks:
            try:
                lock.release()
            except OSError:
                pass
        self.log.warning(
            "Logs for partitions %s are offline due to failure on log directory %s",
            ",".join(map(str, offline)),
            d,
        )
        return offline

    # ------------------------------------------------------------------ loading

    def _load_logs(self) -> None:
        LogRecovery(
            self.log,
            self.time,
            self.recovery_threads_per_data_dir,
            self.load_progress_interval_ms,
            self._load_log,
        ).load(self._live_log_dirs, self._checkpoints)

    def _load_log(
        self,
        log_dir: Path,
        recovery_points: Mapping[TopicPartition, int],
        log_start_offsets: Mapping[TopicPartition, int],
        had_clean_shutdown: bool,
    ) -> Log:
        """Open the log in `log_dir` (LogRecovery's job for each dir) and hold it."""
        tp = parse_topic_partition_name(log_dir)
        config = self.topic_configs.get(tp.topic, self.current_default_config)
        log = Log(
            log_dir,
            config,
            log_start_offsets.get(tp, 0),
            recovery_points.get(tp, 0),
            self.scheduler,
            self.time,
            had_clean_shutdown,
        )
        if log_dir.name.endswith(DELETE_DIR_SUFFIX):
            self._add_log_to_be_deleted(log)
        elif log_dir.name.endswith(FUTURE_DIR_SUFFIX):
            with self._lock:
                other = self._future_logs.setdefault(tp, log)
            if other is not log:
                log.close()
                raise KafkaStorageError(
                    f"Duplicate future log directories for {tp} are found in both {log.dir} "
                    f"and {other.dir}. Stop the broker and delete one of them."
                )
        else:
            with self._lock:
                previous = self._logs.get(tp)
                if previous is None:
                    self._logs[tp] = log
            if previous is not None:
                log.close()
                raise KafkaStorageError(
                    f"Duplicate log directories for {tp} are found in both {log.dir} and "
                    f"{previous.dir}. A partition must live in one log dir only: stop the broker "
                    f"and delete the copy you do not trust."
                )
        return log

    # ------------------------------------------------------------------ start and stop

    def startup(self) -> None:
        """Schedule Kafka's background tasks (and start the log cleaner, once it exists)."""
        self.log.info("Starting log cleanup with a period of %d ms.", self.retention_check_ms)
        self._tasks.append(
            self.scheduler.schedule(
                "kafka-log-retention",
                self.cleanup_logs,
                self.initial_task_delay_ms,
                self.retention_check_ms,
            )
        )
        self.log.info("Starting log flusher with a default period of %d ms.", self.flush_check_ms)
        self._tasks.append(
            self.scheduler.schedule(
                "kafka-log-flusher",
                self.flush_dirty_logs,
                self.initial_task_delay_ms,
                self.flush_check_ms,
            )
        )
        self._tasks.append(
            self.scheduler.schedule(
                "kafka-recovery-point-checkpoint",
                self.checkpoint_log_recovery_offsets,
                self.initial_task_delay_ms,
                self.flush_recovery_offset_checkpoint_ms,
            )
        )
        self._tasks.append(
            self.scheduler.schedule(
                "kafka-log-start-offset-checkpoint",
                self.checkpoint_log_start_offsets,
                self.initial_task_delay_ms,
                self.flush_start_offset_checkpoint_ms,
            )
        )
        # one-shot; it reschedules itself for when the next queued log is due
        self._schedule_delete_logs(self.initial_task_delay_ms)
        if self.cleaner_config.enable_cleaner:
            self._start_log_cleaner()

    def _start_log_cleaner(self) -> None:
        """Start the LogCleaner's threads (compaction of cleanup.policy=compact logs)."""
        from kafpy.storage.cleaner.log_cleaner import LogCleaner  # only when enabled

        self.cleaner = LogCleaner(
            self.cleaner_config, self._live_log_dirs, self.logs_by_topic_partition, self.time
        )
        self.cleaner.startup()

    def _stop_log_cleaner(self) -> None:
        """Stop the LogCleaner's threads; a round in progress is abandoned, not swapped in."""
        if self.cleaner is not None:
            self.cleaner.shutdown()

    def shutdown(self) -> None:
        """Stop the tasks, flush and close every log, write the checkpoints and the clean
        shutdown marker in each dir, and release the dir locks."""
        with self._lock:
            if self._shutting_down:
                return  # a second call must not overwrite the checkpoints with nothing
            self._shutting_down = True
        self.log.info("Shutting down.")
        with self._lock:
            tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        self._stop_log_cleaner()

        by_dir = self._logs_by_dir()
        for d in self._live_log_dirs:
            logs = by_dir.get(d, {})
            lock = next((lock for lock in self._dir_locks if lock.path.parent == d), None)
            failed = not close_logs_durably(
                d, logs, lock, self.recovery_threads_per_data_dir, self.log
            )
            try:
                self.log.debug("Updating recovery points at %s", d)
                self._checkpoint_recovery_offsets_in_dir(d, logs, raise_errors=True)
                self.log.debug("Updating log start offsets at %s", d)
                self._checkpoint_log_start_offsets_in_dir(d, logs, raise_errors=True)
            except KafkaStorageError as e:
                failed = True
                self.log.error("Disk error while writing checkpoints in %s: %s", d, e)
            if failed:
                self.log.error(
                    "Not writing the clean shutdown marker in %s: logs there will be recovered at the next start.",
                    d,
                )
                continue
            self.log.debug("Writing clean shutdown marker at %s", d)
            try:
                (d / CLEAN_SHUTDOWN_FILE).touch()
            except OSError as e:
                self.log.error("Failed to write the clean shutdown marker in %s: %s", d, e)

        with self._lock:
            self._logs.clear()
            pending = [log for log, _ in self._logs_to_be_deleted]
            pending += self._future_logs.values()
            self._future_logs.clear()
            self._logs_to_be_deleted.clear()
        for log in pending:  # their -delete dirs are deleted at the next start
            try:
                log.close()
            except Exception as e:
                self.log.debug("Error closing log %s queued for deletion: %s", log.dir, e)
        self._release_locks()
        self.log.info("Shutdown complete.")

    def _close_all_quietly(self) -> None:
        with self._lock:
            logs = list(self._logs.values()) + [log for log, _ in self._logs_to_be_deleted]
            self._logs.clear()
            self._logs_to_be_deleted.clear()
        for log in logs:
            try:
                log.close()
            except Exception:
                pass

    # ------------------------------------------------------------------ lookups

    def get_log(self, tp: TopicPartition, is_future: bool = False) -> Log | None:
        with self._lock:
            return (self._future_logs if is_future else self._logs).get(tp)

    def future_logs_by_topic_partition(self) -> dict[TopicPartition, Log]:
        """The logs being moved into another dir of this broker (`-future` logs)."""
        with self._lock:
            return dict(self._future_logs)

    # ------------------------------------------------------------------ moves between dirs

    def get_or_create_future_log(self, tp: TopicPartition, data_dir: Path) -> Log:
        """The `-future` log of `tp` in `data_dir` (Kafka's getOrCreateLog with isFuture),
        created empty there as `<topic>-<partition>.<uuid>-future` if missing. Raises
        KafkaStorageError if `data_dir` is not a live dir or `tp` has a future log elsewhere."""
        data_dir = Path(os.path.realpath(data_dir))
        with self._lock:
            existing = self._future_logs.get(tp)
            if existing is not None:
                if Path(existing.dir).parent != data_dir:
                    raise KafkaStorageError(
                        f"The future log of {tp} is in {Path(existing.dir).parent}, not "
                        f"{data_dir}: abort that move first."
                    )
                return existing
            if data_dir not in self._live_log_dirs:
                raise KafkaStorageError(
                    f"Can not create the future log for {tp} in {data_dir}: it is not an "
                    "online log dir of this broker"
                )
            current = self._logs.get(tp)
            cfg = current.config if current is not None else self.current_default_config
            log_dir = data_dir / f"{tp.topic}-{tp.partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
            try:
                log = Log(log_dir, cfg, 0, 0, self.scheduler, self.time, True)
            except OSError as e:
                shutil.rmtree(log_dir, ignore_errors=True)
                if is_out_of_file_descriptors(e):
                    raise too_many_open_files(
                        f"Cannot create the future log of {tp} in {data_dir}", e
                    ) from e
                raise KafkaStorageError(
                    f"Error while creating the future log for {tp} in dir {data_dir}: "
                    f"{e.strerror or e}"
                ) from e
            self._future_logs[tp] = log
        self.log.info("Created log for partition %s in %s.", tp, log_dir)
        return log

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, data_dir: Path) -> None:
        """Remember `data_dir` as the dir to create `tp`'s log in, if it is created later."""
        with self._lock:
            if tp not in self._logs:
                self._preferred_log_dirs[tp] = Path(os.path.realpath(data_dir))

    def abort_and_delete_future_log(self, tp: TopicPartition) -> None:
        """Drop `tp`'s `-future` log, if any: renamed for deletion and queued."""
        with self._lock:
            future = self._future_logs.pop(tp, None)
        if future is None:
            return
        future.rename_dir(log_delete_dir_name(tp))
        future.close_handlers()
        self._add_log_to_be_deleted(future)
        self.log.info(
            "The future log of %s is renamed to %s and scheduled for deletion", tp, future.dir
        )

    def replace_current_with_future_log(self, tp: TopicPartition) -> Log:
        """Make `tp`'s caught-up `-future` log its current log (Kafka's
        replaceCurrentWithFutureLog): the future dir takes the partition's name, the old
        current dir is renamed for deletion, and both dirs' checkpoints are rewritten. The
        caller holds off appends to `tp` for the duration (it runs on the event loop)."""
        if self.cleaner is not None:
            # waits for a cleaning round on tp to stop before the files move
            self.cleaner.abort_cleaning(tp)
        with self._lock:
            future = self._future_logs.get(tp)
            current = self._logs.get(tp)
            if future is None or current is None:
                raise KafkaStorageError(f"Partition {tp} has no future log to move in")
            future.rename_dir(f"{tp.topic}-{tp.partition}")
            self._future_logs.pop(tp)
            self._logs[tp] = future
            try:
                current.rename_dir(log_delete_dir_name(tp))
            except OSError as e:
                raise LogDirFailedError(
                    f"Error renaming the old log of {tp} in {current.dir} for deletion: {e}",
                    Path(current.dir).parent,
                ) from e
        current.close_handlers()
        self._add_log_to_be_deleted(current)
        self.checkpoint_dirs({Path(current.dir).parent, Path(future.dir).parent})
        self.log.info(
            "The current log of %s is renamed to %s and scheduled for deletion; the future log "
            "in %s replaces it",
            tp,
            current.dir,
            future.dir,
        )
        return future

    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def logs_by_topic_partition(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def _logs_by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        by_dir: dict[Path, dict[TopicPartition, Log]] = {}
        for tp, log in self.logs_by_topic_partition().items():
            by_dir.setdefault(Path(log.dir).parent, {})[tp] = log
        return by_dir

    def logs_to_be_deleted(self) -> list[tuple[Log, int]]:
        """Logs renamed to `-delete` and waiting for kafka-delete-logs, with the time queued."""
        with self._lock:
            return list(self._logs_to_be_deleted)

    # ------------------------------------------------------------------ create and delete

    def next_log_dir(self) -> Path:
        """The live dir holding the fewest partitions (ties: the first in log.dirs order)."""
        if len(self._live_log_dirs) == 1:
            return self._live_log_dirs[0]
        counts = {d: 0 for d in self._live_log_dirs}
        for log in self.all_logs():
            parent = Path(log.dir).parent
            if parent in counts:
                counts[parent] += 1
        return min(self._live_log_dirs, key=lambda d: counts[d])

    def create_log(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        """The log of `tp`, created empty in the least-loaded dir if it does not exist yet.

        Raises InvalidTopicError before touching the disk unless the topic name is legal
        and the partition >= 0; a log that fails to open leaves no directory behind. When
        the process is out of file descriptors the partition is refused with
        TooManyOpenFilesError (remembered for `refused_log_reason`); the dir stays online
        and the other partitions are served as before (Kafka would halt)."""
        with self._lock:
            existing = self._logs.get(tp)
            if existing is not None:
                return existing
            validate_topic_partition(tp.topic, tp.partition)
            if not self._live_log_dirs:
                raise KafkaStorageError(
                    f"Can not create log for {tp} because log directories "
                    f"{', '.join(map(str, self._offline_dirs))} are offline"
                )
            cfg = config or self.topic_configs.get(tp.topic, self.current_default_config)
            preferred = self._preferred_log_dirs.pop(tp, None)
            if preferred is not None and preferred in self._live_log_dirs:
                data_dir = preferred
            else:
                data_dir = self.next_log_dir()
            log_dir = data_dir / f"{tp.topic}-{tp.partition}"
            created = not log_dir.exists()
            try:
                log_dir.mkdir(exist_ok=True)
                log = Log(log_dir, cfg, 0, 0, self.scheduler, self.time, True)
            except Exception as e:
                if created:
                    self._remove_partial_log_dir(tp, log_dir)
                if is_out_of_file_descriptors(e):
                    refused = too_many_open_files(f"Cannot create the log of {tp} in {data_dir}", e)
                    self._refused_logs[tp] = str(refused)
                    self.log.warning(
                        "%s. The partition is refused; the other partitions are served as before.",
                        refused,
                    )
                    raise refused from e
                if isinstance(e, OSError):
                    raise KafkaStorageError(
                        f"Error while creating log for {tp} in dir {data_dir}: {e.strerror or e}"
                    ) from e
                raise
            self._logs[tp] = log
            self._refused_logs.pop(tp, None)
        props = ", ".join(f"{k} -> {v}" for k, v in cfg.originals.items())
        self.log.info(
            "Created log for partition %s in %s with properties {%s}.", tp, log_dir, props
        )
        return log

    def _remove_partial_log_dir(self, tp: TopicPartition, log_dir: Path) -> None:
        """Remove what a failed creation left in `log_dir` (a flat directory). Listing it
        takes a descriptor: out of them, the FileHandleCache first gives some up."""
        for attempt in range(2):
            try:
                for name in os.listdir(log_dir):
                    (log_dir / name).unlink(missing_ok=True)
                log_dir.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if attempt == 0 and is_out_of_file_descriptors(e):
                    FILE_HANDLE_CACHE.make_room()
                    continue
                self.log.warning(
                    "Could not remove %s after the log of %s failed to open: %s. Remove it, or "
                    "it is loaded as a log at the next start.",
                    log_dir,
                    tp,
                    e,
                )
                return

    def refused_log_reason(self, tp: TopicPartition) -> str | None:
        """Why the last attempt to create `tp`'s log was refused (out of file descriptors),
        None if it was not; forgotten once the log is created or the partition deleted."""
        with self._lock:
            return self._refused_logs.get(tp)

    def async_delete(self, tp: TopicPartition, checkpoint: bool = True) -> Log | None:
        """Take `tp`'s log out of service: rename its dir to `<tp>.<uuid>-delete` and queue it
        for kafka-delete-logs. Returns the log, or None if this broker has no log for `tp`.

        With `checkpoint=False` the caller deleting many logs at once writes the dirs'
        checkpoints afterwards with `checkpoint_dirs` (one write per dir, not per log)."""
        with self._lock:
            removed = self._logs.pop(tp, None)
            self._refused_logs.pop(tp, None)
        if removed is None:
            if self._offline_dirs:
                raise KafkaStorageError(
                    f"Failed to delete log for {tp} because it may be in one of the offline "
                    f"directories {', '.join(map(str, self._offline_dirs))}"
                )
            return None
        data_dir = Path(removed.dir).parent
        if self.cleaner is not None:
            # waits for a cleaning round on tp to stop before the files move
            self.cleaner.abort_cleaning(tp)
        try:
            removed.rename_dir(log_delete_dir_name(tp))
        except Exception as e:
            with self._lock:
                self._logs.setdefault(tp, removed)
            raise KafkaStorageError(
                f"Failed to rename log directory {removed.dir} for deletion: {e}"
            ) from e
        # its data is about to go: release the files without flushing them
        removed.close_handlers()
        if checkpoint:
            self.checkpoint_dirs([data_dir])
        self._add_log_to_be_deleted(removed)
        self.log.info(
            "Log for partition %s is renamed to %s and is scheduled for deletion", tp, removed.dir
        )
        return removed

    def checkpoint_dirs(self, dirs: Iterable[Path]) -> None:
        """Write the recovery-point, log-start-offset and cleaner-offset checkpoints of
        `dirs` (the cleaner's keeps only the logs still here)."""
        for data_dir in set(dirs):
            if self.cleaner is not None:
                self.cleaner.update_checkpoints(data_dir)
            self._checkpoint_recovery_offsets_in_dir(data_dir)
            self._checkpoint_log_start_offsets_in_dir(data_dir)

    def _add_log_to_be_deleted(self, log: Log) -> None:
        with self._lock:
            self._logs_to_be_deleted.append((log, self.time.milliseconds()))

    def _schedule_delete_logs(self, delay_ms: int) -> None:
        with self._lock:
            if self._shutting_down:
                return
        task = self.scheduler.schedule("kafka-delete-logs", self.delete_logs, delay_ms)
        with self._lock:
            # keep only the latest handle of this one-shot task, for shutdown to cancel
            self._tasks = [t for t in self._tasks if t.name != "kafka-delete-logs"]
            self._tasks.append(task)
            if self._shutting_down:
                task.cancel()

    def delete_logs(self) -> None:
        """kafka-delete-logs: delete the files of queued logs whose delay has passed, then
        reschedule for the next one. A failed deletion is logged and re-queued."""
        delay_ms = self.current_default_config.file_delete_delay_ms
        next_delay_ms = max(delay_ms, _MIN_DELETE_LOGS_POLL_MS)
        failed: list[Log] = []
        try:
            while True:
                with self._lock:
                    if not self._logs_to_be_deleted:
                        break
                    log, queued_ms = self._logs_to_be_deleted[0]
                    due_in = queued_ms + delay_ms - self.time.milliseconds()
                    if due_in > 0:
                        next_delay_ms = due_in
                        break
                    self._logs_to_be_deleted.popleft()
                try:
                    log.delete()
                    self.log.info(
                        "Deleted log for partition %s in %s.", log.topic_partition, log.dir
                    )
                except Exception as e:
                    self.log.error(
                        "Exception while deleting %s for partition %s: %s. Moving it to the end of the queue.",
                        log.dir,
                        log.topic_partition,
                        e,
                    )
                    failed.append(log)
        except Exception:
            self.log.exception("Exception in kafka-delete-logs thread.")
        finally:
            for log in failed:
                self._add_log_to_be_deleted(log)
            if failed:
                next_delay_ms = min(next_delay_ms, max(delay_ms, _MIN_DELETE_LOGS_POLL_MS))
            self._schedule_delete_logs(max(next_delay_ms, 1))

    def truncate_to(self, partition_offsets: Mapping[TopicPartition, int]) -> None:
        """Truncate each partition's log to the given offset (a follower catching up to its
        leader), then checkpoint the recovery points of the dirs touched."""
        affected: set[Path] = set()
        for tp, offset in partition_offsets.items():
            log = self.get_log(tp)
            if log is None:
                continue
            stop_cleaner = self.cleaner is not None and offset < log.active_segment.base_offset
            if stop_cleaner:
                assert self.cleaner is not None
                self.cleaner.abort_and_pause_cleaning(tp)
            try:
                if log.truncate_to(offset):
                    affected.add(Path(log.dir).parent)
                if stop_cleaner:
                    assert self.cleaner is not None
                    self.cleaner.maybe_truncate_checkpoint(
                        Path(log.dir).parent, tp, log.active_segment.base_offset
                    )
            finally:
                if stop_cleaner:
                    assert self.cleaner is not None
                    self.cleaner.resume_cleaning([tp])
        for d in affected:
            self._checkpoint_recovery_offsets_in_dir(d)

    def truncate_fully_and_start_at(self, tp: TopicPartition, new_offset: int) -> None:
        """Delete all of `tp`'s data and restart its log empty at `new_offset`."""
        log = self.get_log(tp)
        if log is None:
            return
        cleaner = self.cleaner
        if cleaner is not None:
            cleaner.abort_and_pause_cleaning(tp)
        try:
            log.truncate_fully_and_start_at(new_offset)
            if cleaner is not None:
                cleaner.maybe_truncate_checkpoint(
                    Path(log.dir).parent, tp, log.active_segment.base_offset
                )
        finally:
            if cleaner is not None:
                cleaner.resume_cleaning([tp])
        d = Path(log.dir).parent
        self._checkpoint_recovery_offsets_in_dir(d)
        self._checkpoint_log_start_offsets_in_dir(d)

    # ------------------------------------------------------------------ configs

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """Apply a topic's new config to its existing logs and to logs created later."""
        with self._lock:
            self.topic_configs[topic] = config
            logs = [log for tp, log in self._logs.items() if tp.topic == topic]
        for log in logs:
            log.update_config(config)

    def reconfigure_default_log_config(self, config: LogConfig) -> None:
        """Apply new broker defaults to every log of a topic without overrides."""
        with self._lock:
            self.current_default_config = config
            logs = [log for tp, log in self._logs.items() if tp.topic not in self.topic_configs]
        for log in logs:
            log.update_config(config)

    def reconfigure_cleaner(self, config: CleanerConfig) -> None:
        """Apply new log.cleaner.* settings to the running LogCleaner (dynamic broker
        configs); blocks until its old threads have stopped."""
        self.cleaner_config = config
        if self.cleaner is not None:
            self.cleaner.reconfigure(config)

    # ------------------------------------------------------------------ scheduled tasks

    def cleanup_logs(self) -> int:
        """kafka-log-retention: delete segments beyond retention in logs with cleanup.policy
        `delete`. Returns the number of segments deleted."""
        self.log.debug("Beginning log cleanup...")
        total = 0
        start_ms = self.time.milliseconds()
        for tp, log in self.logs_by_topic_partition().items():
            if not log.config.delete:
                continue
            if self.cleaner is not None and log.config.compact:
                continue  # compact,delete: the cleaner threads apply retention between rounds
            self.log.debug("Garbage collecting '%s'", log.name)
            try:
                total += log.delete_old_segments()
            except Exception as e:
                self.log.error("Error while deleting old segments of %s: %s", tp, e)
        self.log.debug(
            "Log cleanup completed. %d files deleted in %d seconds",
            total,
            (self.time.milliseconds() - start_ms) // 1000,
        )
        return total

    def flush_dirty_logs(self) -> None:
        """kafka-log-flusher: flush each log whose flush.ms has passed since its last flush."""
        self.log.debug("Checking for dirty logs to flush...")
        for tp, log in self.logs_by_topic_partition().items():
            try:
                since = self.time.milliseconds() - log.last_flush_time
                self.log.debug(
                    "Checking if flush is needed on %s flush interval %d last flushed %d time since last flush: %d",
                    tp.topic,
                    log.config.flush_ms,
                    log.last_flush_time,
                    since,
                )
                if since >= log.config.flush_ms:
                    log.flush()
            except LogDirFailedError as e:
                self._report_log_dir_failure(e.log_dir, f"Error flushing topic {tp.topic}", e)
            except Exception as e:
                self.log.error("Error flushing topic %s: %s", tp.topic, e)

    def checkpoint_log_recovery_offsets(self) -> None:
        """kafka-recovery-point-checkpoint: write each dir's recovery-point-offset-checkpoint."""
        by_dir = self._logs_by_dir()
        for d in self._live_log_dirs:
            self._checkpoint_recovery_offsets_in_dir(d, by_dir.get(d, {}))

    def checkpoint_log_start_offsets(self) -> None:
        """kafka-log-start-offset-checkpoint: write each dir's log-start-offset-checkpoint."""
        by_dir = self._logs_by_dir()
        for d in self._live_log_dirs:
            self._checkpoint_log_start_offsets_in_dir(d, by_dir.get(d, {}))

    def _checkpoint_recovery_offsets_in_dir(
        self, d: Path, logs: Mapping[TopicPartition, Log] | None = None, raise_errors: bool = False
    ) -> None:
        self._write_checkpoint_in_dir(
            d, logs, raise_errors, lambda c, ls: c.write_recovery_points(ls), "recovery offsets"
        )

    def _checkpoint_log_start_offsets_in_dir(
        self, d: Path, logs: Mapping[TopicPartition, Log] | None = None, raise_errors: bool = False
    ) -> None:
        self._write_checkpoint_in_dir(
            d, logs, raise_errors, lambda c, ls: c.write_log_start_offsets(ls), "log start offsets"
        )

    def _write_checkpoint_in_dir(
        self,
        d: Path,
        logs: Mapping[TopicPartition, Log] | None,
        raise_errors: bool,
        write: Callable[[LogDirCheckpoints, Mapping[TopicPartition, Log]], None],
        what: str,
    ) -> None:
        """Write one checkpoint file of `d` over `logs` (default: the dir's logs); a disk
        error fails the dir, or is raised with `raise_errors`."""
        checkpoints = self._checkpoints.get(d)
        if checkpoints is None:
            return
        try:
            write(checkpoints, self._logs_by_dir().get(d, {}) if logs is None else logs)
        except KafkaStorageError as e:
            if raise_errors:
                raise
            self._report_log_dir_failure(
                d, f"Disk error while writing {what} checkpoint in directory {d}", e
            )
