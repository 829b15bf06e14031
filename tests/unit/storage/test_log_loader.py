"""LogLoader: loading a log's directory, leftover files, index rebuilds and recovery."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafpy.records import RecordBatch
from kafpy.storage.log import (
    Log,
    log_file_name,
    offset_index_file_name,
    time_index_file_name,
)
from kafpy.storage.log_config import LogConfig

from .segment_fixtures import (
    SMALL,
    T0,
    Clock,
    batch,
    files,
    fill,
    offsets_in,
    open_log,
    read_all,
    records,
)

# -- recovery -----------------------------------------------------------------------


def crashed_log(
    log_dir: Path, clock: Clock, n: int = 30
) -> tuple[list[int], list[tuple[int, int]]]:
    """Fill a log and leave it as a crash would: indexes untrimmed, no close."""
    log = open_log(log_dir, clock, SMALL)
    fill(log, n)
    segments = [(s.base_offset, s.size) for s in log.log_segments()]
    for s in log.log_segments():
        s.flush()
        s.close_handlers()
    return read_all_offsets(n), segments


def read_all_offsets(n: int) -> list[int]:
    return list(range(2 * n))


def reopen_unclean(log_dir: Path, clock: Clock, recovery_point: int = 0) -> Log:
    return open_log(log_dir, clock, SMALL, recovery_point=recovery_point, had_clean_shutdown=False)


def test_unclean_reopen_without_damage_keeps_everything(log_dir: Path, clock: Clock) -> None:
    expected, segments = crashed_log(log_dir, clock)
    log = reopen_unclean(log_dir, clock)
    assert read_all(log) == expected
    assert [(s.base_offset, s.size) for s in log.log_segments()] == segments
    assert log.recovery_point == log.log_end_offset == 60


def test_recovery_cuts_a_torn_batch_in_the_active_segment(log_dir: Path, clock: Clock) -> None:
    expected, segments = crashed_log(log_dir, clock)
    last_base, last_size = segments[-1]
    path = log_file_name(log_dir, last_base)
    with open(path, "r+b") as f:
        f.truncate(last_size - 10)
    log = reopen_unclean(log_dir, clock)
    assert read_all(log) == expected[:-2]
    assert log.log_end_offset == 58
    assert fill(log, 1) == [58]


def test_recovery_truncates_garbage_and_deletes_later_segments(log_dir: Path, clock: Clock) -> None:
    expected, segments = crashed_log(log_dir, clock)
    mid_base, mid_size = segments[1]
    path = log_file_name(log_dir, mid_base)
    raw = bytearray(path.read_bytes())
    # corrupt the third batch of the second segment: everything from it on must go
    pos = 0
    for _ in range(2):
        pos += RecordBatch(raw, pos).size_in_bytes
    cut_offset = RecordBatch(raw, pos).base_offset
    raw[pos + 70] ^= 0x55
    path.write_bytes(bytes(raw))
    log = reopen_unclean(log_dir, clock)
    assert read_all(log) == list(range(cut_offset))
    assert log.num_segments == 2 and log.log_end_offset == cut_offset
    clock.time.advance(1000)
    assert not any(f.startswith(f"{segments[2][0]:020d}") for f in files(log_dir))
    assert fill(log, 1) == [cut_offset]


def test_recovery_appended_garbage(log_dir: Path, clock: Clock) -> None:
    expected, segments = crashed_log(log_dir, clock)
    with open(log_file_name(log_dir, segments[-1][0]), "ab") as f:
        f.write(os.urandom(300))
    log = reopen_unclean(log_dir, clock)
    assert read_all(log) == expected


def test_recovery_starts_at_the_recovery_point(log_dir: Path, clock: Clock) -> None:
    expected, segments = crashed_log(log_dir, clock)
    # damage below the recovery point is not looked at (Kafka trusts flushed data)
    first = log_file_name(log_dir, segments[0][0])
    with open(first, "ab") as f:
        f.write(b"\x00" * 5)
    log = reopen_unclean(log_dir, clock, recovery_point=segments[-1][0])
    assert log.log_segments()[0].size == segments[0][1] + 5
    assert log.log_end_offset == 60


def test_missing_or_corrupt_index_is_rebuilt(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    entries = [s.offset_index.entries for s in log.log_segments()]
    log.close()
    offset_index_file_name(log_dir, 0).unlink()
    time_index_file_name(log_dir, log.log_segments()[1].base_offset).unlink()
    third = log.log_segments()[2].base_offset
    offset_index_file_name(log_dir, third).write_bytes(b"\xff" * 8 * 3 + b"\x01")
    log = open_log(log_dir, clock, SMALL)  # clean shutdown: only the broken indexes are rebuilt
    assert [s.offset_index.entries for s in log.log_segments()] == entries
    assert read_all(log) == list(range(60))
    assert log.fetch_offset_by_timestamp(T0).offset == 0  # type: ignore[union-attr]


def test_index_pointing_past_the_log_is_rebuilt(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    first = log.log_segments()[0]
    log.close()
    with open(log_file_name(log_dir, 0), "r+b") as f:
        f.truncate(first.size // 3)
    log = open_log(log_dir, clock, SMALL)
    seg = log.log_segments()[0]
    assert seg.offset_index.entries == 0 or seg.offset_index.last_entry().position < seg.size


def test_leftover_files_from_deletion_cleaning_and_swap(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    segs = log.log_segments()
    log.close()
    base1 = segs[1].base_offset
    # a deleted segment that was not removed yet
    for name in ("00000000000000099999.log.deleted", "00000000000000099999.index.deleted"):
        (log_dir / name).write_bytes(b"junk")
    # a cleaner output that never got swapped in
    (log_dir / "00000000000000000000.log.cleaned").write_bytes(b"junk")
    (log_dir / "00000000000000000000.index.cleaned").write_bytes(b"junk")
    # an interrupted swap: the swap holds the same batches as segment 1 (a cleaned copy)
    (log_dir / f"{base1:020d}.log.swap").write_bytes(log_file_name(log_dir, base1).read_bytes())
    (log_dir / f"{base1:020d}.index.swap").write_bytes(b"")
    # an orphan index
    (log_dir / "00000000000000077777.index").write_bytes(b"")
    log = open_log(log_dir, clock, SMALL)
    clock.time.advance(1000)
    names = files(log_dir)
    assert not any(n.endswith((".deleted", ".cleaned", ".swap")) for n in names)
    assert "00000000000000077777.index" not in names
    assert read_all(log) == list(range(60))
    assert [s.base_offset for s in log.log_segments()] == [s.base_offset for s in segs]


def test_load_deletes_everything_below_log_start_offset_when_files_vanished(
    log_dir: Path, clock: Clock
) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 5)
    log.close()
    log = open_log(log_dir, clock, SMALL, log_start_offset=50, had_clean_shutdown=False)
    assert (log.log_start_offset, log.log_end_offset) == (50, 50)
    assert fill(log, 1) == [50]


def test_log_start_offset_is_at_least_the_first_segment(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    log.delete_old_segments(lambda seg, nxt: seg.base_offset == 0, "test")
    log.close()
    log = open_log(log_dir, clock, SMALL, log_start_offset=0)
    assert log.log_start_offset == log.log_segments()[0].base_offset > 0


def test_recovery_keeps_data_when_the_rebuilt_index_needs_more_slots(tmp_path: Path) -> None:
    # Appends after a clean restart index more sparsely than a rebuild does; with tiny
    # indexes the rebuild must not run out of slots and throw the segment away.
    clock = Clock()
    config = LogConfig(segment_bytes=700, index_interval_bytes=60, segment_index_bytes=64)
    log = open_log(tmp_path / "t-0", clock, config)
    for i in range(4):
        log.append_as_leader(records(batch([b""], timestamp=T0 + i)), leader_epoch=1)
    log.close()
    log = open_log(tmp_path / "t-0", clock, config)
    for i in range(4, 6):
        log.append_as_leader(records(batch([b""], timestamp=T0 + i)), leader_epoch=1)
    for segment in log.log_segments():
        segment.close_handlers()  # a crash
    log = open_log(tmp_path / "t-0", clock, config, recovery_point=0, had_clean_shutdown=False)
    assert log.log_end_offset == 6
    assert offsets_in(log.read(0, 10_000).records) == list(range(6))
    log.close()


# -- preallocate -------------------------------------------------------------------------------

PREALLOCATED = SMALL.with_overrides({"preallocate": "true"})


@pytest.mark.parametrize("flushed", [False, True])
def test_recovery_after_a_crash_trims_a_preallocated_active_segment(
    log_dir: Path, clock: Clock, flushed: bool
) -> None:
    crashed = open_log(log_dir, clock, PREALLOCATED)
    fill(crashed, 30)
    if flushed:
        crashed.flush()
    active = crashed.active_segment
    data_sizes = [(s.base_offset, s.size) for s in crashed.log_segments()]
    assert active.log.file.stat().st_size == 1000 > active.size
    # a crash: nothing closed or trimmed; the directory is loaded by a new Log
    log = open_log(
        log_dir,
        clock,
        PREALLOCATED,
        recovery_point=crashed.recovery_point,
        had_clean_shutdown=False,
    )
    crashed.close_handlers()  # the dead process's descriptors: closed, nothing written
    assert read_all(log) == list(range(60))
    assert log.log_end_offset == 60
    assert [(s.base_offset, s.size) for s in log.log_segments()] == data_sizes
    assert [s.log.file.stat().st_size for s in log.log_segments()] == [s for _, s in data_sizes]
    assert fill(log, 1) == [60]  # appends go after the data
    assert read_all(log) == list(range(62))
    log.close()


def test_a_new_log_and_a_clean_reload_with_preallocate(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, PREALLOCATED)
    assert log_file_name(log_dir, 0).stat().st_size == 1000
    fill(log, 2)
    size = log.active_segment.size
    log.close()
    assert log_file_name(log_dir, 0).stat().st_size == size
    # an existing segment is not extended again (as Kafka): appends grow it
    log = open_log(log_dir, clock, PREALLOCATED)
    assert log.active_segment.size == size
    fill(log, 1)
    assert read_all(log) == list(range(6))
    assert log_file_name(log_dir, 0).stat().st_size == log.active_segment.size
    log.close()
