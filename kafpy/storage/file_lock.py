"""FileLock: an exclusive OS lock on a file (Kafka's kafka.utils.FileLock), the `.lock`
that keeps two brokers off one log dir, and through its descriptor the syncfs(2) of that
dir's file system at a clean shutdown.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["FileLock", "syncfs_reporting_errors"]


@functools.cache
def syncfs_reporting_errors() -> Callable[[int], int] | None:
    """libc's syncfs(2) where it reports write-back errors (Linux 5.8 on), else None.

    Older kernels sync but return 0 whatever failed: there a clean shutdown fsyncs each
    file, so that an I/O error still keeps the clean shutdown marker from being written.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        major, minor = (int(part) for part in os.uname().release.split(".")[:2])
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (ValueError, OSError, AttributeError):
        return None
    if (major, minor) < (5, 8):
        return None
    syncfs.argtypes = [ctypes.c_int]
    syncfs.restype = ctypes.c_int
    return syncfs


class FileLock:
    """An exclusive, non-blocking OS lock (flock) on a file, held until `release()`.

    flock locks belong to the open file description, so a second FileLock on the same
    file fails even from the same process, which is what keeps two LogManagers apart.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_lock(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        return True

    @staticmethod
    def can_sync_file_system() -> bool:
        """Whether `sync_file_system` can sync a whole file system and report its errors."""
        return syncfs_reporting_errors() is not None

    def sync_file_system(self) -> bool:
        """syncfs(2) the file system holding the lock file; False where that is not
        available (see syncfs_reporting_errors). OSError if a write-back on that file system failed since
        the lock was taken, which is why the lock's descriptor is the one synced."""
        syncfs = syncfs_reporting_errors()
        if syncfs is None or self._fd is None:
            return False
        if syncfs(self._fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"syncfs of the file system of {self.path}: {os.strerror(errno)}")
        return True

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    @property
    def locked(self) -> bool:
        return self._fd is not None
