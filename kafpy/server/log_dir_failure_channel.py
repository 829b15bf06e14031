"""LogDirFailureChannel: where an I/O error on a log dir is reported, once per dir.

Any thread (the event loop's appends and fetches, the scheduler's flushes and checkpoints)
reports a failed dir with `maybe_add_offline_log_dir`; the first report of a dir logs the
error and queues the dir, later reports of it are ignored. LogDirFailureHandler
(server/log_dir_failure_handler.py) takes the queued dirs one at a time (`take_next_offline_log_dir`) and
takes each offline: its partitions stop being served here, its logs are closed, and the
controller is told through /log_dir_event_notification. An error that only says the
process ran out of file descriptors takes no dir offline.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from pathlib import Path

from kafpy.common.file_descriptors import (
    is_out_of_file_descriptors,
    open_file_count,
    open_files_limit,
)

log = logging.getLogger("kafpy.server.LogDirFailureChannel")


class LogDirFailureChannel:
    """Collects the log dirs that failed with an I/O error, each dir once (Kafka's
    LogDirFailureChannel). Thread-safe; the consumer side waits on an asyncio loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: set[Path] = set()
        self._queue: deque[Path] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None

    def has_offline_log_dir(self, log_dir: Path | str) -> bool:
        with self._lock:
            return Path(log_dir) in self._offline

    def maybe_add_offline_log_dir(
        self, log_dir: Path | str, msg: str, error: BaseException
    ) -> None:
        """Report an I/O error on `log_dir`; the first report of a dir queues it. Running
        out of file descriptors (EMFILE, ENFILE) is not a failure of the dir: it is logged
        and the dir stays online (Kafka would take it offline, and halt with no dir left)."""
        d = Path(log_dir)
        if is_out_of_file_descriptors(error):
            log.warning(
                "%s: %s. Log dir %s stays online: the broker is out of file descriptors "
                "(%d open, RLIMIT_NOFILE %d), not of disk",
                msg,
                error,
                d,
                open_file_count(),
                open_files_limit(),
            )
            return
        with self._lock:
            if d in self._offline:
                return
            self._offline.add(d)
            self._queue.append(d)
            loop, ready = self._loop, self._ready
        log.error("%s: %s", msg, error)
        if loop is not None and ready is not None and not loop.is_closed():
            loop.call_soon_threadsafe(ready.set)

    async def take_next_offline_log_dir(self) -> Path:
        """Wait for the next dir reported offline (call from one task on one loop)."""
        with self._lock:
            if self._ready is None:
                self._loop = asyncio.get_running_loop()
                self._ready = asyncio.Event()
            ready = self._ready
        while True:
            with self._lock:
                if self._queue:
                    return self._queue.popleft()
                ready.clear()
            await ready.wait()


__all__ = ["LogDirFailureChannel"]
