"""OffsetIndex: Kafka's `.index` format, lookups, truncation, trimming and reopening."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from kafpy.storage.abstract_index import (
    CorruptIndexError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from kafpy.storage.offset_index import OffsetIndex, OffsetPosition
from tests.fixtures.file_descriptors import open_paths


def filled(path: Path, base: int = 100, n: int = 10, max_size: int = 800) -> OffsetIndex:
    idx = OffsetIndex(path, base, max_size)
    for i in range(n):
        idx.append(base + 10 * i + 5, 1000 * i)
    return idx


def test_new_index_is_preallocated_rounded_down_to_entries(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 803)
    assert (tmp_path / "0.index").stat().st_size == 800
    assert idx.max_entries == 100
    assert idx.entries == 0
    assert idx.lookup(5) == OffsetPosition(0, 0)


def test_entries_are_relative_offset_and_position_big_endian(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 100, 80)
    idx.append(105, 4096)
    idx.append(300, 9000)
    idx.close()
    assert (tmp_path / "a.index").read_bytes() == struct.pack(">iiii", 5, 4096, 200, 9000)


def test_lookup_finds_largest_lower_bound(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index")
    assert idx.lookup(99) == OffsetPosition(100, 0)  # before every entry: the segment start
    assert idx.lookup(104) == OffsetPosition(100, 0)
    assert idx.lookup(105) == OffsetPosition(105, 0)
    assert idx.lookup(137) == OffsetPosition(135, 3000)
    assert idx.lookup(10_000) == OffsetPosition(195, 9000)
    for target in range(100, 200):
        expected = max((o for o in range(105, 200, 10) if o <= target), default=None)
        got = idx.lookup(target)
        assert got.offset == (expected if expected is not None else 100)


def test_lookup_uses_warm_section_and_cold_section(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "big.index", 0, 8 * 5000)
    for i in range(5000):
        idx.append(2 * i + 1, 10 * i)
    for target in (0, 1, 2, 3, 501, 4000, 8000, 9997, 9999, 20000):
        slot = min((target - 1) // 2, 4999)
        expected = OffsetPosition(0, 0) if target < 1 else OffsetPosition(2 * slot + 1, 10 * slot)
        assert idx.lookup(target) == expected


def test_fetch_upper_bound_offset(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index")
    assert idx.fetch_upper_bound_offset(OffsetPosition(115, 1000), 2500) == OffsetPosition(
        145, 4000
    )
    assert idx.fetch_upper_bound_offset(OffsetPosition(115, 1000), 2000) == OffsetPosition(
        135, 3000
    )
    assert idx.fetch_upper_bound_offset(OffsetPosition(195, 9000), 1) is None


def test_append_rejects_non_increasing_offsets_and_full_index(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 0, 16)
    idx.append(5, 0)
    with pytest.raises(InvalidOffsetError, match="no larger than the last offset"):
        idx.append(5, 10)
    idx.append(6, 10)
    assert idx.is_full()
    with pytest.raises(InvalidOffsetError, match="full index"):
        idx.append(7, 20)


def test_append_rejects_offsets_that_overflow_int32(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 10, 80)
    with pytest.raises(IndexOffsetOverflowError):
        idx.append(10 + 2**31, 0)
    assert not idx.can_append_offset(9)
    assert idx.can_append_offset(10 + 2**31 - 1)


@pytest.mark.parametrize(
    ("target", "entries", "last"),
    [(90, 0, 100), (105, 0, 100), (106, 1, 105), (135, 3, 125), (500, 10, 195)],
)
def test_truncate_to_removes_entries_at_or_after_offset(
    tmp_path: Path, target: int, entries: int, last: int
) -> None:
    idx = filled(tmp_path / "a.index")
    idx.truncate_to(target)
    assert idx.entries == entries
    assert idx.last_offset == last
    idx.append(1000, 50_000)  # appending after truncation works
    assert idx.lookup(1000) == OffsetPosition(1000, 50_000)


def test_trim_then_reopen_keeps_entries(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index")
    idx.trim_to_valid_size()
    assert (tmp_path / "a.index").stat().st_size == 80
    idx.close()
    again = OffsetIndex(tmp_path / "a.index", 100, 800)
    assert again.entries == 10
    assert again.max_entries == 10
    assert again.is_full()
    assert again.lookup(137) == OffsetPosition(135, 3000)
    assert again.resize(800)
    assert again.max_entries == 100 and not again.is_full()
    again.append(300, 20_000)
    assert again.entries == 11


def test_reopen_of_a_preallocated_index_counts_non_zero_entries(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index", n=7)
    idx.flush()
    idx.close_handler()  # as after a crash: not trimmed
    assert (tmp_path / "a.index").stat().st_size == 800
    again = OffsetIndex(tmp_path / "a.index", 100, 800)
    assert again.entries == 7
    assert again.last_offset == 165
    again.sanity_check()


def test_truncation_zeroes_dropped_entries_so_a_crash_cannot_resurrect_them(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index")
    idx.truncate_to(130)
    idx.flush()
    idx.close_handler()
    assert OffsetIndex(tmp_path / "a.index", 100, 800).entries == 3


def test_sanity_check_detects_corruption(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    path.write_bytes(struct.pack(">ii", 5, 0) + struct.pack(">ii", -3, 100))
    with pytest.raises(CorruptIndexError, match="less than the base offset"):
        OffsetIndex(path, 100).sanity_check()
    path.write_bytes(struct.pack(">ii", 5, 0) + b"\x01\x02\x03")
    with pytest.raises(CorruptIndexError, match="multiple of 8"):
        OffsetIndex(path, 100).sanity_check()


def test_empty_existing_file_and_reset(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    path.write_bytes(b"")
    idx = OffsetIndex(path, 0, 80)
    assert idx.entries == 0 and idx.max_entries == 0 and idx.is_full()
    idx.reset()
    assert idx.max_entries == 10
    idx.append(1, 2)
    assert idx.entry(0) == OffsetPosition(1, 2)
    with pytest.raises(IndexError):
        idx.entry(1)


def test_delete_and_rename(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index")
    idx.rename_to(tmp_path / "a.index.deleted")
    assert idx.file == tmp_path / "a.index.deleted" and idx.file.exists()
    assert idx.lookup(137) == OffsetPosition(135, 3000)
    assert idx.delete_if_exists()
    assert not idx.file.exists()
    assert not idx.delete_if_exists()


def test_a_full_disk_is_an_os_error_not_a_sigbus(small_tmpfs: Any) -> None:
    """Entries stored through a mapping into a sparse file's hole on a full disk would kill
    the process (SIGBUS); entries reach the file with pwrite, so a full disk fails the
    flush cleanly and the entries stay searchable in memory."""
    import errno as errno_

    mount = small_tmpfs(1024 * 1024)
    index = OffsetIndex(mount / "00000000000000000000.index", 0, max_index_size=512 * 1024)
    try:
        index.append(0, 0)
        index.flush()  # the first page of the index exists
        with open(mount / "filler", "wb", buffering=0) as filler:  # then the disk fills up
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        for i in range(1, 512 * 1024 // 8):
            index.append(i, i * 10)
        with pytest.raises(OSError) as e:
            index.flush()
        assert e.value.errno == errno_.ENOSPC
        assert index.lookup(1000) == (1000, 10000)
        with pytest.raises(OSError):  # still full: the same clean error
            index.flush()
        assert index.entries == 512 * 1024 // 8
    finally:
        index.close_handler()


def test_an_index_holds_no_descriptor(tmp_path: Path) -> None:
    indexes = [filled(tmp_path / f"{i}.index") for i in range(20)]
    for idx in indexes:
        idx.lookup(150)
        idx.flush()
    reopened = [OffsetIndex(idx.file, 100, 800) for idx in indexes]
    assert [idx.lookup(150) for idx in reopened] == [OffsetPosition(145, 4000)] * 20
    assert open_paths(tmp_path) == []


def test_entries_reach_the_file_on_flush_and_a_crash_keeps_a_valid_prefix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.index"
    idx = filled(path, n=4)
    assert path.read_bytes() == bytes(800)  # appended to the copy in memory only
    idx.flush()
    assert path.read_bytes()[:32] == b"".join(
        struct.pack(">ii", 10 * i + 5, 1000 * i) for i in range(4)
    )
    idx.append(200, 9000)
    idx.close_handler()  # a crash before the next flush: the last entry is lost
    again = OffsetIndex(path, 100, 800)
    assert again.entries == 4
    assert again.last_entry() == OffsetPosition(135, 3000)


def test_a_sealed_index_gives_up_its_copy_and_reads_it_back(tmp_path: Path) -> None:
    idx = filled(tmp_path / "a.index")
    idx.release_copy()
    assert idx._buf is not None  # it takes more entries: the copy is all there is of them
    idx.trim_to_valid_size()
    idx.release_copy()
    assert idx._buf is None
    assert idx.lookup(150) == OffsetPosition(145, 4000)
    assert idx.entry(9) == OffsetPosition(195, 9000)
