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
