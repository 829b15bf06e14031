"""Offset ranges: minPartitions splitting and maxOffsetsPerTrigger rate limiting."""

from __future__ import annotations

from kafpy.spark.offsets import OffsetRange, rate_limit, split_ranges


def test_split_keeps_ranges_when_enough_and_drops_empty_ones() -> None:
    ranges = [OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 5)]
    assert split_ranges(ranges, None) == [OffsetRange("t", 0, 0, 10)]
    assert split_ranges(ranges, 1) == [OffsetRange("t", 0, 0, 10)]


def test_split_in_proportion_covering_every_offset_once() -> None:
    ranges = [OffsetRange("t", 0, 0, 300), OffsetRange("t", 1, 100, 200)]
    parts = split_ranges(ranges, 8)
    by_partition = {
        0: [r for r in parts if r.partition == 0],
        1: [r for r in parts if r.partition == 1],
    }
    assert len(by_partition[0]) == 6 and len(by_partition[1]) == 2
    for p, (start, end) in {0: (0, 300), 1: (100, 200)}.items():
        covered = [o for r in by_partition[p] for o in range(r.start, r.end)]
        assert covered == list(range(start, end))


def test_split_never_makes_more_pieces_than_offsets() -> None:
    assert split_ranges([OffsetRange("t", 0, 0, 2)], 10) == [
        OffsetRange("t", 0, 0, 1),
        OffsetRange("t", 0, 1, 2),
    ]


def test_rate_limit_shares_by_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 50}
    latest = {("t", 0): 300, ("t", 1): 100, ("t", 2): 50}
    assert rate_limit(start, latest, 1000) == latest
    assert rate_limit(start, latest, 100) == {("t", 0): 75, ("t", 1): 25, ("t", 2): 50}


def test_rate_limit_small_shares_round_up() -> None:
    start = {("t", 0): 0, ("t", 1): 0}
    latest = {("t", 0): 1000, ("t", 1): 1}
    assert rate_limit(start, latest, 10) == {("t", 0): 9, ("t", 1): 1}


def test_split_reaches_min_partitions_despite_rounding() -> None:
    ranges = [OffsetRange("t", p, 0, 20) for p in range(3)]
    parts = split_ranges(ranges, 7)
    assert len(parts) == 7
    assert sorted(o for r in parts for o in range(r.start, r.end)) == sorted(list(range(20)) * 3)
