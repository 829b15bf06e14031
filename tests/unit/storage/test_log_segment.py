"""LogSegment: appends with sparse index entries, reads, recovery, truncation, roll checks."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kafpy.common.time import MockTime
from kafpy.records import MemoryRecords, RecordBatch
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_segment import LogSegment, log_file_name, offset_index_file_name
from kafpy.storage.offset_index import OffsetPosition
from kafpy.storage.time_index import TimestampOffset

from .segment_fixtures import T0, batch, offsets_in

CONFIG = LogConfig(index_interval_bytes=1, segment_index_bytes=4096)


def open_segment(
    dir: Path, base: int = 40, config: LogConfig = CONFIG, exists: bool = False
) -> LogSegment:
    return LogSegment.open(dir, base, config, MockTime(T0), file_already_exists=exists)


def append_batch(seg: LogSegment, base_offset: int, n: int = 2, ts: int = T0) -> bytes:
    data = batch([b"value-%d" % i for i in range(n)], base_offset=base_offset, timestamp=ts)
    seg.append(base_offset + n - 1, ts, base_offset + n - 1, MemoryRecords(data))
    return data


def test_files_have_kafka_names(tmp_path: Path) -> None:
    open_segment(tmp_path, 42)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000042.index",
        "00000000000000000042.log",
        "00000000000000000042.timeindex",
    ]


def test_append_writes_the_bytes_as_given_and_indexes_sparsely(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    written = b"".join(append_batch(seg, 40 + 2 * i, ts=T0 + i) for i in range(5))
    assert log_file_name(tmp_path, 40).read_bytes() == written
    # the first append never gets an entry (0 bytes since the last one); then one per append
    size = len(written) // 5
    assert [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)] == [
        OffsetPosition(40 + 2 * i + 1, size * i) for i in range(1, 5)
    ]
    assert seg.time_index.last_entry() == TimestampOffset(T0 + 4, 49)
    assert seg.max_timestamp_so_far == T0 + 4


def test_index_interval_bytes_spaces_entries(tmp_path: Path) -> None:
    seg = open_segment(
        tmp_path, config=LogConfig(index_interval_bytes=300, segment_index_bytes=4096)
    )
    sizes = [len(append_batch(seg, 40 + 2 * i)) for i in range(20)]
    # an entry goes in once more than 300 bytes were written since the previous one
    expected, since = [], 0
    for i, size in enumerate(sizes):
        if since > 300:
            expected.append(OffsetPosition(40 + 2 * i + 1, sum(sizes[:i])))
            since = 0
        since += size
    assert 0 < len(expected) < 20
    assert [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)] == expected


def test_read_returns_stored_bytes_from_the_batch_holding_the_offset(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    batches = [append_batch(seg, 40 + 3 * i, n=3) for i in range(6)]
    info = seg.read(47, None, max_size=10_000)
    assert info is not None
    assert bytes(info.records.buffer()) == b"".join(batches[2:])
    assert info.fetch_offset_metadata.message_offset == 47
    assert info.fetch_offset_metadata.relative_position_in_segment == 2 * len(batches[0])
    assert seg.read(58, None, 100) is None  # past the last batch


def test_read_size_limits_and_min_one_message(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    batches = [append_batch(seg, 40 + 3 * i, n=3) for i in range(4)]
    size = len(batches[0])
    info = seg.read(40, None, max_size=size + 5)
    assert info is not None and info.records.size_in_bytes == size + 5
    assert offsets_in(info.records) == [40, 41, 42]  # the partial second batch is dropped
    small = seg.read(40, None, max_size=10)
    assert small is not None and small.records.size_in_bytes == 10 and small.first_entry_incomplete
    whole = seg.read(40, None, max_size=10, min_one_message=True)
    assert whole is not None and whole.records.size_in_bytes == size
    bounded = seg.read(40, None, max_size=10_000, max_position=2 * size)
    assert bounded is not None and offsets_in(bounded.records) == list(range(40, 46))


def test_read_stops_before_max_offset(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    for i in range(4):
        append_batch(seg, 40 + 3 * i, n=3)
    info = seg.read(40, 46, max_size=10_000)
    assert info is not None and offsets_in(info.records) == list(range(40, 46))
    assert seg.read(44, 43, 10_000).records.size_in_bytes == 0  # type: ignore[union-attr]


def test_translate_offset_and_read_next_offset(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    assert seg.read_next_offset() == 40
    sizes = [len(append_batch(seg, 40 + 3 * i, n=3)) for i in range(5)]
    pos = seg.translate_offset(47)
    assert (
        pos is not None
        and pos.offset == 48
        and pos.position == 2 * sizes[0]
        and pos.size == sizes[0]
    )
    assert seg.translate_offset(55) is None
    assert seg.read_next_offset() == 55


def test_find_offset_by_timestamp(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    for i in range(5):
        append_batch(seg, 40 + 2 * i, ts=T0 + 100 * i)
    assert seg.find_offset_by_timestamp(T0 + 150) == TimestampOffset(T0 + 200, 44)
    assert seg.find_offset_by_timestamp(T0 - 5) == TimestampOffset(T0, 40)
    assert seg.find_offset_by_timestamp(T0 + 100, starting_offset=43) == TimestampOffset(
        T0 + 100, 43
    )
    assert seg.find_offset_by_timestamp(T0 + 10_000) is None


def test_recover_rebuilds_identical_indexes(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    for i in range(20):
        append_batch(seg, 40 + 2 * i, ts=T0 + i)
    before = [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)]
    time_before = [seg.time_index.entry(i) for i in range(seg.time_index.entries)]
    assert seg.recover() == 0
    seg.resize_indexes(4096)
    assert [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)] == before
    assert [seg.time_index.entry(i) for i in range(seg.time_index.entries)] == time_before
    assert seg.read_next_offset() == 80


@pytest.mark.parametrize("damage", ["torn", "garbage", "crc", "magic", "zero-length"])
def test_recover_truncates_at_the_first_bad_batch(tmp_path: Path, damage: str) -> None:
    seg = open_segment(tmp_path)
    good = b"".join(append_batch(seg, 40 + 2 * i) for i in range(5))
    tail = append_batch(seg, 50)
    seg.close()
    path = log_file_name(tmp_path, 40)
    raw = bytearray(path.read_bytes())
    if damage == "torn":
        raw = raw[: len(good) + len(tail) // 2]
    elif damage == "garbage":
        raw = raw[: len(good)] + os.urandom(200)
    elif damage == "crc":
        raw[len(good) + 70] ^= 0xFF
    elif damage == "magic":
        raw[len(good) + 16] = 1
    else:
        raw[len(good) + 8 : len(good) + 12] = b"\x00\x00\x00\x00"
    path.write_bytes(bytes(raw))
    seg = open_segment(tmp_path, exists=True)
    truncated = seg.recover()
    assert truncated == len(raw) - len(good)
    assert path.read_bytes() == good
    assert seg.read_next_offset() == 50
    info = seg.read(40, None, 1 << 20)
    assert info is not None and offsets_in(info.records) == list(range(40, 50))


def test_recover_rejects_offsets_going_backwards(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    good = append_batch(seg, 40) + append_batch(seg, 42)
    seg.log.append(batch([b"x"], base_offset=41))  # valid CRC, but offsets go backwards
    assert seg.recover() > 0
    assert log_file_name(tmp_path, 40).read_bytes() == good


def test_truncate_to_removes_whole_batches_and_index_entries(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    sizes = [len(append_batch(seg, 40 + 3 * i, n=3, ts=T0 + i)) for i in range(6)]
    removed = seg.truncate_to(47)  # 47 is inside the batch [46, 48]: it goes whole
    assert removed == 4 * sizes[0]
    assert seg.size == 2 * sizes[0]
    assert seg.read_next_offset() == 46
    assert seg.offset_index.last_offset < 47
    assert seg.time_index.last_entry().offset < 47
    assert seg.max_timestamp_so_far == T0 + 1
    append_batch(seg, 46, n=3, ts=T0 + 50)
    assert seg.read_next_offset() == 49
    assert seg.truncate_to(40) == 3 * sizes[0] and seg.size == 0


def test_should_roll(tmp_path: Path) -> None:
    time = MockTime(T0)
    seg = LogSegment.open(
        tmp_path, 0, LogConfig(segment_index_bytes=4096, segment_jitter_ms=0), time
    )
    # empty: never by time, by size only if the append itself is too big
    assert not seg.should_roll(1000, 10, 100, T0 + 10**9, 0, T0 + 10**9)
    assert seg.should_roll(1000, 10**9, 1001, T0, 0, T0)
    size = len(append_batch(seg, 0, ts=T0))
    assert seg.should_roll(size + 50, 10**9, 51, T0, 5, T0)
    assert not seg.should_roll(size + 50, 10**9, 50, T0, 5, T0)
    # time: against the first batch's timestamp, by the new batch's timestamp
    assert not seg.should_roll(10**9, 1000, 10, T0 + 1000, 5, T0)
    assert seg.should_roll(10**9, 1000, 10, T0 + 1001, 5, T0)
    # relative offset overflow
    assert seg.should_roll(10**9, 10**9, 10, T0, 2**31, T0)


def test_should_roll_uses_jitter_and_creation_time_without_timestamps(tmp_path: Path) -> None:
    time = MockTime(T0)
    seg = LogSegment.open(tmp_path, 0, LogConfig(segment_index_bytes=4096), time)
    seg.roll_jitter_ms = 300
    data = batch([b"v"], timestamp=-1)
    seg.append(0, -1, 0, MemoryRecords(data))
    time.advance(701)
    assert seg.should_roll(10**9, 1000, 10, -1, 1, time.milliseconds())
    assert not seg.should_roll(10**9, 1001 + 300, 10, -1, 1, time.milliseconds())


def test_should_roll_when_an_index_is_full(tmp_path: Path) -> None:
    seg = LogSegment.open(
        tmp_path, 0, LogConfig(segment_index_bytes=24, index_interval_bytes=1), MockTime(T0)
    )
    append_batch(seg, 0)
    append_batch(seg, 2)
    assert seg.time_index.is_full()  # 2 slots, one kept for the final entry
    assert seg.should_roll(10**9, 10**9, 10, T0, 4, T0)


def test_become_inactive_trims_and_close_reopen(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    for i in range(4):
        append_batch(seg, 40 + 2 * i, ts=T0 + i)
    seg.on_become_inactive_segment()
    assert offset_index_file_name(tmp_path, 40).stat().st_size == 8 * seg.offset_index.entries
    seg.close()
    again = open_segment(tmp_path, exists=True)
    assert again.size == seg.size
    assert again.max_timestamp_so_far == T0 + 3
    assert again.read_next_offset() == 48


def test_change_file_suffixes_and_delete(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    append_batch(seg, 40)
    seg.change_file_suffixes("", ".deleted")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000040.index.deleted",
        "00000000000000000040.log.deleted",
        "00000000000000000040.timeindex.deleted",
    ]
    info = seg.read(40, None, 1000)  # still readable through the open descriptors
    assert info is not None and offsets_in(info.records) == [40, 41]
    seg.delete_if_exists()
    assert list(tmp_path.iterdir()) == []


def test_last_modified_and_largest_timestamp(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    seg.last_modified = T0 - 5000
    assert seg.last_modified == T0 - 5000
    assert seg.largest_timestamp == T0 - 5000  # no batch timestamps yet: the file time
    append_batch(seg, 40, ts=T0 + 7)
    assert seg.largest_timestamp == T0 + 7


def test_flush_is_safe_after_close(tmp_path: Path) -> None:
    seg = open_segment(tmp_path)
    append_batch(seg, 40)
    seg.flush()
    seg.close()
    seg.flush()
    rb = RecordBatch(log_file_name(tmp_path, 40).read_bytes())
    assert rb.is_valid() and rb.base_offset == 40


def test_an_append_that_fails_part_way_leaves_the_segment_as_it_was(
    small_tmpfs: Callable[[int], Path],
) -> None:
    # A real filesystem that fills up: the write of the big batch stops part-way (ENOSPC).
    mount = small_tmpfs(64 * 1024)
    seg = open_segment(mount)
    first = append_batch(seg, 40)
    for i in range(3):  # fill the index pages while there is room
        append_batch(seg, 42 + 2 * i)
    size_before = seg.size
    log_before = log_file_name(mount, 40).read_bytes()
    index_entries = seg.offset_index.entries
    big = batch([os.urandom(100 * 1024)], base_offset=48)
    with pytest.raises(OSError) as failure:
        seg.append(48, T0, 48, MemoryRecords(big))
    assert failure.value.errno == errno.ENOSPC
    assert seg.size == size_before
    assert log_file_name(mount, 40).read_bytes() == log_before
    assert seg.offset_index.entries == index_entries
    # the segment goes on as if the failed append never happened
    after = append_batch(seg, 48)
    assert log_file_name(mount, 40).read_bytes() == log_before + after
    assert log_before.startswith(first)
    assert seg.recover() == 0
    assert seg.read_next_offset() == 50


def scanned(seg: LogSegment, offset: int, start: int = 0) -> object:
    """translate_offset the long way: the offset index, then a scan of batch headers."""
    return seg.log.search_for_offset_with_size(
        offset, max(seg.offset_index.lookup(offset).position, start)
    )


def test_translate_offset_from_what_the_appends_noted_agrees_with_a_scan(tmp_path: Path) -> None:
    sparse = LogConfig(index_interval_bytes=4096, segment_index_bytes=4096)
    seg = open_segment(tmp_path, config=sparse)
    for i in range(300):  # more than the segment remembers: the oldest are scanned for
        append_batch(seg, 40 + 3 * i, n=3)
    end = 40 + 3 * 300
    for offset in range(40, end + 5):
        for start in (0, seg.size // 2):
            assert seg.translate_offset(offset, start) == scanned(seg, offset, start), offset
    assert seg.translate_offset(end) is None
    info = seg.read(end - 3, end, 10_000)  # a consumer one batch behind
    assert info is not None and offsets_in(info.records) == [end - 3, end - 2, end - 1]
    # cut back, the segment forgets what it noted past the cut, and learns the new appends
    seg.truncate_to(end - 30)
    assert seg.translate_offset(end - 30) is None and seg.translate_offset(end - 3) is None
    append_batch(seg, end - 30, n=5)
    for offset in range(end - 40, end):
        assert seg.translate_offset(offset) == scanned(seg, offset), offset
    seg.close()
    again = open_segment(tmp_path, config=sparse, exists=True)  # nothing noted: scans
    for offset in range(end - 40, end):
        assert again.translate_offset(offset) == scanned(again, offset), offset


# -- preallocate -----------------------------------------------------------------------------------

PREALLOCATED = LogConfig(
    index_interval_bytes=1, segment_index_bytes=4096, segment_bytes=64 * 1024, preallocate=True
)


def test_a_preallocated_segment_is_trimmed_when_it_becomes_inactive(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 40, PREALLOCATED, MockTime(T0), preallocate=True)
    path = log_file_name(tmp_path, 40)
    assert path.stat().st_size == 64 * 1024
    data = append_batch(seg, 40) + append_batch(seg, 42)
    assert seg.size == len(data)
    info = seg.read(40, None, 1 << 20)
    assert info is not None and offsets_in(info.records) == [40, 41, 42, 43]
    seg.on_become_inactive_segment()
    assert path.read_bytes() == data
    seg.close()


def test_a_preallocated_segment_is_trimmed_on_close(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 40, PREALLOCATED, MockTime(T0), preallocate=True)
    data = append_batch(seg, 40)
    seg.close()
    assert log_file_name(tmp_path, 40).read_bytes() == data


def test_recover_ends_a_preallocated_file_at_its_zeros(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 40, PREALLOCATED, MockTime(T0), preallocate=True)
    data = append_batch(seg, 40) + append_batch(seg, 42, n=3)
    seg.close_handlers()  # a crash: the file keeps its preallocated length
    path = log_file_name(tmp_path, 40)
    assert path.stat().st_size == 64 * 1024
    again = open_segment(tmp_path, 40, PREALLOCATED, exists=True)
    assert again.recover() == 64 * 1024 - len(data)
    assert path.read_bytes() == data
    assert again.read_next_offset() == 45
    again.close()


def test_preallocate_is_only_for_new_segments_of_a_log_that_asks(tmp_path: Path) -> None:
    # the log's config says no: nothing is preallocated whatever the caller passes
    seg = LogSegment.open(tmp_path, 0, CONFIG, MockTime(T0), preallocate=True)
    assert log_file_name(tmp_path, 0).stat().st_size == 0
    seg.close()
    # the config says yes but the caller (the cleaner, the loader) opens without it
    seg = LogSegment.open(tmp_path, 10, PREALLOCATED, MockTime(T0))
    assert log_file_name(tmp_path, 10).stat().st_size == 0
    seg.close()
