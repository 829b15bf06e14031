"""FileLock: one holder at a time, even within a process."""

from __future__ import annotations

from pathlib import Path

from kafpy.storage.file_lock import FileLock


def test_file_lock_release(tmp_path: Path) -> None:
    a, b = FileLock(tmp_path / ".lock"), FileLock(tmp_path / ".lock")
    assert a.try_lock() and a.locked
    assert not b.try_lock()
    a.release()
    assert b.try_lock()
    b.release()
