"""OffsetIndex: the `.index` file mapping offsets to byte positions in a segment's `.log`.

Each 8-byte entry is (relative offset int32, physical position int32), big-endian, the
relative offset being `offset - base_offset`. The index is sparse: LogSegment adds an
entry every `index.interval.bytes` of appended data, for the last offset of the appended
batches and the position where those batches start. A lookup finds the largest indexed
offset <= the target; the segment then scans batch headers from that position.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from kafpy.storage.abstract_index import (
    INT32_MAX,
    AbstractIndex,
    CorruptIndexError,
    IndexSearchEntity,
    InvalidOffsetError,
)

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    """An offset and the byte position in the log where its batch (or an earlier one) starts."""

    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    """The offset → position index of one segment (Kafka's `OffsetIndex`)."""

    entry_size = 8
    _entry = _ENTRY
    _relative_column = 0

    def __init__(
        self, file: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        self._last_offset = base_offset
        self._last_position = 0
        super().__init__(file, base_offset, max_index_size, writable)

    def _set_last(self, entry: tuple[int, int] | None) -> None:
        self._last_offset, self._last_position = (self.base_offset, 0) if entry is None else entry

    def _parse(self, buf: bytes | bytearray, n: int) -> tuple[int, int]:
        rel, pos = _ENTRY.unpack_from(buf, n * 8)
        return self.base_offset + rel, pos

    @property
    def last_offset(self) -> int:
        return self._last_offset

    def last_entry(self) -> OffsetPosition:
        if self._entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self._last_offset, self._last_position)

    def entry(self, n: int) -> OffsetPosition:
        return OffsetPosition(*self._nth_entry(n, "an index"))

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest indexed offset <= target and its position, else (base_offset, 0)."""
        with self._lock:
            slot = self.largest_lower_bound_slot_for(target_offset, IndexSearchEntity.KEY)
            if slot == -1:
                return OffsetPosition(self.base_offset, 0)
            return OffsetPosition(*self._parse_entry(slot))

    def fetch_upper_bound_offset(
        self, fetch_offset: OffsetPosition, fetch_size: int
    ) -> OffsetPosition | None:
        """The first entry whose position is >= fetch position + fetch_size, if any."""
        with self._lock:
            slot = self.smallest_upper_bound_slot_for(
                fetch_offset.position + fetch_size, IndexSearchEntity.VALUE
            )
            if slot == -1:
                return None
            return OffsetPosition(*self._parse_entry(slot))

    def append(self, offset: int, position: int) -> None:
        """Add an entry; the offset must be larger than every offset already indexed.

        Not locked: appends come from the segment's owner (the Log, under its lock), which
        also serializes them with resizing; taking the index lock here costs a sixth of
        the index append on the produce path. The entry reaches the file on flush.
        """
        n = self._entries
        if n >= self._max_entries:
            raise InvalidOffsetError(
                f"Attempt to append to a full index (size = {n}) ({self.file})."
            )
        if n == 0 or offset > self._last_offset:
            rel = offset - self.base_offset
            if not 0 <= rel <= INT32_MAX:
                self.relative_offset(offset)  # raises naming the overflow
            buf = self._buf
            if buf is None:
                buf = self._buffer()
            buf += _ENTRY.pack(rel, position)  # before the count: readers take the count first
            self._entries = n + 1
            self._last_offset = offset
            self._last_position = position
        else:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to position {n} no larger "
                f"than the last offset appended ({self._last_offset}) to {self.file}."
            )

    def sanity_check(self) -> None:
        if self._entries != 0 and self._last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file ({self.file}) has non-zero size but the last "
                f"offset is {self._last_offset} which is less than the base offset {self.base_offset}."
            )
        if self._length % self.entry_size != 0:
            raise CorruptIndexError(
                f"Index file {self.file} is corrupt, found {self._length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}."
            )
