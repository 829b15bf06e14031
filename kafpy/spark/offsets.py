"""Offset ranges: what one Spark task reads, how big ranges are split (minPartitions) and
how a micro-batch's end is capped (maxOffsetsPerTrigger), after Spark's
KafkaOffsetRangeCalculator and KafkaMicroBatchStream.rateLimit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

TP = tuple[str, int]


class OffsetRange(NamedTuple):
    """Offsets [start, end) of one topic partition; `start` -2 means "the earliest offset
    when the task runs" (a partition that appeared after the batch was planned)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Drop empty ranges, then, if there are fewer than `min_partitions`, split the big ones
    into about equal pieces: each range gets pieces in proportion to its size (largest
    remainders first), so there are at least `min_partitions` pieces whenever there are
    that many offsets (Spark's calculator rounds each share and may come out below)."""
    ranges = [r for r in ranges if r.end > r.start]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    shares = [r.size / total * min_partitions for r in ranges]
    parts = [max(min(int(s), r.size), 1) for s, r in zip(shares, ranges, strict=True)]
    by_remainder = sorted(
        range(len(ranges)), key=lambda i: shares[i] - int(shares[i]), reverse=True
    )
    for i in by_remainder:
        if sum(parts) >= min_partitions:
            break
        if parts[i] < ranges[i].size:
            parts[i] += 1
    result: list[OffsetRange] = []
    for r, n in zip(ranges, parts, strict=True):
        step = r.size / n
        bounds = [r.start + int(i * step) for i in range(n)] + [r.end]
        result.extend(
            OffsetRange(r.topic, r.partition, lo, hi)
            for lo, hi in zip(bounds, bounds[1:], strict=False)
            if hi > lo
        )
    return result


def rate_limit(start: Mapping[TP, int], latest: Mapping[TP, int], limit: int) -> dict[TP, int]:
    """The end offsets of a micro-batch reading at most about `limit` offsets, shared out
    in proportion to each partition's backlog (a share below one offset rounds up, as
    Spark's does, so every partition with a backlog makes progress)."""
    backlog = {tp: end - start.get(tp, end) for tp, end in latest.items()}
    total = sum(b for b in backlog.values() if b > 0)
    if total <= limit:
        return dict(latest)
    result: dict[TP, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        size = backlog[tp]
        if size <= 0:
            result[tp] = end
            continue
        share = limit * (size / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        result[tp] = min(end, begin + step)
    return result
