"""AbstractIndex: the memory-mapped, fixed-entry-size index files a LogSegment keeps beside its log.

Kafka's `.index` and `.timeindex` files share one shape: an array of fixed-size big-endian
entries, sorted, preallocated to `segment.index.bytes` while the segment is active and
trimmed to the valid entries when the segment rolls or closes. This module holds what
they share: opening and mapping the file, counting the valid entries of an existing
file, resizing, truncating, flushing and the binary searches.
"""

from __future__ import annotations

import mmap
import os
import threading
from abc import ABC, abstractmethod
from enum import Enum
from pathlib import Path

from kafpy.common.errors import KafkaError

INT32_MAX = 2**31 - 1

# Kafka keeps the last 8 KiB of an index "warm": lookups near the end (the common case,
# consumers reading the tail) first search only that section so they touch few pages.
_WARM_SECTION_BYTES = 8192


class CorruptIndexError(KafkaError):
    """An index file failed its sanity check; the segment's indexes must be rebuilt."""


class InvalidOffsetError(KafkaError):
    """An offset was appended out of order to an index, or a segment holds a bad offset."""


class IndexOffsetOverflowError(KafkaError):
    """An offset is too far from the segment's base offset to be stored as a relative int32."""


class IndexSearchEntity(Enum):
    """Which half of an entry a binary search compares: the key or the value."""

    KEY = 0
    VALUE = 1


def round_down_to_multiple(number: int, factor: int) -> int:
    return factor * (number // factor)


class AbstractIndex(ABC):
    """A sorted array of fixed-size entries in a memory-mapped file, searched by binary search.

    `max_index_size` is the preallocated size in bytes of a new (or active) index; -1 keeps
    the size of the existing file. The number of valid entries of an existing file is its
    length divided by the entry size when the file was trimmed, and, when the file is still
    preallocated (an unclean shutdown), the entries before the first all-zero entry: Kafka
    never writes an all-zero entry, since the first index entry of a segment always comes
    after `index.interval.bytes` of data.
    """

    entry_size: int = 0

    def __init__(
        self, file: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        self.file = Path(file)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._lock = threading.RLock()
        newly_created = not self.file.exists()
        flags = (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY
        fd = os.open(self.file, flags, 0o644)
        try:
            if newly_created:
                if max_index_size < 0:
                    raise ValueError(f"Cannot create index {self.file} without a maximum size")
                os.ftruncate(fd, round_down_to_multiple(max_index_size, self.entry_size))
            self._length = os.fstat(fd).st_size
            self._mmap: mmap.mmap | None = self._map(fd, self._length)
        finally:
            os.close(fd)
        self._max_entries = self._length // self.entry_size
        self._entries = 0 if newly_created else self._count_valid_entries()
        self._warm_entries = _WARM_SECTION_BYTES // self.entry_size
        self._write_fd: int | None = None
        self._after_entries_changed()

    def _write_entry(self, n: int, entry: bytes) -> None:
        """Write entry `n` with pwrite rather than through the mapping. The preallocated
        file is sparse, and a store through the mapping into a hole on a full disk is a
        SIGBUS that kills the broker; pwrite answers ENOSPC (an OSError: the log dir goes
        offline, as for any I/O error). It needs no block allocation up front either
        (fallocate takes a journal handle, and on a busy ext4 waited seconds for one on the
        event loop; bench/metadata_load.py). Readers still search through the mapping,
        which shares the page cache with the write."""
        fd = self._write_fd
        if fd is None:
            fd = self._write_fd = os.open(self.file, os.O_WRONLY)
        os.pwrite(fd, entry, n * self.entry_size)

    # -- file and mapping ------------------------------------------------------------------

    def _map(self, fd: int, length: int) -> mmap.mmap | None:
        if length == 0:
            return None  # mmap cannot map an empty file; an empty index needs no mapping
        access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
        return mmap.mmap(fd, length, access=access)

    def _count_valid_entries(self) -> int:
        n = self._max_entries
        mm = self._mmap
        if n == 0 or mm is None:
            return 0
        zero = bytes(self.entry_size)
        es = self.entry_size
        if mm[(n - 1) * es : n * es] != zero:
            return n  # a trimmed (or completely full) index: every entry is valid
        # A preallocated index: entries are a non-zero prefix followed by zeros.
        lo, hi = 0, n - 1  # the first all-zero entry is in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if mm[mid * es : (mid + 1) * es] == zero:
                hi = mid
            else:
                lo = mid + 1
        return lo

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def length(self) -> int:
        """The current size of the index file in bytes."""
        return self._length

    @property
    def size_in_bytes(self) -> int:
        """Bytes taken by valid entries."""
        return self._entries * self.entry_size

    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def resize(self, new_size: int) -> bool:
        """Set the file length to `new_size` rounded down to whole entries; True if it changed."""
        with self._lock:
            rounded = round_down_to_multiple(max(new_size, 0), self.entry_size)
            if self._length == rounded:
                return False
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            fd = os.open(self.file, os.O_RDWR)
            try:
                os.ftruncate(fd, rounded)
                self._length = rounded
                self._mmap = self._map(fd, rounded)
            finally:
                os.close(fd)
            self._max_entries = rounded // self.entry_size
            if self._entries > self._max_entries:
                self._entries = self._max_entries
                self._after_entries_changed()
            return True

    def trim_to_valid_size(self) -> None:
        with self._lock:
            self.resize(self._entries * self.entry_size)
            if self._write_fd is not None:  # a rolled segment's index takes no more entries
                os.close(self._write_fd)
                self._write_fd = None

    def reset(self) -> None:
        """Drop every entry and give the file its full preallocated size again."""
        with self._lock:
            self.truncate()
            self.resize(self.max_index_size)

    def truncate(self) -> None:
        self._truncate_to_entries(0)

    def _truncate_to_entries(self, n: int) -> None:
        with self._lock:
            old = self._entries
            if n < old and self._mmap is not None:
                # Zero the dropped entries so a reopen after a crash cannot count them again.
                es = self.entry_size
                self._mmap[n * es : old * es] = bytes((old - n) * es)
            self._entries = n
            self._after_entries_changed()

    def flush(self) -> None:
        with self._lock:
            if self._mmap is not None:
                self._mmap.flush()

    def close(self) -> None:
        """Trim the file to its valid entries and unmap it."""
        with self._lock:
            if self.writable:
                self.trim_to_valid_size()
            self.close_handler()

    def close_handler(self) -> None:
        with self._lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            if self._write_fd is not None:
                os.close(self._write_fd)
                self._write_fd = None

    def delete_if_exists(self) -> bool:
        with self._lock:
            self.close_handler()
            try:
                self.file.unlink()
                return True
            except FileNotFoundError:
                return False

    def rename_to(self, new_file: Path) -> None:
        with self._lock:
            try:
                os.replace(self.file, new_file)
            finally:
                self.file = Path(new_file)

    def update_parent_dir(self, parent: Path) -> None:
        self.file = Path(parent) / self.file.name

    # -- offsets -----------------------------------------------------------------------------

    def relative_offset(self, offset: int) -> int:
        rel = offset - self.base_offset
        if rel < 0 or rel > INT32_MAX:
            raise IndexOffsetOverflowError(
                f"Integer overflow for offset: {offset} ({self.file}): it is not within "
                f"[{self.base_offset}, {self.base_offset + INT32_MAX}] of the segment's base offset"
            )
        return rel

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # -- searching ----------------------------------------------------------------------------

    @abstractmethod
    def _parse_entry(self, n: int) -> tuple[int, int]:
        """Entry `n` as (key, value) in absolute terms."""

    @abstractmethod
    def sanity_check(self) -> None:
        """Raise CorruptIndexError if the file cannot be a valid index of this kind."""

    @abstractmethod
    def _after_entries_changed(self) -> None:
        """Refresh what a subclass caches about the last entry."""

    def _compare(self, n: int, target: int, entity: IndexSearchEntity) -> int:
        v = self._parse_entry(n)[entity.value]
        return (v > target) - (v < target)

    def _binary_search(
        self, begin: int, end: int, target: int, entity: IndexSearchEntity
    ) -> tuple[int, int]:
        lo, hi = begin, end
        while lo < hi:
            mid = (lo + hi + 1) // 2
            c = self._compare(mid, target, entity)
            if c > 0:
                hi = mid - 1
            elif c < 0:
                lo = mid
            else:
                return mid, mid
        return lo, (-1 if lo == self._entries - 1 else lo + 1)

    def _index_slot_range_for(self, target: int, entity: IndexSearchEntity) -> tuple[int, int]:
        """(largest slot <= target, smallest slot >= target), -1 where there is none."""
        if self._entries == 0:
            return -1, -1
        first_hot = max(0, self._entries - 1 - self._warm_entries)
        if self._compare(first_hot, target, entity) < 0:
            return self._binary_search(first_hot, self._entries - 1, target, entity)
        if self._compare(0, target, entity) > 0:
            return -1, 0
        return self._binary_search(0, first_hot, target, entity)

    def largest_lower_bound_slot_for(self, target: int, entity: IndexSearchEntity) -> int:
        return self._index_slot_range_for(target, entity)[0]

    def smallest_upper_bound_slot_for(self, target: int, entity: IndexSearchEntity) -> int:
        return self._index_slot_range_for(target, entity)[1]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(file={self.file}, base_offset={self.base_offset}, "
            f"entries={self._entries}, max_entries={self._max_entries})"
        )
