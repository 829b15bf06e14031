"""FileRecords: the `.log` file of a segment, seen as a run of record batches on disk.

Appends write whole batches with one `os.write`; reads return the stored bytes of a
byte range with one `os.pread`. Searches walk batch headers only (61 bytes each, read
with `pread`), never records, except `search_for_timestamp`, which must look at record
timestamps inside the one batch that may hold the target.
"""

from __future__ import annotations

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
from kafpy.storage.time_index import TimestampOffset

_READ_CHUNK = 1 << 20


class LogOffsetPosition(NamedTuple):
    """A batch located in a file: its last offset, start position and size in bytes."""

    offset: int
    position: int
    size: int


class FileRecords:
    """The batches of one segment's `.log` file (Kafka's FileRecords).

    Only this object writes the file; `size` is the number of bytes written (the file
    length, as kafpy does not preallocate log files).
    """

    def __init__(self, file: Path, fd: int, size: int) -> None:
        self.file = Path(file)
        self._fd = fd
        self._size = size

    @classmethod
    def open(cls, file: Path, file_already_exists: bool = False) -> FileRecords:
        flags = os.O_RDWR | os.O_CREAT
        if not file_already_exists:
            flags |= os.O_TRUNC
        fd = os.open(file, flags, 0o644)
        size = os.lseek(fd, 0, os.SEEK_END)
        return cls(file, fd, size)

    @property
    def size(self) -> int:
        return self._size

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    # -- writing -----------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end of the file; returns the bytes written."""
        n = os.write(self._fd, data)
        total = len(data)
        while n < total:  # a short write (rare on a regular file): finish it
            n += os.write(self._fd, memoryview(data)[n:])
        self._size += total
        return total

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to `target_size` bytes; returns the bytes removed."""
        if target_size > self._size or target_size < 0:
            raise ValueError(
                f"Attempt to truncate log segment {self.file} to {target_size} bytes failed, "
                f"size of this log segment is {self._size} bytes."
            )
        removed = self._size - target_size
        if removed:
            os.ftruncate(self._fd, target_size)
            os.lseek(self._fd, target_size, os.SEEK_SET)
            self._size = target_size
        return removed

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete_if_exists(self) -> bool:
        self.close()
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
        size = min(size, self._size - position)
        if size <= 0:
            return b""
        return os.pread(self._fd, size, position)

    def header_at(self, position: int, end: int | None = None) -> BatchHeader | None:
        """The header of the batch at `position`; None if the batch does not fit before `end`.

        Raises CorruptRecordError when the length field is too small for a v2 batch.
        """
        end = self._size if end is None else end
        if end - position < LOG_OVERHEAD:
            return None
        raw = os.pread(self._fd, RECORD_BATCH_OVERHEAD, position)
        return header_at(raw, position, end, f" in file {self.file}", 0)

    def batch_headers(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each complete batch from `start`; stops at a partial one."""
        end = self._size if end is None else end
        return iter_file_headers(self._fd, start, end, f" in file {self.file}")

    def batches_with_data(self, start: int = 0) -> Iterator[tuple[int, BatchHeader, memoryview]]:
        """(position, header, bytes) of each complete batch, reading the file in large chunks.

        Stops at a partial trailing batch; raises CorruptRecordError for a length field too
        small to be a batch. Used by recovery and tools, which need every byte.
        """
        return iter_file_batches(self._fd, start, self._size, _READ_CHUNK, f" in file {self.file}")

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
        return f"FileRecords(file={self.file}, size={self._size})"
