"""FileRecords: appends keep the size, a failed append leaves no torn bytes, and a flush
syncs only a file written since the last one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafpy.storage.file_handle_cache import FileHandleCache
from kafpy.storage.file_records import FileRecords


def test_append_grows_the_public_size_and_reads_back(tmp_path: Path) -> None:
    records = FileRecords.open(tmp_path / "0.log", cache=FileHandleCache(16))
    assert records.append(b"abc") == 3
    assert records.append(memoryview(b"defg")) == 4
    assert records.size == 7
    assert records.read(0, 100) == b"abcdefg"
    records.close()


def test_a_failed_append_cuts_the_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = FileRecords.open(tmp_path / "0.log", cache=FileHandleCache(16))
    records.append(b"abc")
    real_pwrite = os.pwrite

    def short_then_fail(fd: int, data: bytes, position: int) -> int:
        if position == 3:
            return real_pwrite(fd, bytes(data)[:2], position)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", short_then_fail)
    with pytest.raises(OSError):
        records.append(b"defg")
    monkeypatch.undo()
    assert records.size == 3
    assert os.stat(records.file).st_size == 3
    records.close()


def test_flush_skips_a_clean_file_and_does_not_reopen_it(tmp_path: Path) -> None:
    cache = FileHandleCache(16)
    records = FileRecords.open(tmp_path / "0.log", cache=cache)
    assert records.dirty  # new: an earlier process may have left unsynced bytes
    records.append(b"abc")
    records.flush()
    assert not records.dirty
    cache.evict_all()
    assert not records.is_open
    records.flush()
    assert not records.is_open  # nothing to sync: the evicted file stays closed
    records.append(b"d")
    assert records.dirty
    cache.evict_all()
    records.flush()
    assert not records.dirty
    records.close()


def test_an_existing_file_is_dirty_until_flushed(tmp_path: Path) -> None:
    (tmp_path / "0.log").write_bytes(b"written by an earlier process")
    records = FileRecords.open(
        tmp_path / "0.log", file_already_exists=True, cache=FileHandleCache(16)
    )
    assert records.dirty
    records.flush()
    assert not records.dirty
    records.truncate_to(5)
    assert records.dirty
    records.close()


# -- preallocate -----------------------------------------------------------------------------------


def preallocated(path: Path, cache: FileHandleCache, length: int = 4096) -> FileRecords:
    return FileRecords.open(path, init_file_size=length, preallocate=True, cache=cache)


def test_a_preallocated_file_is_long_on_disk_and_empty_in_data(tmp_path: Path) -> None:
    cache = FileHandleCache(16)
    records = preallocated(tmp_path / "0.log", cache)
    st = os.stat(records.file)
    assert st.st_size == 4096
    assert records.size == 0 and records.preallocated
    assert records.append(b"abc") == 3
    assert records.append(b"defg") == 4
    assert records.read(0, 4096) == b"abcdefg"  # reads end at the data, not the file
    assert os.stat(records.file).st_size == 4096
    records.close()


def test_a_reopened_preallocated_file_keeps_its_data_size(tmp_path: Path) -> None:
    cache = FileHandleCache(16)
    records = preallocated(tmp_path / "0.log", cache)
    records.append(b"abc")
    assert cache.evict_all() == 1 and not records.is_open
    records.append(b"def")  # opened again: appends go after the data, not the file end
    assert records.size == 6
    assert records.read(0, 100) == b"abcdef"
    assert os.stat(records.file).st_size == 4096
    records.close()


def test_trim_and_close_cut_a_preallocated_file_to_its_data(tmp_path: Path) -> None:
    cache = FileHandleCache(16)
    records = preallocated(tmp_path / "0.log", cache)
    records.append(b"abc")
    records.trim()
    assert os.stat(records.file).st_size == 3 and not records.preallocated
    records.append(b"de")  # appends after a trim extend the file
    assert os.stat(records.file).st_size == 5
    records.close()

    closed = preallocated(tmp_path / "1.log", cache)
    closed.append(b"xyz")
    cache.evict_all()
    closed.close()  # opened again to be trimmed
    assert os.stat(closed.file).st_size == 3


def test_close_handlers_and_a_crash_leave_the_preallocation(tmp_path: Path) -> None:
    cache = FileHandleCache(16)
    records = preallocated(tmp_path / "0.log", cache)
    records.append(b"abc")
    records.close_handlers()
    assert os.stat(records.file).st_size == 4096
    # as after a crash: the file is opened at its length, zeros included, for recovery to cut
    again = FileRecords.open(records.file, file_already_exists=True, cache=cache)
    assert again.size == 4096 and not again.preallocated
    assert again.read(0, 4) == b"abc\0"
    assert again.truncate_to(3) == 4093
    assert os.stat(again.file).st_size == 3
    again.close()


def test_truncate_to_the_data_size_still_cuts_a_preallocated_file(tmp_path: Path) -> None:
    records = preallocated(tmp_path / "0.log", FileHandleCache(16))
    records.append(b"abcdef")
    assert records.truncate_to(6) == 0
    assert os.stat(records.file).st_size == 6
    assert records.truncate_to(2) == 4
    assert os.stat(records.file).st_size == 2
    records.close()


def test_existing_files_and_preallocate_off_are_not_extended(tmp_path: Path) -> None:
    cache = FileHandleCache(16)
    off = FileRecords.open(tmp_path / "0.log", init_file_size=4096, cache=cache)
    assert os.stat(off.file).st_size == 0 and not off.preallocated
    off.append(b"abc")
    off.close()
    existing = FileRecords.open(
        off.file, file_already_exists=True, init_file_size=4096, preallocate=True, cache=cache
    )
    assert os.stat(off.file).st_size == 3 and existing.size == 3
    existing.close()


def test_a_preallocated_file_is_sparse_as_with_kafka(tmp_path: Path) -> None:
    records = preallocated(tmp_path / "0.log", FileHandleCache(16), length=1 << 20)
    st = os.stat(records.file)
    assert st.st_size == 1 << 20 and st.st_blocks * 512 < 1 << 20
    records.append(b"abc")
    assert records.read(0, 10) == b"abc"
    records.close()
    assert os.stat(records.file).st_size == 3
