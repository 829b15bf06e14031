"""LogCleaner with a LogManager: rounds, checkpoints, retention of compact,delete logs,
deletion and truncation racing a round, and the threads themselves."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.cleaner import CleanerConfig, LogCleaner
from kafpy.storage.cleaner.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT_FILE
from kafpy.storage.log_manager import LogManager
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

from .fixtures import Clock, all_records, compacted_config, key_map, write_each

TP = TopicPartition("c", 0)


def kv(keys: int, rounds: int) -> list[tuple[bytes, bytes]]:
    return [(b"k%d" % k, b"r%d" % r + b"." * 30) for r in range(rounds) for k in range(keys)]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager(tmp_path: Path, clock: Clock) -> Iterator[LogManager]:
    m = LogManager(
        [tmp_path / "data"],
        initial_default_config=compacted_config(),
        cleaner_config=CleanerConfig(enable_cleaner=False),
        scheduler=clock.scheduler,
        time=clock.time,
        broker_id=0,
    )
    # a cleaner whose threads are not started: the tests drive clean_once() themselves, in
    # process (test_cleaner_process.py covers the worker process)
    m.cleaner = LogCleaner(
        CleanerConfig(dedupe_buffer_size=1 << 20, io_buffer_size=8192, worker_process=False),
        m.live_log_dirs,
        m.logs_by_topic_partition,
        clock.time,
    )
    yield m
    m.shutdown()


def checkpoint(manager: LogManager) -> dict[TopicPartition, int]:
    return OffsetCheckpointFile(manager.live_log_dirs[0] / CLEANER_OFFSET_CHECKPOINT_FILE).read()


def test_a_round_cleans_and_checkpoints_then_nothing_is_dirty(manager: LogManager) -> None:
    log = manager.create_log(TP)
    write_each(log, kv(5, 10))
    expected = key_map(all_records(log))
    size_before = log.size
    assert manager.cleaner is not None
    thread = manager.cleaner.cleaners[0]
    assert thread.clean_once() is True
    assert checkpoint(manager) == {TP: log.active_segment.base_offset}
    assert log.size < size_before
    assert key_map(all_records(log)) == expected
    assert thread.clean_once() is False  # the dirty section is empty now
    assert thread.last_stats is not None and thread.last_stats.messages_read > 0


def test_compact_delete_logs_get_retention_from_the_cleaner(
    manager: LogManager, clock: Clock
) -> None:
    log = manager.create_log(
        TP, compacted_config(cleanup_policy=["compact", "delete"], retention_ms=1000)
    )
    write_each(log, kv(5, 10))
    segments = log.num_segments
    assert manager.cleanup_logs() == 0  # kafka-log-retention leaves compacted logs to the cleaner
    # past every record timestamp and every file's mtime (an emptied cleaned segment's
    # largest timestamp is its mtime, as in Kafka)
    clock.time.sleep(100 * 365 * 24 * 3600 * 1000)
    assert manager.cleaner is not None
    manager.cleaner.cleaners[0].clean_once()
    assert log.num_segments < segments
    assert manager.cleaner.cleaner_manager.cleaning_state(TP) is None


def _blocking_round(
    manager: LogManager,
) -> tuple[threading.Thread, threading.Event, threading.Event]:
    """Start a cleaning round in a thread that stops inside the round until released."""
    assert manager.cleaner is not None
    thread = manager.cleaner.cleaners[0]
    inside, release = threading.Event(), threading.Event()
    original = thread.cleaner.check_done
    calls = 0

    def check_done(tp: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:  # past the map building, in the middle of the rewrite
            inside.set()
            release.wait(10)
        original(tp)

    thread.cleaner.check_done = check_done
    runner = threading.Thread(target=thread.clean_once)
    runner.start()
    assert inside.wait(10)
    return runner, inside, release


def test_deleting_a_log_aborts_the_round_and_waits_for_it(
    manager: LogManager, clock: Clock
) -> None:
    log = manager.create_log(TP)
    write_each(log, kv(5, 10))
    runner, _, release = _blocking_round(manager)
    assert manager.cleaner is not None
    states = manager.cleaner.cleaner_manager
    deleted = threading.Event()

    def delete() -> None:
        manager.async_delete(TP)
        deleted.set()

    deleter = threading.Thread(target=delete)
    deleter.start()
    for _ in range(1000):  # until the deleter has asked for the abort
        if states.cleaning_state(TP) == "LogCleaningAborted":
            break
        threading.Event().wait(0.001)
    assert states.cleaning_state(TP) == "LogCleaningAborted"
    assert not deleted.is_set()  # the files do not move while the round runs
    release.set()
    runner.join(10)
    deleter.join(10)
    assert deleted.is_set()
    assert states.cleaning_state(TP) is None
    assert not any(p.name.endswith((".cleaned", ".swap")) for p in log.dir.iterdir())
    assert log.dir.name.endswith("-delete")
    assert TP not in checkpoint(manager)
    clock.time.sleep(120_000)
    manager.delete_logs()
    assert not log.dir.exists()


def test_truncation_pauses_cleaning_and_truncates_the_checkpoint(manager: LogManager) -> None:
    log = manager.create_log(TP)
    write_each(log, kv(5, 10))
    assert manager.cleaner is not None
    manager.cleaner.cleaners[0].clean_once()
    cleaned_to = checkpoint(manager)[TP]
    target = log.log_segments()[1].base_offset
    assert target < cleaned_to
    manager.truncate_to({TP: target})
    assert checkpoint(manager)[TP] == log.active_segment.base_offset <= target
    assert manager.cleaner.cleaner_manager.cleaning_state(TP) is None  # resumed


def test_truncation_racing_a_round_waits_and_resumes(manager: LogManager) -> None:
    log = manager.create_log(TP)
    write_each(log, kv(5, 10))
    runner, _, release = _blocking_round(manager)
    assert manager.cleaner is not None
    done = threading.Event()
    target = log.log_segments()[1].base_offset

    def truncate() -> None:
        manager.truncate_to({TP: target})
        done.set()

    t = threading.Thread(target=truncate)
    t.start()
    assert not done.wait(0.05)
    release.set()
    runner.join(10)
    t.join(10)
    assert done.is_set() and log.log_end_offset == target
    assert manager.cleaner.cleaner_manager.cleaning_state(TP) is None
    assert not any(p.name.endswith((".cleaned", ".swap")) for p in log.dir.iterdir())


def test_threads_clean_in_the_background_and_stop(tmp_path: Path, clock: Clock) -> None:
    switch_interval = sys.getswitchinterval()
    m = LogManager(
        [tmp_path / "data"],
        initial_default_config=compacted_config(),
        cleaner_config=CleanerConfig(
            num_threads=2, backoff_ms=60_000, dedupe_buffer_size=1 << 20, worker_process=False
        ),
        scheduler=clock.scheduler,
        time=clock.time,
    )
    try:
        log = m.create_log(TP)
        write_each(log, kv(5, 10))
        expected = key_map(all_records(log))
        m.startup()
        assert m.cleaner is not None
        m.cleaner.wake()
        assert sys.getswitchinterval() <= 0.001  # the event loop gets the GIL back sooner
        for _ in range(2000):
            if m.cleaner.rounds_completed >= 1 and TP in checkpoint(m):
                break
            threading.Event().wait(0.005)
        assert m.cleaner.rounds_completed >= 1
        assert key_map(all_records(log)) == expected
    finally:
        m.shutdown()
    assert not any(t.is_alive() for t in m.cleaner.cleaners)
    assert sys.getswitchinterval() == switch_interval


def test_reconfigure_replaces_the_threads_and_keeps_the_cleaning_states(
    manager: LogManager,
) -> None:
    assert manager.cleaner is not None
    cleaner = manager.cleaner
    cleaner_manager = cleaner.cleaner_manager
    log = manager.create_log(TP)
    write_each(log, kv(5, 10))
    cleaner.abort_and_pause_cleaning(TP)
    cleaner.startup()
    old_threads = list(cleaner.cleaners)
    new_config = CleanerConfig(
        num_threads=2, dedupe_buffer_size=1 << 20, io_buffer_size=8192, backoff_ms=50,
        max_io_bytes_per_second=1e6, worker_process=False,
    )  # fmt: skip
    manager.reconfigure_cleaner(new_config)
    assert manager.cleaner_config == new_config and cleaner.config == new_config
    assert not any(t.is_alive() for t in old_threads)
    assert [t.name for t in cleaner.cleaners] == [
        "kafka-log-cleaner-thread-0",
        "kafka-log-cleaner-thread-1",
    ]
    assert all(t.is_alive() for t in cleaner.cleaners)
    assert cleaner.throttler is not None
    # the same manager: the partition paused before is still paused
    assert cleaner.cleaner_manager is cleaner_manager
    assert cleaner_manager.cleaning_state(TP) is not None
