"""LogToClean: one log's clean/dirty split, as the cleaner manager sizes it up."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.log import Log
from kafpy.storage.log_segment import LogSegment


def segments_in_range(log: Log, from_offset: int, to_offset: int) -> list[LogSegment]:
    """The log's segments that may hold offsets in [from_offset, to_offset) (Kafka's logSegments(from, to))."""
    segments = log.log_segments()
    out: list[LogSegment] = []
    for i, s in enumerate(segments):
        if s.base_offset >= to_offset:
            break
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if next_base is not None and next_base <= from_offset:
            continue
        out.append(s)
    return out


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
                self.log, self.first_dirty_offset, max(self.first_dirty_offset, self.first_uncleanable_offset)
            )
        )
        total = self.clean_bytes + self.cleanable_bytes
        self.cleanable_ratio = self.cleanable_bytes / total if total else 0.0

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes
