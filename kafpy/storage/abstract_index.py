"""AbstractIndex: the fixed-entry-size index files a LogSegment keeps beside its log.

Kafka's `.index` and `.timeindex` files share one shape: an array of fixed-size big-endian
entries, sorted, preallocated to `segment.index.bytes` while the segment is active and
trimmed to the valid entries when the segment rolls or closes. This module holds what
they share: counting the valid entries of an existing file, the copy of the entries in
memory that searches run on, writing new entries out, resizing, truncating, flushing and
the binary searches.

Kafka maps index files into memory and closes their descriptors; CPython's mmap keeps a
duplicate of the descriptor for as long as the mapping lives, so a mapped index would
cost a descriptor per file. kafpy's indexes hold none: an index opens its file for a
moment when it reads it or writes to it. Searches run on a copy of the valid entries
(entries x entry size bytes, not the preallocated size), read on the first search and
kept while the segment is in use; the copy of a sealed index is given up when the
FileHandleCache closes its segment's file. New entries go to the copy and reach the file
on flush, roll and close, as Kafka's mapped entries reach the disk on flush: after a
crash, the segments past the recovery point (the only ones that can miss entries) are
recovered and their indexes rebuilt.
"""

from __future__ import annotations

import os
import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from pathlib import Path

from kafpy.common.errors import KafkaError
from kafpy.storage.file_handle_cache import open_transient

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
    """A sorted array of fixed-size entries in a file, searched by binary search.

    `max_index_size` is the preallocated size in bytes of a new (or active) index; -1 keeps
    the size of the existing file. The number of valid entries of an existing file is its
    length divided by the entry size when the file was trimmed, and, when the file is still
    preallocated (an unclean shutdown), the entries before the first all-zero entry: Kafka
    never writes an all-zero entry, since the first index entry of a segment always comes
    after `index.interval.bytes` of data.

    The file holds a valid prefix of entries followed by zeros at all times: entries are
    written out in order, and truncation zeroes what it drops.
    """

    entry_size: int = 0
    _entry: struct.Struct
    # the column holding an offset relative to the base offset (0: the key, 1: the value)
    _relative_column: int = 0

    def __init__(
        self, file: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        self.file = Path(file)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._lock = threading.RLock()
        es = self.entry_size
        # the entries in memory (None: not read yet, or given up; the file has them all)
        self._buf: bytearray | None
        # the entries the file holds; those after it are only in _buf
        self._persisted = 0
        self._dirty = False  # written since the last fsync
        newly_created = not self.file.exists()
        if newly_created:
            if not writable:
                raise FileNotFoundError(2, "No such index file", str(self.file))
            if max_index_size < 0:
                raise ValueError(f"Cannot create index {self.file} without a maximum size")
            self._length = round_down_to_multiple(max_index_size, es)
            fd = self._open(os.O_RDWR | os.O_CREAT)
            try:
                os.ftruncate(fd, self._length)
            finally:
                os.close(fd)
            self._max_entries = self._length // es
            self._entries = 0
            self._buf = bytearray()
            last = None
        else:
            fd = self._open(os.O_RDONLY)
            try:
                self._length = os.fstat(fd).st_size
                self._max_entries = self._length // es
                self._entries = self._count_valid_entries(fd)
                last = self._read_entry(fd, self._entries - 1) if self._entries else None
            finally:
                os.close(fd)
            self._buf = None
            self._persisted = self._entries
        self._warm_entries = _WARM_SECTION_BYTES // es
        self._set_last(last)

    # -- the file and the copy in memory ------------------------------------------------------

    def _open(self, flags: int) -> int:
        return open_transient(self.file, flags)

    def _read_entry(self, fd: int, n: int) -> tuple[int, int]:
        return self._parse(os.pread(fd, self.entry_size, n * self.entry_size), 0)

    def _count_valid_entries(self, fd: int) -> int:
        n = self._max_entries
        if n == 0:
            return 0
        es = self.entry_size
        zero = bytes(es)

        def is_zero(i: int) -> bool:
            return os.pread(fd, es, i * es) == zero

        if not is_zero(n - 1):
            return n  # a trimmed (or completely full) index: every entry is valid
        # A preallocated index: entries are a non-zero prefix followed by zeros.
        lo, hi = 0, n - 1  # the first all-zero entry is in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if is_zero(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _buffer(self) -> bytearray:
        """The copy of the valid entries, read from the file if it is not in memory."""
        buf = self._buf
        if buf is not None:
            return buf
        with self._lock:
            buf = self._buf
            if buf is None:
                size = self._entries * self.entry_size
                fd = self._open(os.O_RDONLY)
                try:
                    data = os.pread(fd, size, 0)
                finally:
                    os.close(fd)
                if len(data) < size:  # cut short behind our back: what is there is valid
                    data += bytes(size - len(data))
                buf = self._buf = bytearray(data)
            return buf

    def _write_pending(self, sync: bool = False) -> None:
        """Write the entries only in memory to the file (and fsync it with `sync`).

        With pwrite, never through a mapping: the preallocated file is sparse, and a store
        through a mapping into a hole on a full disk is a SIGBUS that kills the broker,
        where pwrite answers ENOSPC. Nor is the file given its blocks up front (fallocate
        took seconds on a busy ext4; bench/metadata_load.py)."""
        with self._lock:
            start, end = self._persisted, self._entries
            if end <= start and not (sync and self._dirty):
                return
            es = self.entry_size
            fd = self._open(os.O_WRONLY)
            try:
                if end > start:
                    buf = self._buffer()
                    data = bytes(buf[start * es : end * es])
                    written = os.pwrite(fd, data, start * es)
                    while written < len(data):
                        written += os.pwrite(fd, data[written:], start * es + written)
                    self._persisted = end
                    self._dirty = True
                if sync:
                    os.fsync(fd)
                    self._dirty = False
            finally:
                os.close(fd)

    def release_copy(self) -> None:
        """Give up the copy in memory of a sealed index (one that takes no more entries)
        whose entries are all in the file; the next search reads it again. Skipped while
        another thread uses the index (the FileHandleCache calls this when it closes the
        segment's file)."""
        if self._buf is None or not self._lock.acquire(blocking=False):
            return
        try:
            if self._entries >= self._max_entries and self._persisted == self._entries:
                self._buf = None
        finally:
            self._lock.release()

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
            es = self.entry_size
            if self._entries * es > rounded:
                self._truncate_to_entries(rounded // es)
            self._write_pending()
            fd = self._open(os.O_RDWR)
            try:
                os.ftruncate(fd, rounded)
            finally:
                os.close(fd)
            self._length = rounded
            self._max_entries = rounded // es
            self._dirty = True
            return True

    def trim_to_valid_size(self) -> None:
        """Write every entry out and cut the file to them: the segment rolled or closes."""
        with self._lock:
            self._write_pending()
            self.resize(self._entries * self.entry_size)

    def reset(self) -> None:
        """Drop every entry and give the file its full preallocated size again."""
        with self._lock:
            self.truncate()
            self.resize(self.max_index_size)

    def truncate(self) -> None:
        self._truncate_to_entries(0)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= `offset` (Kafka's truncateTo)."""
        with self._lock:
            column = self._relative_column  # the offsets' column
            slot = self.largest_lower_bound_slot_for(offset, IndexSearchEntity(column))
            if slot < 0:
                new_entries = 0
            elif self._parse_entry(slot)[column] == offset:
                new_entries = slot
            else:
                new_entries = slot + 1
            self._truncate_to_entries(new_entries)

    def _truncate_to_entries(self, n: int) -> None:
        with self._lock:
            old = self._entries
            if n >= old:
                return
            es = self.entry_size
            buf = self._buffer()
            if self._persisted > n:
                # Zero the dropped entries so a reopen after a crash cannot count them again.
                fd = self._open(os.O_WRONLY)
                try:
                    os.pwrite(fd, bytes((self._persisted - n) * es), n * es)
                finally:
                    os.close(fd)
                self._persisted = n
                self._dirty = True
            del buf[n * es :]
            self._entries = n
            self._set_last(self._parse(buf, n - 1) if n else None)

    def flush(self) -> None:
        """Write the entries only in memory to the file and fsync it."""
        self._write_pending(sync=True)

    def close(self) -> None:
        """Trim the file to its valid entries and drop the copy in memory."""
        with self._lock:
            if self.writable:
                self.trim_to_valid_size()
            self.close_handler()

    def close_handler(self) -> None:
        """Drop the copy in memory without writing anything (entries not yet written are
        lost, as in a crash)."""
        with self._lock:
            buf, self._buf = self._buf, None
            n = self._persisted
            if self._entries != n and buf is not None:  # entries only in memory: lost
                self._set_last(self._parse(buf, n - 1) if n else None)
                self._entries = n

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

    # -- entries and searching ------------------------------------------------------------------

    @abstractmethod
    def _parse(self, buf: bytes | bytearray, n: int) -> tuple[int, int]:
        """Entry `n` of `buf` as (key, value) in absolute terms."""

    @abstractmethod
    def _set_last(self, entry: tuple[int, int] | None) -> None:
        """Remember the last entry (None: the index is empty)."""

    @abstractmethod
    def sanity_check(self) -> None:
        """Raise CorruptIndexError if the file cannot be a valid index of this kind."""

    def _parse_entry(self, n: int) -> tuple[int, int]:
        """Entry `n` (absolute terms), from the copy in memory."""
        return self._parse(self._buffer(), n)

    def _nth_entry(self, n: int, kind: str) -> tuple[int, int]:
        """Entry `n` (absolute terms); IndexError naming `kind` of index when there is none."""
        with self._lock:
            if n < 0 or n >= self._entries:
                raise IndexError(
                    f"Attempt to fetch the {n}th entry from {kind} of size {self._entries} ({self.file})"
                )
            return self._parse_entry(n)

    def _entry_at(self, n: int) -> tuple[int, int]:
        """Entry `n` without reading the whole index into memory (for one-off reads)."""
        buf = self._buf
        if buf is not None:
            return self._parse(buf, n)
        fd = self._open(os.O_RDONLY)
        try:
            return self._read_entry(fd, n)
        finally:
            os.close(fd)

    def _index_slot_range_for(self, target: int, entity: IndexSearchEntity) -> tuple[int, int]:
        """(largest slot <= target, smallest slot >= target), -1 where there is none."""
        n = self._entries
        if n == 0:
            return -1, -1
        buf = self._buffer()
        column = entity.value
        if column == self._relative_column:
            target -= self.base_offset  # compare the stored relative offsets as they are
        unpack = self._entry.unpack_from
        es = self.entry_size
        first_hot = max(0, n - 1 - self._warm_entries)
        if unpack(buf, first_hot * es)[column] < target:
            return _binary_search(buf, unpack, es, column, first_hot, n - 1, target, n)
        if unpack(buf, 0)[column] > target:
            return -1, 0
        return _binary_search(buf, unpack, es, column, 0, first_hot, target, n)

    def largest_lower_bound_slot_for(self, target: int, entity: IndexSearchEntity) -> int:
        return self._index_slot_range_for(target, entity)[0]

    def smallest_upper_bound_slot_for(self, target: int, entity: IndexSearchEntity) -> int:
        return self._index_slot_range_for(target, entity)[1]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(file={self.file}, base_offset={self.base_offset}, "
            f"entries={self._entries}, max_entries={self._max_entries})"
        )


def _binary_search(
    buf: bytearray,
    unpack: Callable[[bytearray, int], tuple[int, ...]],
    entry_size: int,
    column: int,
    begin: int,
    end: int,
    target: int,
    entries: int,
) -> tuple[int, int]:
    """(largest slot <= target, smallest slot >= target) among slots [begin, end], whose
    `column` is sorted; -1 where there is none."""
    lo, hi = begin, end
    while lo < hi:
        mid = (lo + hi + 1) // 2
        v = unpack(buf, mid * entry_size)[column]
        if v > target:
            hi = mid - 1
        elif v < target:
            lo = mid
        else:
            return mid, mid
    return lo, (-1 if lo == entries - 1 else lo + 1)
