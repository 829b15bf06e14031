"""FileHandleCache: bounds the file descriptors that the segments of every log hold open.

Kafka holds one descriptor per segment for as long as the segment exists, so a broker's
partitions are bounded by its RLIMIT_NOFILE. kafpy goes further, as Redpanda does with
its file handles: a segment's `.log` file is opened when the segment is first read or
written, and closed again when it has not been used for a while and the cache is full.
Inactive segments, and whole inactive partitions, then hold no descriptor at all, and
the next read or append opens the file again without its caller noticing. The indexes
hold none either (AbstractIndex reads a copy in memory); a sealed index's copy is given
up with its segment's descriptor, so the cache bounds that memory too.

- Capacity: one descriptor per open segment file; `capacity_for(limit)` is half of the
  soft RLIMIT_NOFILE, the other half left to client connections and everything else.
  Descriptors are a per-process resource, so there is one cache per process,
  `FILE_HANDLE_CACHE`; KafkaServer sizes it after raising the limit at start-up.
- Eviction is CLOCK (second chance), which approximates LRU without a lock on the hot
  path: each use of a file sets its reference bit, and the evictor passes over the files
  used since its last pass and closes the first one that was not.
- A file in use on one thread is never closed under it by another thread that needs room:
  see CachedFile (users pin the file before they read its descriptor).
- When opening fails with EMFILE anyway (connections took the rest), the cache closes an
  eighth of its files and tries once more; after that the caller gets
  TooManyOpenFilesError, never a plain OSError that would take a log dir offline.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

from kafpy.common.file_descriptors import (
    is_out_of_file_descriptors,
    open_files_limit,
    too_many_open_files,
)

__all__ = [
    "FILE_HANDLE_CACHE",
    "CachedFile",
    "FileHandleCache",
    "capacity_for",
    "open_transient",
]

# the fewest files the cache keeps open, whatever the limit
MIN_CAPACITY = 16


def capacity_for(limit: int) -> int:
    """The segment files a process with an RLIMIT_NOFILE of `limit` keeps open: half of it."""
    return max(limit // 2, MIN_CAPACITY)


class Releasable(Protocol):
    """What goes with a segment's descriptor when the cache closes it (an index's copy)."""

    def release_copy(self) -> None: ...


class CachedFile:
    """A file whose descriptor the cache may close while nobody uses it, and that opens
    it again on the next use.

    Use the descriptor between `acquire()` and `release()` (a pin): the cache does not
    close a pinned file. The protocol needs no lock on this path: a user appends to its
    pins and then reads `_fd`; the evictor sets `_fd` to -1 and then looks at the pins,
    giving the descriptor back if there are any. Whichever runs second sees the other's
    step (list appends and attribute stores are atomic under the GIL), so either the
    evictor backs off or the user finds -1 and reopens under the cache's lock.
    `released_with` are given up along with the descriptor.
    """

    def __init__(self, file: Path, cache: FileHandleCache) -> None:
        self.file = Path(file)
        self._cache = cache
        self._fd = -1
        self._pins: list[None] = []
        self._referenced = True
        self._closed = False
        self.released_with: tuple[Releasable, ...] = ()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def is_open(self) -> bool:
        """Whether the file holds a descriptor now (False while evicted or closed)."""
        return self._fd >= 0

    def acquire(self) -> int:
        """The file's descriptor, opened again if the cache had closed it, and pinned
        until `release()`. Raises TooManyOpenFilesError when no descriptor is left."""
        self._pins.append(None)
        fd = self._fd
        if fd < 0:
            try:
                fd = self._cache.reopen(self)
            except BaseException:
                self._pins.pop()
                raise
        self._referenced = True
        return fd

    def release(self) -> None:
        self._pins.pop()

    def close(self) -> None:
        """Close the descriptor for good; later uses raise EBADF."""
        self._cache.close(self)

    def _open_flags(self) -> int:
        """How the file is opened again after an eviction."""
        return os.O_RDWR

    def _close_unpinned(self) -> bool:
        """The evictor's half of the pin protocol (called under the cache's lock)."""
        fd = self._fd
        self._fd = -1
        if self._pins:
            self._fd = fd
            return False
        try:
            os.close(fd)
        except OSError:
            pass  # the descriptor is gone either way
        for resource in self.released_with:
            resource.release_copy()
        return True


class FileHandleCache:
    """The open segment files of a process, at most `capacity` of them (see module doc).

    Thread-safe. `open(file, flags)` opens a new file into the cache, `reopen(file)` an
    evicted one (CachedFile.acquire calls it), `close(file)` closes one for good.
    """

    def __init__(self, capacity: int) -> None:
        self._lock = threading.Lock()
        self._ring: OrderedDict[CachedFile, None] = OrderedDict()  # the clock, hand first
        self._capacity = max(capacity, MIN_CAPACITY)
        self.evictions = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @capacity.setter
    def capacity(self, capacity: int) -> None:
        with self._lock:
            self._capacity = max(capacity, MIN_CAPACITY)
            self._evict_down_to(self._capacity)

    @property
    def open_files(self) -> int:
        """Files holding a descriptor now (may pass the capacity while all are pinned)."""
        return len(self._ring)

    def open(self, file: CachedFile, flags: int, mode: int = 0o644) -> int:
        """Open `file` with `flags` (e.g. to create it) and keep its descriptor here."""
        with self._lock:
            return self._open_locked(file, flags, mode)

    def reopen(self, file: CachedFile) -> int:
        """The descriptor of `file`, opened again if the cache had closed it."""
        with self._lock:
            fd = file._fd
            if fd >= 0:
                return fd  # another thread opened it meanwhile
            if file._closed:
                raise OSError(errno.EBADF, f"{file.file} is closed")
            return self._open_locked(file, file._open_flags(), 0o644)

    def close(self, file: CachedFile) -> None:
        with self._lock:
            fd = file._fd
            file._fd = -1
            file._closed = True
            self._ring.pop(file, None)
        if fd >= 0:
            os.close(fd)

    def evict_all(self) -> int:
        """Close every file not in use (their next use opens them again); returns how many."""
        with self._lock:
            before = len(self._ring)
            for file in list(self._ring):
                file._referenced = False
            self._evict_down_to(0)
            return before - len(self._ring)

    def make_room(self) -> None:
        """Close an eighth of the open files: another descriptor is needed and the
        process is out of them (EMFILE)."""
        with self._lock:
            self._evict_down_to(len(self._ring) - len(self._ring) // 8 - 1)

    def _open_locked(self, file: CachedFile, flags: int, mode: int) -> int:
        self._evict_down_to(self._capacity - 1)
        try:
            fd = os.open(file.file, flags, mode)
        except OSError as e:
            if not is_out_of_file_descriptors(e):
                raise
            self._evict_down_to(len(self._ring) - len(self._ring) // 8 - 1)
            try:
                fd = os.open(file.file, flags, mode)
            except OSError as again:
                if is_out_of_file_descriptors(again):
                    raise too_many_open_files(f"Cannot open {file.file}", again) from again
                raise
        file._fd = fd
        file._referenced = True
        self._ring[file] = None
        return fd

    def _evict_down_to(self, target: int) -> None:
        ring = self._ring
        budget = 2 * len(ring)  # every file is looked at twice at most: bit cleared, closed
        while len(ring) > max(target, 0) and budget > 0:
            budget -= 1
            file = next(iter(ring))
            ring.move_to_end(file)
            if file._referenced or file._pins:
                file._referenced = False
                continue
            if file._close_unpinned():
                del ring[file]
                self.evictions += 1


def open_transient(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open `path` for a moment (an index write, a flush): on EMFILE the cache closes
    some of its files and the open is tried once more, then TooManyOpenFilesError."""
    try:
        return os.open(path, flags, mode)
    except OSError as e:
        if not is_out_of_file_descriptors(e):
            raise
        FILE_HANDLE_CACHE.make_room()
        try:
            return os.open(path, flags, mode)
        except OSError as again:
            if is_out_of_file_descriptors(again):
                raise too_many_open_files(f"Cannot open {path}", again) from again
            raise


FILE_HANDLE_CACHE = FileHandleCache(capacity_for(open_files_limit()))
"""The process's cache; KafkaServer sizes it again once it has raised RLIMIT_NOFILE."""
