"""TimeIndex: Kafka's `.timeindex` format, monotonic appends, lookups, truncation, reopening."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafpy.storage.abstract_index import CorruptIndexError, InvalidOffsetError
from kafpy.storage.time_index import TimeIndex, TimestampOffset


def filled(path: Path, base: int = 100, n: int = 10) -> TimeIndex:
    idx = TimeIndex(path, base, 12 * 30)
    for i in range(n):
        idx.maybe_append(1000 + 100 * i, base + 10 * i)
    return idx


def test_entries_are_timestamp_and_relative_offset_big_endian(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "a.timeindex", 100, 120)
    idx.maybe_append(1_600_000_000_000, 105)
    idx.close()
    assert (tmp_path / "a.timeindex").read_bytes() == struct.pack(">qi", 1_600_000_000_000, 5)


def test_only_larger_timestamps_are_appended(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "a.timeindex", 0, 120)
    idx.maybe_append(10, 1)
    idx.maybe_append(10, 2)  # same timestamp: skipped
    assert idx.entries == 1
    idx.maybe_append(11, 3)
    assert idx.last_entry() == TimestampOffset(11, 3)
    with pytest.raises(InvalidOffsetError, match="timestamp"):
        idx.maybe_append(5, 4)
    with pytest.raises(InvalidOffsetError, match="offset"):
        idx.maybe_append(20, 2)


def test_lookup(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.timeindex")
    assert idx.lookup(999) == TimestampOffset(-1, 100)
    assert idx.lookup(1000) == TimestampOffset(1000, 100)
    assert idx.lookup(1250) == TimestampOffset(1200, 120)
    assert idx.lookup(99_999) == TimestampOffset(1900, 190)


def test_is_full_keeps_one_slot_for_the_final_entry(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "a.timeindex", 0, 36)
    idx.maybe_append(1, 1)
    idx.maybe_append(2, 2)
    assert idx.is_full()
    with pytest.raises(InvalidOffsetError, match="full"):
        idx.maybe_append(3, 3)
    idx.maybe_append(3, 3, skip_full_check=True)
    assert idx.entries == 3


def test_truncate_to_by_offset(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.timeindex")
    idx.truncate_to(150)
    assert idx.entries == 5
    assert idx.last_entry() == TimestampOffset(1400, 140)
    idx.truncate_to(145)
    assert idx.entries == 5
    idx.truncate_to(0)
    assert idx.entries == 0
    assert idx.last_entry() == TimestampOffset(-1, 100)


def test_trim_and_reopen(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.timeindex", n=4)
    idx.close()
    assert (tmp_path / "a.timeindex").stat().st_size == 48
    again = TimeIndex(tmp_path / "a.timeindex", 100, 360)
    assert again.entries == 4
    assert again.last_entry() == TimestampOffset(1300, 130)


def test_reopen_preallocated_after_crash(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.timeindex", n=6)
    idx.flush()
    idx.close_handler()
    again = TimeIndex(tmp_path / "a.timeindex", 100, 360)
    assert again.entries == 6
    again.sanity_check()


def test_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    path.write_bytes(struct.pack(">qi", 500, 1) + struct.pack(">qi", 100, 2))
    with pytest.raises(CorruptIndexError, match="last timestamp"):
        TimeIndex(path, 0).sanity_check()
    path.write_bytes(struct.pack(">qi", 500, -1))
    with pytest.raises(CorruptIndexError, match="last offset"):
        TimeIndex(path, 10).sanity_check()
    path.write_bytes(b"\x00" * 13)
    with pytest.raises(CorruptIndexError, match="multiple of 12"):
        TimeIndex(path, 10).sanity_check()
