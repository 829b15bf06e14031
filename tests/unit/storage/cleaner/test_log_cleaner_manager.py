"""LogCleanerManager: choosing the filthiest log, checkpoints, and the cleaning states."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.cleaner.log_cleaner_manager import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    IllegalCleaningStateError,
    LogCleanerManager,
    LogCleaningAbortedError,
)
from kafpy.storage.log import Log
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

from .fixtures import T0, Clock, compacted_config, open_log, write_each

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def kv(n: int, tag: bytes = b"") -> list[tuple[bytes, bytes]]:
    return [(b"k%d" % (i % 5), tag + b"v" * 30) for i in range(n)]


class Logs:
    def __init__(self, tmp_path: Path, clock: Clock) -> None:
        self.dir = tmp_path
        self.clock = clock
        self.logs: dict[TopicPartition, Log] = {}

    def add(self, tp: TopicPartition, **kw: object) -> Log:
        log = open_log(self.dir / str(tp), self.clock, compacted_config(**kw))
        self.logs[tp] = log
        return log

    def manager(self) -> LogCleanerManager:
        return LogCleanerManager([self.dir], lambda: dict(self.logs), self.clock.time)


@pytest.fixture
def logs(tmp_path: Path, clock: Clock) -> Logs:
    return Logs(tmp_path, clock)


def test_grabs_the_dirtiest_compacted_log_and_marks_it_in_progress(logs: Logs) -> None:
    a = logs.add(TP0)
    b = logs.add(TP1)
    write_each(a, kv(40))
    write_each(b, kv(80))
    logs.add(TopicPartition("plain", 0), cleanup_policy=["delete"])
    write_each(logs.logs[TopicPartition("plain", 0)], kv(200))
    m = logs.manager()
    # with no checkpoint both logs are all dirty; checkpoint TP1 halfway to make TP0 dirtier
    OffsetCheckpointFile(logs.dir / CLEANER_OFFSET_CHECKPOINT_FILE).write({TP1: 20})
    first = m.grab_filthiest_compacted_log()
    assert first is not None and first.topic_partition == TP0 and first.cleanable_ratio == 1.0
    assert m.cleaning_state(TP0) == "LogCleaningInProgress"
    second = m.grab_filthiest_compacted_log()
    assert second is not None and second.topic_partition == TP1
    assert second.first_dirty_offset == 20 and 0 < second.cleanable_ratio < 1
    assert second.first_uncleanable_offset == b.active_segment.base_offset
    assert m.grab_filthiest_compacted_log() is None  # both in progress, "plain" is not compacted


def test_min_cleanable_dirty_ratio_gates_cleaning(logs: Logs) -> None:
    log = logs.add(TP0, min_cleanable_dirty_ratio=0.9)
    write_each(log, kv(60))
    m = logs.manager()
    segs = log.log_segments()
    half = segs[len(segs) // 2].base_offset
    m.update_checkpoints(logs.dir, (TP0, half))
    assert m.grab_filthiest_compacted_log() is None
    assert 0 < m.dirtiest_log_cleanable_ratio < 0.9
    log.update_config(compacted_config(min_cleanable_dirty_ratio=0.1))
    assert m.grab_filthiest_compacted_log() is not None


def test_min_compaction_lag_keeps_recent_segments_dirty(logs: Logs, clock: Clock) -> None:
    log = logs.add(TP0, min_compaction_lag_ms=60_000)
    write_each(log, kv(20), timestamp=T0 - 120_000)
    old_end = log.log_end_offset
    log.roll()
    write_each(log, kv(20), timestamp=T0)
    m = logs.manager()
    first_dirty, first_uncleanable = m.cleanable_offsets(log, None, clock.time.milliseconds())
    assert first_dirty == 0
    assert first_uncleanable == old_end  # the first segment with a record younger than the lag
    clock.time.sleep(120_000)
    _, later = m.cleanable_offsets(log, None, clock.time.milliseconds())
    assert later == log.active_segment.base_offset


def test_max_compaction_lag_forces_cleaning_below_the_ratio(logs: Logs, clock: Clock) -> None:
    log = logs.add(TP0, min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=10_000)
    write_each(log, kv(60), timestamp=T0)
    m = logs.manager()
    half = log.log_segments()[len(log.log_segments()) // 2].base_offset
    m.update_checkpoints(logs.dir, (TP0, half))
    assert m.grab_filthiest_compacted_log() is None
    clock.time.sleep(20_000)
    got = m.grab_filthiest_compacted_log()
    assert got is not None and got.needs_compaction_now


def test_bad_checkpoints_reset_to_the_log_start(
    logs: Logs, caplog: pytest.LogCaptureFixture
) -> None:
    log = logs.add(TP0)
    write_each(log, kv(40))
    m = logs.manager()
    now = T0
    assert m.cleanable_offsets(log, 10**9, now)[0] == 0
    log.maybe_increment_log_start_offset(25)
    log.delete_old_segments()
    start = log.log_segments()[0].base_offset
    assert start > 0
    assert m.cleanable_offsets(log, 0, now)[0] == start
    assert any("Resetting first dirty offset" in r.getMessage() for r in caplog.records)


def test_checkpoints_are_updated_truncated_and_filtered_to_live_logs(logs: Logs) -> None:
    logs.add(TP0)
    logs.add(TP1)
    m = logs.manager()
    m.update_checkpoints(logs.dir, (TP0, 30))
    m.update_checkpoints(logs.dir, (TP1, 12))
    assert m.all_cleaner_checkpoints() == {TP0: 30, TP1: 12}
    m.maybe_truncate_checkpoint(logs.dir, TP0, 20)
    m.maybe_truncate_checkpoint(logs.dir, TP1, 20)  # already below: unchanged
    assert m.all_cleaner_checkpoints() == {TP0: 20, TP1: 12}
    del logs.logs[TP1]
    m.update_checkpoints(logs.dir)
    text = (logs.dir / CLEANER_OFFSET_CHECKPOINT_FILE).read_text()
    assert text == "0\n1\nt 0 20\n"


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00garbage", b"0\n2\nt 0 5\n", b"7\n0\n"])
def test_a_malformed_cleaner_checkpoint_is_warned_about_and_replaced(
    logs: Logs, caplog: pytest.LogCaptureFixture, garbage: bytes
) -> None:
    logs.add(TP0)
    (logs.dir / CLEANER_OFFSET_CHECKPOINT_FILE).write_bytes(garbage)
    m = logs.manager()
    assert m.all_cleaner_checkpoints() == {}  # cleaned from the start again
    m.maybe_truncate_checkpoint(logs.dir, TP0, 3)
    m.update_checkpoints(logs.dir, (TP0, 30))
    assert (logs.dir / CLEANER_OFFSET_CHECKPOINT_FILE).read_text() == "0\n1\nt 0 30\n"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(f"{CLEANER_OFFSET_CHECKPOINT_FILE} in dir {logs.dir}" in w for w in warnings)


def test_pause_and_resume_count(logs: Logs) -> None:
    m = logs.manager()
    m.abort_and_pause_cleaning(TP0)
    m.abort_and_pause_cleaning(TP0)
    assert m.cleaning_state(TP0) == "LogCleaningPaused(2)"
    logs.add(TP0)
    write_each(logs.logs[TP0], kv(40))
    assert m.grab_filthiest_compacted_log() is None  # paused logs are not cleaned
    m.resume_cleaning([TP0])
    assert m.cleaning_state(TP0) == "LogCleaningPaused(1)"
    m.resume_cleaning([TP0])
    assert m.cleaning_state(TP0) is None
    with pytest.raises(IllegalCleaningStateError, match="not paused"):
        m.resume_cleaning([TP0])
    assert m.grab_filthiest_compacted_log() is not None
    with pytest.raises(IllegalCleaningStateError, match="LogCleaningInProgress"):
        m.resume_cleaning([TP0])


def test_abort_waits_for_the_round_in_progress_to_stop(logs: Logs) -> None:
    log = logs.add(TP0)
    write_each(log, kv(40))
    m = logs.manager()
    assert m.grab_filthiest_compacted_log() is not None
    m.check_cleaning_aborted(TP0)  # not aborted: no error
    aborted = threading.Event()
    done = threading.Event()

    def delete() -> None:
        m.abort_and_pause_cleaning(TP0)
        done.set()

    t = threading.Thread(target=delete)
    t.start()
    # the "cleaner" sees the abort at its next check and reports that it stopped
    for _ in range(1000):
        try:
            m.check_cleaning_aborted(TP0)
        except LogCleaningAbortedError:
            aborted.set()
            break
        threading.Event().wait(0.001)
    assert aborted.is_set() and not done.is_set()
    assert m.cleaning_state(TP0) == "LogCleaningAborted"
    m.done_cleaning(TP0, logs.dir, 99)
    t.join(10)
    assert done.is_set() and m.cleaning_state(TP0) == "LogCleaningPaused(1)"
    assert TP0 not in m.all_cleaner_checkpoints()  # an aborted round does not checkpoint
    with pytest.raises(IllegalCleaningStateError):
        m.done_cleaning(TP0, logs.dir, 1)


def test_done_cleaning_checkpoints_the_end_offset(logs: Logs) -> None:
    log = logs.add(TP0)
    write_each(log, kv(40))
    m = logs.manager()
    m.grab_filthiest_compacted_log()
    m.done_cleaning(TP0, logs.dir, 17)
    assert m.all_cleaner_checkpoints() == {TP0: 17} and m.cleaning_state(TP0) is None


def test_deletable_logs_are_in_progress_until_done(logs: Logs) -> None:
    logs.add(TP0, cleanup_policy=["compact", "delete"])
    logs.add(TP1, cleanup_policy=["delete"])
    m = logs.manager()
    got = m.deletable_logs()
    assert [tp for tp, _ in got] == [TP0]
    assert m.cleaning_state(TP0) == "LogCleaningInProgress"
    m.done_deleting([TP0])
    assert m.cleaning_state(TP0) is None


def test_uncleanable_partitions_are_skipped(logs: Logs) -> None:
    write_each(logs.add(TP0), kv(40))
    m = logs.manager()
    m.mark_partition_uncleanable(logs.dir, TP0)
    assert m.uncleanable_partitions(logs.dir) == {TP0}
    assert m.grab_filthiest_compacted_log() is None
