"""FileRecords: the `.log` file of a segment, seen as a run of record batches on disk.

Appends write whole batches with one `os.pwrite`; reads return the stored bytes of a
byte range with one `os.pread`. Searches walk batch headers only (61 bytes each, read
with `pread`), never records, except `search_for_timestamp`, which must look at record
timestamps inside the one batch that may hold the target.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kafpy.records.record_batch import (
    H_BASE_OFFSET,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_MAX_TIMESTAMP,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    RecordBatch,
    header_at,
    iter_file_batches,
    iter_file_headers,
)
from kafpy.storage.file_handle_cache import FILE_HANDLE_CACHE, CachedFile, FileHandleCache
from kafpy.storage.time_index import TimestampOffset

_READ_CHUNK = 1 << 20

# a failed append is the segment's to report (the line kept its logger when the write
# moved here from LogSegment.append)
log = logging.getLogger("kafpy.log.LogSegment")


class LogOffsetPosition(NamedTuple):
    """A batch located in a file: its last offset, start position and size in bytes."""

    offset: int
    position: int
    size: int


class FileRecords(CachedFile):
    """The batches of one segment's `.log` file (Kafka's FileRecords).

    Only this object writes the file; `size` is the number of bytes written, where the
    next append goes and where reads end. It is the file length unless the file was
    preallocated (`preallocate`, a new file made `init_file_size` bytes long at once):
    then the file is longer than its data until `trim()` cuts it to `size`, which rolling
    the segment and closing the file do. A preallocated file left by a crash is opened at
    its full length; recovery finds the end of the data (a zero length field is no batch)
    and cuts the file there. Its descriptor belongs to the
    process's FileHandleCache: opened on first use, closed when the segment has not been
    used for a while, opened again transparently. Writes say where they go (`pwrite`), so
    a reopened file needs no seek. The file is dirty from its opening (an earlier process
    may have left bytes nobody synced) and from each write until `flush` syncs it; a
    clean file's flush does nothing, so it does not open an evicted file for it.
    """

    def __init__(self, file: Path, size: int, cache: FileHandleCache = FILE_HANDLE_CACHE) -> None:
        super().__init__(file, cache)
        # the bytes written: read by everyone, written only here (a plain attribute, not a
        # property: the produce path reads it several times per append)
        self.size = size
        self._dirty = True
        # the file is longer than its data (preallocated): a truncation to `size` still cuts
        self._preallocated = False

    @classmethod
    def open(
        cls,
        file: Path,
        file_already_exists: bool = False,
        init_file_size: int = 0,
        preallocate: bool = False,
        cache: FileHandleCache = FILE_HANDLE_CACHE,
    ) -> FileRecords:
        """An existing file is only looked at (its size); it is opened on first use. A new
        one (or, without `file_already_exists`, an emptied one) is created now and kept
        open; with `preallocate` it is made `init_file_size` bytes long on disk at once,
        its data starting empty (Kafka's FileRecords.open)."""
        if file_already_exists:
            try:
                return cls(file, os.stat(file).st_size, cache)
            except FileNotFoundError:
                pass  # created below, as os.open(O_CREAT) did
        records = cls(file, 0, cache)
        flags = os.O_RDWR | os.O_CREAT
        if not file_already_exists:
            flags |= os.O_TRUNC
        cache.open(records, flags)
        if preallocate and not file_already_exists and init_file_size > 0:
            try:
                fd = records.acquire()
                try:
                    _allocate(fd, init_file_size)
                finally:
                    records.release()
            except BaseException:
                records.close_handlers()
                raise
            records._preallocated = True
        return records

    @property
    def fd(self) -> int:
        """The open descriptor, for code that reads the file on this thread right away
        (tools, the cleaner); it stays valid until another file is opened."""
        fd = self.acquire()
        self.release()
        return fd

    # -- writing -----------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end of the file; returns the bytes written (the produce path).

        The size counts only a complete write: a failure part-way (ENOSPC, EIO) cuts the
        file back to where it was and raises, so no torn batch is ever followed by another
        append.
        """
        total = len(data)
        position = self.size
        fd = self.acquire()
        try:
            self._dirty = True
            try:
                n = os.pwrite(fd, data, position)
                while n < total:  # a short write (rare on a regular file): finish it
                    n += os.pwrite(fd, memoryview(data)[n:], position + n)
            except OSError:
                self._truncate_torn_write(fd, position)
                self._preallocated = False
                raise
        finally:
            self.release()
        self.size = position + total
        return total

    def _truncate_torn_write(self, fd: int, size: int) -> None:
        """Cut the file back to `size` bytes after a failed append."""
        try:
            os.ftruncate(fd, size)
        except OSError as e:
            log.error(
                "Failed to truncate %s back to %d bytes after a failed append: %s",
                self.file,
                size,
                e,
            )

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to `target_size` bytes; returns the bytes of data removed. A
        preallocated file is cut even at its own size (its zeros past the data go)."""
        if target_size > self.size or target_size < 0:
            raise ValueError(
                f"Attempt to truncate log segment {self.file} to {target_size} bytes failed, "
                f"size of this log segment is {self.size} bytes."
            )
        removed = self.size - target_size
        if removed or self._preallocated:
            fd = self.acquire()
            try:
                self._dirty = True
                os.ftruncate(fd, target_size)
            finally:
                self.release()
            self.size = target_size
            self._preallocated = False
        return removed

    def trim(self) -> None:
        """Cut a preallocated file to its data (Kafka's FileRecords.trim); else nothing."""
        if self._preallocated:
            self.truncate_to(self.size)

    @property
    def preallocated(self) -> bool:
        """Whether the file on disk is longer than its data (preallocated, not yet trimmed)."""
        return self._preallocated

    @property
    def dirty(self) -> bool:
        """Whether the file may hold bytes not yet synced to disk."""
        return self._dirty

    def flush(self) -> None:
        """fsync the file if it is dirty; an evicted one is opened for it (fsync covers
        what any descriptor of the file wrote)."""
        if self.closed or not self._dirty:
            return
        fd = self.acquire()
        try:
            # cleared first: a write during the fsync marks the file dirty again
            self._dirty = False
            try:
                os.fsync(fd)
            except BaseException:
                self._dirty = True
                raise
        finally:
            self.release()

    def close(self) -> None:
        """Trim the file to its data and close it for good; later uses raise EBADF."""
        try:
            if not self.closed:
                self.trim()
        finally:
            super().close()

    def close_handlers(self) -> None:
        """Close the file for good without trimming it (after a storage error)."""
        super().close()

    def delete_if_exists(self) -> bool:
        self.close_handlers()
        try:
            self.file.unlink()
            return True
        except FileNotFoundError:
            return False

    def rename_to(self, new_file: Path) -> None:
        try:
            os.replace(self.file, new_file)
        finally:
            self.file = Path(new_file)

    def update_parent_dir(self, parent: Path) -> None:
        self.file = Path(parent) / self.file.name

    def last_modified(self) -> int:
        """The file's modification time in ms."""
        return os.stat(self.file).st_mtime_ns // 1_000_000

    def set_last_modified(self, ms: int) -> None:
        os.utime(self.file, ns=(ms * 1_000_000, ms * 1_000_000))

    # -- reading -----------------------------------------------------------------------------

    def read(self, position: int, size: int) -> bytes:
        """The stored bytes of [position, position + size), cut at the end of the file."""
        size = min(size, self.size - position)
        if size <= 0:
            return b""
        fd = self.acquire()
        try:
            return os.pread(fd, size, position)
        finally:
            self.release()

    def header_at(self, position: int, end: int | None = None) -> BatchHeader | None:
        """The header of the batch at `position`; None if the batch does not fit before `end`.

        Raises CorruptRecordError when the length field is too small for a v2 batch.
        """
        end = self.size if end is None else end
        if end - position < LOG_OVERHEAD:
            return None
        fd = self.acquire()
        try:
            raw = os.pread(fd, RECORD_BATCH_OVERHEAD, position)
        finally:
            self.release()
        return header_at(raw, position, end, f" in file {self.file}", 0)

    def batch_headers(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each complete batch from `start`; stops at a partial one."""
        end = self.size if end is None else end
        fd = self.acquire()
        try:  # pinned for as long as the iteration goes on
            yield from iter_file_headers(fd, start, end, f" in file {self.file}")
        finally:
            self.release()

    def batches_with_data(self, start: int = 0) -> Iterator[tuple[int, BatchHeader, memoryview]]:
        """(position, header, bytes) of each complete batch, reading the file in large chunks.

        Stops at a partial trailing batch; raises CorruptRecordError for a length field too
        small to be a batch. Used by recovery and tools, which need every byte.
        """
        fd = self.acquire()
        try:
            yield from iter_file_batches(fd, start, self.size, _READ_CHUNK, f" in file {self.file}")
        finally:
            self.release()

    def search_for_offset_with_size(
        self, target_offset: int, starting_position: int
    ) -> LogOffsetPosition | None:
        """The first batch from `starting_position` whose last offset is >= target_offset."""
        for pos, header in self.batch_headers(starting_position):
            last = header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA]
            if last >= target_offset:
                return LogOffsetPosition(last, pos, header[H_LENGTH] + LOG_OVERHEAD)
        return None

    def search_for_timestamp(
        self, target_timestamp: int, starting_position: int, starting_offset: int
    ) -> TimestampOffset | None:
        """The first record at or after `starting_offset` with timestamp >= target."""
        for pos, header in self.batch_headers(starting_position):
            if header[H_MAX_TIMESTAMP] >= target_timestamp:
                data = self.read(pos, header[H_LENGTH] + LOG_OVERHEAD)
                for record in RecordBatch(data).records():
                    if record.timestamp >= target_timestamp and record.offset >= starting_offset:
                        return TimestampOffset(record.timestamp, record.offset)
        return None

    def largest_timestamp_after(self, starting_position: int) -> TimestampOffset:
        """The largest batch max timestamp from `starting_position` and that batch's last offset."""
        best = TimestampOffset(-1, -1)
        for _, header in self.batch_headers(starting_position):
            if header[H_MAX_TIMESTAMP] > best.timestamp:
                best = TimestampOffset(
                    header[H_MAX_TIMESTAMP], header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA]
                )
        return best

    def __repr__(self) -> str:
        return f"FileRecords(file={self.file}, size={self.size})"


def _allocate(fd: int, length: int) -> None:
    """Make the file `length` bytes long, as Java's RandomAccessFile.setLength (which Kafka
    uses) does: a sparse file on Linux, so preallocating 1 GiB segments for thousands of
    partitions costs no disk until they fill, as with Kafka."""
    os.ftruncate(fd, length)
