"""The process helpers behind `kafpy cluster`: telling a recorded process from a recycled
pid or a zombie, and finding the process that holds a file lock."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from kafpy.tools.processes import lock_holder, process_alive, process_start_time


def test_process_alive() -> None:
    me = os.getpid()
    assert process_alive(me)
    assert process_alive(me, process_start_time(me))
    start = process_start_time(me)
    assert start is not None
    assert not process_alive(me, start + 1)  # a recycled pid is another process
    assert not process_alive(None)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not process_alive(child.pid)


def test_process_alive_sees_an_exited_child_that_was_not_waited_for() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    pid = child.pid
    # not reaped: a zombie still answers kill(pid, 0)
    while process_start_time(pid) is not None and not _is_zombie(pid):
        pass
    assert not process_alive(pid)
    child.returncode = 0  # reaped by process_alive; keep Popen from waiting again


def _is_zombie(pid: int) -> bool:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2] == "Z"


def test_lock_holder_is_the_process_holding_the_flock(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    lock.touch()
    assert lock_holder(lock) is None
    with open(lock, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert lock_holder(lock) == os.getpid()
        other = tmp_path / "other"
        other.touch()
        assert lock_holder(other) is None
    assert lock_holder(lock) is None
    assert lock_holder(tmp_path / "missing") is None
