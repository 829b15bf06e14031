"""Process helpers behind `kafpy cluster`: start detached processes, tell whether a recorded
process still runs (pid plus start time, so a recycled pid is never taken for it), signal
and wait for processes, find the process holding a file lock, read the tail of an output.

Linux's /proc is read where it knows more (start times, zombies, children, locks); on other
systems the helpers fall back to what `os.kill(pid, 0)` tells.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from kafpy.common.wait import WaitTimeout, wait_until

POLL_S = 0.05


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat from the state on (field 3), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may itself hold spaces or parentheses
    return text[text.rindex(")") + 2 :].split()


def process_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), None where unknown."""
    fields = _proc_stat(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def process_alive(pid: int | None, start_time: int | None = None) -> bool:
    """Whether `pid` is a running process (not a zombie) and, when `start_time` is given
    and /proc knows it, the same process that was started then."""
    if pid is None or pid <= 0:
        return False
    try:
        # reap it if it is our own exited child, so it does not linger as a zombie
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _proc_stat(pid)
    if fields is None:
        return sys.platform != "linux"
    if fields[0] in ("Z", "X"):
        return False
    return start_time is None or len(fields) <= 19 or int(fields[19]) == start_time


def lock_holder(path: Path) -> int | None:
    """The pid of the process holding a flock on `path`, from Linux's /proc/locks (None if
    no process holds one, or elsewhere)."""
    try:
        st = path.stat()
        text = Path("/proc/locks").read_text()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in text.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 7723 fe:00:2148705 0 EOF"; "1: -> FLOCK ..." are waiters
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
            return int(fields[4])
    return None


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux; empty elsewhere)."""
    children = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _proc_stat(int(entry.name))
        if fields is not None and len(fields) > 1 and int(fields[1]) == pid:
            children.append(int(entry.name))
    return children


def send_signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_gone(processes: Iterable[tuple[int, int | None]], deadline: float) -> list[int]:
    """Wait until every (pid, start time) has exited or the deadline passes; the pids left."""
    left = list(processes)

    def gone() -> bool:
        nonlocal left
        left = [(pid, st) for pid, st in left if process_alive(pid, st)]
        return not left

    with contextlib.suppress(WaitTimeout):  # the caller decides what the pids left mean
        wait_until(gone, deadline - time.monotonic(), "the processes to exit", interval_s=POLL_S)
    return [pid for pid, _ in left]


def spawn_detached(
    command: list[str], cwd: Path, output: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "ab") as out:
        return subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            # its own session: it outlives the command that started it and ignores the
            # terminal's Ctrl-C, as a daemon does
            start_new_session=True,
        )


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return "(no output)"
    return "\n".join(text.splitlines()[-lines:])


def last_line(path: Path) -> str:
    lines = [line for line in tail(path, 50).splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"
