"""LogSegments: the segments of one log, held by base offset (Kafka's LogSegments).

Kafka 3.0 split its Log into LocalLog, LogSegments and LogLoader; this is the segment
map that the Log and its LogLoader share through a public API, instead of the loader
reaching into the Log's fields. It is not thread-safe: the Log's lock guards it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from kafpy.storage.log_segment import LogSegment

__all__ = ["LogSegments"]


class LogSegments:
    """A log's segments by base offset, oldest first; the last one is the active segment.

    Lookups are a bisection over the sorted base offsets; `values` returns copies, so a
    caller may add or remove segments while it walks them.
    """

    def __init__(self) -> None:
        self._segments: dict[int, LogSegment] = {}
        self._base_offsets: list[int] = []  # the sorted keys of _segments
        self._last: LogSegment | None = None

    def add(self, segment: LogSegment) -> LogSegment:
        """Add `segment`, replacing one with the same base offset."""
        base = segment.base_offset
        if base not in self._segments:
            bisect.insort(self._base_offsets, base)
        self._segments[base] = segment
        self._last = self._segments[self._base_offsets[-1]]
        return segment

    def remove(self, base_offset: int) -> None:
        """Forget the segment at `base_offset` (its files are the caller's)."""
        if self._segments.pop(base_offset, None) is not None:
            del self._base_offsets[bisect.bisect_left(self._base_offsets, base_offset)]
            self._last = self._segments[self._base_offsets[-1]] if self._base_offsets else None

    def clear(self) -> None:
        self._segments.clear()
        self._base_offsets.clear()
        self._last = None

    def get(self, base_offset: int) -> LogSegment | None:
        """The segment whose base offset is `base_offset`, if any."""
        return self._segments.get(base_offset)

    def holds(self, segment: LogSegment) -> bool:
        """Whether `segment` itself (not only its base offset) is still in the log."""
        return self._segments.get(segment.base_offset) is segment

    def __contains__(self, base_offset: int) -> bool:
        return base_offset in self._segments

    def __len__(self) -> int:
        return len(self._base_offsets)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.values())

    @property
    def is_empty(self) -> bool:
        return not self._base_offsets

    @property
    def active_segment(self) -> LogSegment:
        """The last segment (the one appended to); the log always has one once loaded."""
        last = self._last
        if last is None:
            raise LookupError("The log has no segments")
        return last

    @property
    def first_segment(self) -> LogSegment | None:
        return self._segments[self._base_offsets[0]] if self._base_offsets else None

    @property
    def base_offsets(self) -> list[int]:
        """The base offsets, ascending (a copy)."""
        return list(self._base_offsets)

    def size_in_bytes(self) -> int:
        """Bytes in all segments."""
        return sum(s.size for s in self._segments.values())

    def values(self) -> list[LogSegment]:
        """The segments, oldest first (a copy)."""
        return [self._segments[b] for b in self._base_offsets]

    def from_base(self, base_offset: int) -> list[LogSegment]:
        """The segments whose base offset is >= `base_offset`, oldest first."""
        start = bisect.bisect_left(self._base_offsets, base_offset)
        return [self._segments[b] for b in self._base_offsets[start:]]

    def in_range(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """The segments that may hold offsets in [from_offset, to_offset), oldest first
        (Kafka's LocalLog.logSegments(from, to): from the floor segment of `from_offset`)."""
        start = max(bisect.bisect_right(self._base_offsets, from_offset) - 1, 0)
        end = bisect.bisect_left(self._base_offsets, to_offset)
        return [self._segments[b] for b in self._base_offsets[start:end]]

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment that may hold `offset`: the last one whose base offset is <= it."""
        i = bisect.bisect_right(self._base_offsets, offset) - 1
        return self._segments[self._base_offsets[i]] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        """The first segment whose base offset is > `offset`."""
        i = bisect.bisect_right(self._base_offsets, offset)
        return self._segments[self._base_offsets[i]] if i < len(self._base_offsets) else None

    def __repr__(self) -> str:
        return f"LogSegments({self._base_offsets})"
