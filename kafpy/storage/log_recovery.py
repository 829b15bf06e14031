"""LogRecovery: loads the logs of every live log dir at start-up (Kafka's
LogManager.loadLogs), on `num.recovery.threads.per.data.dir` threads per dir.

Each dir's checkpoints give the recovery points and log start offsets; a dir without
its clean shutdown marker (or with an unreadable recovery point checkpoint) has its
logs recovered. Progress is logged per dir every `load_progress_interval_ms`; once a
dir is loaded its clean shutdown marker goes (the next start is unclean until a clean
shutdown writes it again). Opening and holding each log is the LogManager's part.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path
from time import monotonic

from kafpy.common.logger import PrefixAdapter
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.log import CLEAN_SHUTDOWN_FILE, Log
from kafpy.storage.log_dir_checkpoints import RECOVERY_POINT_CHECKPOINT_FILE, LogDirCheckpoints

__all__ = ["LOAD_PROGRESS_INTERVAL_MS", "LoadProgress", "LogRecovery", "OpenLog"]

# opens (and holds) one log: (dir, recovery points, log start offsets, clean shutdown)
OpenLog = Callable[[Path, Mapping[TopicPartition, int], Mapping[TopicPartition, int], bool], Log]

# kafpy-specific: how often loading logs at start-up says how far each dir has got
LOAD_PROGRESS_INTERVAL_MS = 5000


class LoadProgress:
    """Counts the logs of one dir loaded so far, for the progress lines."""

    def __init__(self, dir: Path, total: int) -> None:
        self.dir = dir
        self.total = total
        self._loaded = 0
        self._lock = threading.Lock()

    @property
    def loaded(self) -> int:
        return self._loaded

    @property
    def percent(self) -> int:
        return 100 if self.total == 0 else self._loaded * 100 // self.total

    def done(self) -> int:
        with self._lock:
            self._loaded += 1
            return self._loaded


class LogRecovery:
    """Loads the logs of the broker's log dirs at start-up (see module doc).

    `open_log` opens the log of one partition directory and hands it to the LogManager,
    raising for a partition found twice.
    """

    def __init__(
        self,
        log: PrefixAdapter,
        time: Time,
        threads_per_dir: int,
        load_progress_interval_ms: int,
        open_log: OpenLog,
    ) -> None:
        self.log = log  # the LogManager's logger: the lines keep its prefix
        self.time = time
        self.threads_per_dir = threads_per_dir
        self.load_progress_interval_ms = load_progress_interval_ms
        self._open_log = open_log

    def load(self, dirs: Sequence[Path], checkpoints: Mapping[Path, LogDirCheckpoints]) -> None:
        """Load every log of `dirs`; the first failure is raised once all loading stopped."""
        self.log.info("Loading logs from log dirs %s", [str(d) for d in dirs])
        start_ms = self.time.milliseconds()
        pools: list[ThreadPoolExecutor] = []
        jobs: list[tuple[LoadProgress, list[Future[None]]]] = []
        try:
            for d in dirs:
                pool = ThreadPoolExecutor(
                    max_workers=self.threads_per_dir,
                    thread_name_prefix=f"log-recovery-{d}",
                )
                pools.append(pool)
                clean_shutdown_file = d / CLEAN_SHUTDOWN_FILE
                had_clean_shutdown = clean_shutdown_file.exists()
                if had_clean_shutdown:
                    self.log.debug(
                        "Found clean shutdown file. Skipping recovery for all logs in data directory: %s",
                        d,
                    )
                else:
                    self.log.info(
                        "Attempting recovery for all logs in %s since no clean shutdown file was found",
                        d,
                    )
                recovery_points = checkpoints[d].read_recovery_points()
                if recovery_points is None:
                    recovery_points = {}
                    if had_clean_shutdown:
                        # recovery point 0 means "recover everything": do it now rather than
                        # trust a dir whose checkpoint is garbage
                        self.log.warning(
                            "Attempting recovery for all logs in %s since its %s is unreadable",
                            d,
                            RECOVERY_POINT_CHECKPOINT_FILE,
                        )
                        had_clean_shutdown = False
                log_start_offsets = checkpoints[d].read_log_start_offsets() or {}
                with os.scandir(d) as entries:  # no stat per entry, unlike Path.is_dir
                    log_dirs = sorted(d / entry.name for entry in entries if entry.is_dir())
                progress = LoadProgress(d, len(log_dirs))
                futures = [
                    pool.submit(
                        self._load_log,
                        p,
                        recovery_points,
                        log_start_offsets,
                        had_clean_shutdown,
                        progress,
                    )
                    for p in log_dirs
                ]
                jobs.append((progress, futures))
                self.log.info(
                    "Loading %d logs in dir %s: 0/%d loaded (0%%)", len(log_dirs), d, len(log_dirs)
                )
            self._wait_for_loading(jobs)
        except Exception as e:
            self.log.error("There was an error in one of the threads during logs loading: %s", e)
            raise
        finally:
            for pool in pools:
                pool.shutdown(wait=True, cancel_futures=True)
        self.log.info(
            "Loaded %d logs in %dms.",
            sum(p.total for p, _ in jobs),
            self.time.milliseconds() - start_ms,
        )

    def _wait_for_loading(self, jobs: list[tuple[LoadProgress, list[Future[None]]]]) -> None:
        """Wait for every dir's loading jobs, saying how far each dir has got every
        `load_progress_interval_ms` and when it is done; the first failure is raised."""
        pending = {progress: set(futures) for progress, futures in jobs}
        interval_s = self.load_progress_interval_ms / 1000
        last_report = monotonic()
        while pending:
            waiting = set().union(*pending.values())
            done, _ = wait(waiting, timeout=interval_s, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()  # raises the loading error
            now = monotonic()
            report = now - last_report >= interval_s
            if report:
                last_report = now
            for progress, futures in list(pending.items()):
                futures -= done
                if futures:
                    if report:
                        self.log.info(
                            "Loading logs in dir %s: %d/%d loaded (%d%%)",
                            progress.dir, progress.loaded, progress.total, progress.percent,
                        )  # fmt: skip
                    continue
                del pending[progress]
                self.log.info(
                    "Loading logs in dir %s: %d/%d loaded (100%%)",
                    progress.dir, progress.total, progress.total,
                )  # fmt: skip
                # every log of this dir is loaded: the next start is unclean until shutdown says otherwise
                (progress.dir / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)

    def _load_log(
        self,
        log_dir: Path,
        recovery_points: Mapping[TopicPartition, int],
        log_start_offsets: Mapping[TopicPartition, int],
        had_clean_shutdown: bool,
        progress: LoadProgress,
    ) -> None:
        self.log.debug("Loading log '%s'", log_dir.name)
        log = self._open_log(log_dir, recovery_points, log_start_offsets, had_clean_shutdown)
        n = progress.done()
        self.log.info(
            "Completed load of log %s with %d segments, log start offset %d and log end offset %d "
            "(%d/%d loaded in %s)",
            log_dir.name,
            log.num_segments,
            log.log_start_offset,
            log.log_end_offset,
            n,
            progress.total,
            progress.dir,
        )
