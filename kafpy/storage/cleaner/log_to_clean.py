"""LogToClean: one log's clean/dirty split, as the cleaner manager sizes it up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.log import Log
from kafpy.storage.log_segment import LogSegment


class _HasBaseOffset(Protocol):
    @property
    def base_offset(self) -> int: ...


S = TypeVar("S", bound=_HasBaseOffset)


def in_range(segments: Sequence[S], from_offset: int, to_offset: int) -> list[S]:
    """Those of `segments` (ordered by base offset) that may hold offsets in
    [from_offset, to_offset) (Kafka's logSegments(from, to))."""
    out: list[S] = []
    for i, s in enumerate(segments):
        if s.base_offset >= to_offset:
            break
        if i + 1 < len(segments) and segments[i + 1].base_offset <= from_offset:
            continue
        out.append(s)
    return out


def segments_in_range(log: Log, from_offset: int, to_offset: int) -> list[LogSegment]:
    """The log's segments that may hold offsets in [from_offset, to_offset)."""
    return in_range(log.log_segments(), from_offset, to_offset)


@dataclass(order=True)
class LogToClean:
    """A compacted log with its clean section [log start, first_dirty_offset) and its
    cleanable section [first_dirty_offset, first_uncleanable_offset) (Kafka's LogToClean).

    Orders by `cleanable_ratio`, so the dirtiest log is the max. `needs_compaction_now`
    is set when max.compaction.lag.ms has passed for the oldest dirty record.
    """

    cleanable_ratio: float = field(init=False)
    topic_partition: TopicPartition = field(compare=False)
    log: Log = field(compare=False, repr=False)
    first_dirty_offset: int = field(compare=False)
    first_uncleanable_offset: int = field(compare=False)
    needs_compaction_now: bool = field(compare=False, default=False)
    clean_bytes: int = field(init=False, compare=False)
    cleanable_bytes: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        self.clean_bytes = sum(
            s.size for s in segments_in_range(self.log, -1, self.first_dirty_offset)
        )
        self.cleanable_bytes = sum(
            s.size
            for s in segments_in_range(
                self.log,
                self.first_dirty_offset,
                max(self.first_dirty_offset, self.first_uncleanable_offset),
            )
        )
        total = self.clean_bytes + self.cleanable_bytes
        self.cleanable_ratio = self.cleanable_bytes / total if total else 0.0

    def delete_horizon_ms(self) -> int:
        """Tombstones are kept for delete.retention.ms after the clean section last
        changed: those in segments last modified before this time are dropped."""
        clean_section = segments_in_range(self.log, 0, self.first_dirty_offset)
        cleanable_horizon_ms = clean_section[-1].last_modified if clean_section else 0
        return cleanable_horizon_ms - self.log.config.delete_retention_ms

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes
