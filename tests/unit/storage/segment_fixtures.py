"""Helpers for the log-layer tests: batches, records and a MockTime/MockScheduler pair."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kafpy.common.scheduler import MockScheduler
from kafpy.common.time import MockTime
from kafpy.records import MemoryRecords, build_batch
from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig

T0 = 1_600_000_000_000


def batch(
    values: Sequence[bytes] = (b"v",), base_offset: int = 0, timestamp: int = T0, **kw: Any
) -> bytes:
    """One uncompressed batch of `values` (keys k0, k1, ...)."""
    return build_batch(
        [(b"k%d" % i, v) for i, v in enumerate(values)],
        base_offset=base_offset,
        timestamp=timestamp,
        **kw,
    )


def records(*batches: bytes) -> MemoryRecords:
    """Writable MemoryRecords over the concatenated batches (the leader patches them in place)."""
    return MemoryRecords(bytearray(b"".join(batches)))


class Clock:
    """A MockTime with its MockScheduler."""

    def __init__(self, start: int = T0) -> None:
        self.time = MockTime(start)
        self.scheduler = MockScheduler(self.time)


def open_log(
    dir: Path,
    clock: Clock,
    config: LogConfig | None = None,
    recovery_point: int = 0,
    log_start_offset: int = 0,
    had_clean_shutdown: bool = True,
) -> Log:
    return Log(
        dir,
        config or LogConfig(),
        log_start_offset,
        recovery_point,
        clock.scheduler,
        clock.time,
        had_clean_shutdown,
    )


def offsets_in(data: MemoryRecords) -> list[int]:
    """Every record offset in `data` (complete batches only)."""
    out: list[int] = []
    for b in data.batches_allow_partial():
        out.extend(range(b.base_offset, b.last_offset + 1))
    return out


SMALL = LogConfig(
    segment_bytes=1000,
    index_interval_bytes=100,
    segment_index_bytes=1024,
    file_delete_delay_ms=1000,
)


def fill(log: Log, n: int, per_batch: int = 2, ts: int | None = None) -> list[int]:
    """Append n batches; returns their first offsets."""
    firsts = []
    for i in range(n):
        info = log.append_as_leader(
            records(
                batch(
                    [b"value-%d-%d" % (i, j) for j in range(per_batch)],
                    timestamp=T0 if ts is None else ts,
                )
            ),
            0,
        )
        firsts.append(info.first_offset)
    return firsts


def read_all(log: Log, start: int | None = None) -> list[int]:
    offset = log.log_start_offset if start is None else start
    out: list[int] = []
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        got = offsets_in(data)
        if not got:
            break
        out.extend(o for o in got if o >= offset)
        offset = got[-1] + 1
    return out


def files(dir: Path) -> list[str]:
    return sorted(p.name for p in dir.iterdir())


@pytest.fixture
def clock() -> Clock:
    """A mock clock for a test's log (imported by the test modules that use it)."""
    return Clock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """The directory of partition t-0 in the test's tmp_path."""
    return tmp_path / "t-0"
