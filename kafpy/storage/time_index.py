"""TimeIndex: the `.timeindex` file mapping timestamps to offsets in a segment.

Each 12-byte entry is (timestamp int64, relative offset int32), big-endian. Entries are
added next to offset index entries, for the largest timestamp seen so far in the segment
and the offset of the batch holding it, and only when the timestamp grows; so both
columns are non-decreasing. A lookup gives the offset from which a scan for the first
record with timestamp >= target may start. One slot is always kept free so that the
final (largest timestamp) entry can be written when the segment rolls or closes.
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

NO_TIMESTAMP = -1
_ENTRY = struct.Struct(">qi")


class TimestampOffset(NamedTuple):
    """A timestamp and an offset (Kafka's TimestampOffset)."""

    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    """The timestamp → offset index of one segment (Kafka's `TimeIndex`)."""

    entry_size = 12
    _entry = _ENTRY
    _relative_column = 1

    def __init__(
        self, file: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        self._last_ts = NO_TIMESTAMP
        self._last_off = base_offset
        super().__init__(file, base_offset, max_index_size, writable)

    def _set_last(self, entry: tuple[int, int] | None) -> None:
        self._last_ts, self._last_off = (NO_TIMESTAMP, self.base_offset) if entry is None else entry

    def _parse(self, buf: bytes | bytearray, n: int) -> tuple[int, int]:
        ts, rel = _ENTRY.unpack_from(buf, n * 12)
        return ts, self.base_offset + rel

    def is_full(self) -> bool:
        return self._entries >= self._max_entries - 1

    def last_entry(self) -> TimestampOffset:
        """The last entry, or (-1, base_offset) when the index is empty."""
        return TimestampOffset(self._last_ts, self._last_off)

    def entry(self, n: int) -> TimestampOffset:
        return TimestampOffset(*self._nth_entry(n, "a time index"))

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's.

        Not locked, like OffsetIndex.append: the Log serializes appends and resizes.
        """
        n = self._entries
        if not skip_full_check and n >= self._max_entries - 1:
            raise InvalidOffsetError(
                f"Attempt to append to a full time index (size = {n}) ({self.file})."
            )
        if n != 0 and offset < self._last_off:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to slot {n} no larger than "
                f"the last offset appended ({self._last_off}) to {self.file}."
            )
        if n != 0 and timestamp < self._last_ts:
            raise InvalidOffsetError(
                f"Attempt to append a timestamp ({timestamp}) to slot {n} no larger "
                f"than the last timestamp appended ({self._last_ts}) to {self.file}."
            )
        if timestamp > self._last_ts:
            if n >= self._max_entries:
                return  # nothing to write into (an index trimmed to its entries)
            rel = offset - self.base_offset
            if not 0 <= rel <= INT32_MAX:
                self.relative_offset(offset)  # raises naming the overflow
            buf = self._buf
            if buf is None:
                buf = self._buffer()
            buf += _ENTRY.pack(timestamp, rel)  # before the count: readers take the count first
            self._entries = n + 1
            self._last_ts = timestamp
            self._last_off = offset

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= target, else (-1, base_offset)."""
        with self._lock:
            slot = self.largest_lower_bound_slot_for(target_timestamp, IndexSearchEntity.KEY)
            if slot == -1:
                return TimestampOffset(NO_TIMESTAMP, self.base_offset)
            return TimestampOffset(*self._parse_entry(slot))

    def sanity_check(self) -> None:
        if self._entries != 0:
            first_ts = self._entry_at(0)[0]
            if self._last_ts < first_ts:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.file}) has non-zero size but "
                    f"the last timestamp is {self._last_ts} which is less than the first "
                    f"timestamp {first_ts}"
                )
            if self._last_off < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.file}) has non-zero size but "
                    f"the last offset is {self._last_off} which is less than the first offset "
                    f"{self.base_offset}"
                )
        if self._length % self.entry_size != 0:
            raise CorruptIndexError(
                f"Time index file {self.file} is corrupt, found {self._length} bytes which is "
                f"neither positive nor a multiple of {self.entry_size}."
            )
