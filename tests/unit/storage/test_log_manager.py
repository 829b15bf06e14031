"""Tests for LogManager: dirs and locks, loading and recovery inputs, checkpoints, creation,
deletion, and the scheduled tasks, all on MockTime + MockScheduler (no sleeping)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafpy.common.errors import Errors, InvalidTopicError, KafkaStorageError
from kafpy.common.file_descriptors import TooManyOpenFilesError
from kafpy.common.scheduler import MockScheduler
from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.builder import build_batch
from kafpy.records.memory_records import MemoryRecords
from kafpy.storage import file_lock as file_lock_module
from kafpy.storage import log_manager as log_manager_module
from kafpy.storage.file_lock import FileLock
from kafpy.storage.log import CLEAN_SHUTDOWN_FILE, Log, log_delete_dir_name
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_dir_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
)
from kafpy.storage.log_manager import (
    INITIAL_TASK_DELAY_MS,
    CleanerConfig,
    LogDirLockError,
    LogManager,
)
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

LOGGER = "kafpy.log.LogManager"
TP0 = TopicPartition("t", 0)
SNAPSHOT_4 = "00000000000000000004.snapshot"

# small segments so that tests roll and delete segments cheaply
SMALL = LogConfig(segment_bytes=1024, segment_index_bytes=4096)


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def scheduler(time: MockTime) -> MockScheduler:
    return MockScheduler(time)


class Managers:
    """Makes LogManagers for a test and shuts down the ones still open at the end."""

    def __init__(self, time: MockTime, scheduler: MockScheduler) -> None:
        self.time = time
        self.scheduler = scheduler
        self.open: list[LogManager] = []

    def __call__(self, dirs: list[Path], **kwargs: Any) -> LogManager:
        kwargs.setdefault("initial_default_config", SMALL)
        kwargs.setdefault("cleaner_config", CleanerConfig(enable_cleaner=False))
        kwargs.setdefault("broker_id", 0)
        m = LogManager(dirs, scheduler=self.scheduler, time=self.time, **kwargs)
        self.open.append(m)
        return m

    def shutdown(self, m: LogManager) -> None:
        self.open.remove(m)
        m.shutdown()


@pytest.fixture
def managers(time: MockTime, scheduler: MockScheduler) -> Iterator[Managers]:
    ms = Managers(time, scheduler)
    yield ms
    for m in list(ms.open):
        m.shutdown()


def append(log: Log, n: int = 3, timestamp: int = 1_600_000_000_000) -> None:
    values = [(b"key-%d" % i, b"value-%d" % i) for i in range(n)]  # keyed: some logs are compacted
    log.append_as_leader(MemoryRecords(build_batch(values, timestamp=timestamp)), leader_epoch=0)


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    return OffsetCheckpointFile(path).read()


class LogSpy:
    """Records the arguments LogManager constructs each Log with (the real Log still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: dict[str, dict[str, Any]] = {}
        spy = self

        class SpyLog(Log):
            def __init__(self, dir: Path, config: LogConfig, log_start_offset: int, recovery_point: int,
                         scheduler: Any, time: Any, had_clean_shutdown: bool = True) -> None:  # fmt: skip
                spy.calls[Path(dir).name] = {
                    "log_start_offset": log_start_offset,
                    "recovery_point": recovery_point,
                    "had_clean_shutdown": had_clean_shutdown,
                    "config": config,
                }
                super().__init__(
                    dir,
                    config,
                    log_start_offset,
                    recovery_point,
                    scheduler,
                    time,
                    had_clean_shutdown,
                )

        monkeypatch.setattr(log_manager_module, "Log", SpyLog)


# ---------------------------------------------------------------------- dirs and locks


def test_missing_dirs_are_created_and_locked(tmp_path: Path, managers: Managers) -> None:
    dirs = [tmp_path / "a" / "deep", tmp_path / "b"]
    m = managers(dirs)
    assert m.live_log_dirs == [Path(os.path.realpath(d)) for d in dirs]
    for d in dirs:
        assert d.is_dir()
        assert (d / ".lock").exists()


def test_duplicate_dirs_by_canonical_path_rejected(tmp_path: Path, managers: Managers) -> None:
    (tmp_path / "a").mkdir()
    os.symlink(tmp_path / "a", tmp_path / "link")
    with pytest.raises(KafkaStorageError, match="Duplicate log directory found") as e:
        managers([tmp_path / "a", tmp_path / "link"])
    assert str(tmp_path / "link") in str(e.value)
    with pytest.raises(KafkaStorageError, match="Duplicate log directory found"):
        managers([tmp_path / "a", tmp_path / "x" / ".." / "a"])


def test_file_instead_of_dir_rejected(tmp_path: Path, managers: Managers) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(KafkaStorageError, match=f"{f} is not a readable log directory"):
        managers([f])


def test_no_dirs_rejected(managers: Managers) -> None:
    with pytest.raises(KafkaStorageError, match="No log directories configured"):
        managers([])


def test_second_manager_on_locked_dir_fails_at_once(tmp_path: Path, managers: Managers) -> None:
    first = managers([tmp_path / "a"])
    with pytest.raises(LogDirLockError) as e:
        managers([tmp_path / "b", tmp_path / "a"])
    assert str(e.value) == (
        f"Failed to acquire lock on file .lock in {tmp_path / 'a'}. A Kafka instance in another "
        f"process or thread is using this directory."
    )
    assert isinstance(e.value, KafkaStorageError)
    # the failed manager released the lock it took on b
    managers([tmp_path / "b"])
    managers.shutdown(first)
    managers([tmp_path / "a"])


def test_lock_is_an_os_lock_seen_by_other_processes(tmp_path: Path, managers: Managers) -> None:
    managers([tmp_path / "a"])
    code = (
        "import fcntl, os, sys\n"
        f"fd = os.open({str(tmp_path / 'a' / '.lock')!r}, os.O_RDWR)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(3)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 3


def test_offline_dirs_are_skipped(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"], initial_offline_dirs=[tmp_path / "b"])
    assert m.live_log_dirs == [tmp_path / "a"]
    assert m.offline_log_dirs == [tmp_path / "b"]
    with pytest.raises(KafkaStorageError, match="None of the specified log dirs"):
        managers([tmp_path / "b"], initial_offline_dirs=[tmp_path / "b"])


# ---------------------------------------------------------------------- creating logs


def test_create_log_is_idempotent(
    tmp_path: Path, managers: Managers, caplog: pytest.LogCaptureFixture
) -> None:
    m = managers([tmp_path / "a"], broker_id=7)
    cfg = LogConfig.from_props({"segment.bytes": 1024}, {"retention.ms": "1000"})
    with caplog.at_level(logging.INFO, LOGGER):
        log = m.create_log(TP0, cfg)
    assert m.create_log(TP0, SMALL) is log
    assert m.get_log(TP0) is log
    assert m.get_log(TopicPartition("t", 1)) is None
    assert m.all_logs() == [log]
    assert log.dir == tmp_path / "a" / "t-0"
    assert log.config.retention_ms == 1000
    assert (
        f"[LogManager id=7] Created log for partition t-0 in {tmp_path / 'a' / 't-0'} with properties {{retention.ms -> 1000}}."
        in caplog.messages
    )


def test_create_log_uses_topic_config(tmp_path: Path, managers: Managers) -> None:
    topic_cfg = LogConfig(segment_bytes=2048, retention_ms=5)
    m = managers([tmp_path / "a"], topic_configs={"t": topic_cfg})
    assert m.create_log(TP0).config == topic_cfg
    assert m.create_log(TopicPartition("u", 0)).config == SMALL


def test_next_log_dir_picks_the_least_loaded(tmp_path: Path, managers: Managers) -> None:
    # a starts with two partitions on disk
    seed = managers([tmp_path / "a"])
    seed.create_log(TopicPartition("old", 0))
    seed.create_log(TopicPartition("old", 1))
    managers.shutdown(seed)

    m = managers([tmp_path / "a", tmp_path / "b", tmp_path / "c"])
    assert m.next_log_dir() == tmp_path / "b"
    placed = [m.create_log(TopicPartition("t", p)).dir.parent.name for p in range(7)]
    # b, c fill up to a's two, then round-robin over all three
    assert placed == ["b", "c", "b", "c", "a", "b", "c"]


# ---------------------------------------------------------------------- loading


def test_load_after_clean_shutdown(
    tmp_path: Path, managers: Managers, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 5)
    append(m.create_log(TopicPartition("t", 1)), 2)
    managers.shutdown(m)
    assert (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()

    spy = LogSpy(monkeypatch)
    m2 = managers([tmp_path / "a"])
    assert spy.calls["t-0"]["had_clean_shutdown"] is True
    assert spy.calls["t-0"]["recovery_point"] == 5
    assert spy.calls["t-1"]["recovery_point"] == 2
    log = m2.get_log(TP0)
    assert log is not None and log.log_end_offset == 5
    # the marker is consumed by loading: a crash from now on is an unclean shutdown
    assert not (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()


def test_load_without_clean_shutdown_recovers_from_recovery_point(
    tmp_path: Path,
    managers: Managers,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 5)
    managers.shutdown(m)
    (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).unlink()
    OffsetCheckpointFile(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE).write({TP0: 3})

    spy = LogSpy(monkeypatch)
    with caplog.at_level(logging.INFO, LOGGER):
        m2 = managers([tmp_path / "a"])
    assert spy.calls["t-0"]["had_clean_shutdown"] is False
    assert spy.calls["t-0"]["recovery_point"] == 3
    assert any("since no clean shutdown file was found" in msg for msg in caplog.messages)
    log = m2.get_log(TP0)
    assert log is not None and log.log_end_offset == 5


def test_unclean_shutdown_truncates_a_torn_tail(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 5)
    managers.shutdown(m)
    (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).unlink()
    segment = tmp_path / "a" / "t-0" / "00000000000000000000.log"
    good_size = segment.stat().st_size
    whole = build_batch([b"x"], base_offset=5)
    with open(segment, "ab") as f:
        f.write(whole[: len(whole) // 2])  # a batch torn by the crash
    OffsetCheckpointFile(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE).write({TP0: 0})
    m2 = managers([tmp_path / "a"])
    log = m2.get_log(TP0)
    assert log is not None and log.log_end_offset == 5
    assert segment.stat().st_size == good_size


def test_shutdown_twice_keeps_the_checkpoints(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 2)
    managers.shutdown(m)
    m.shutdown()
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 2}


def test_load_passes_topic_config_and_log_start_offset(
    tmp_path: Path, managers: Managers, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 5)
    managers.shutdown(m)
    OffsetCheckpointFile(tmp_path / "a" / LOG_START_OFFSET_CHECKPOINT_FILE).write({TP0: 2})
    topic_cfg = LogConfig(segment_bytes=4096, retention_ms=12345)
    spy = LogSpy(monkeypatch)
    managers([tmp_path / "a"], topic_configs={"t": topic_cfg})
    assert spy.calls["t-0"]["log_start_offset"] == 2
    assert spy.calls["t-0"]["config"] == topic_cfg


def test_malformed_checkpoints_warn_and_reset_to_zero(
    tmp_path: Path,
    managers: Managers,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 5)
    managers.shutdown(m)
    (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).unlink()
    (tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE).write_text("0\n1\nt zero 5\n")
    (tmp_path / "a" / LOG_START_OFFSET_CHECKPOINT_FILE).write_text("7\n")

    spy = LogSpy(monkeypatch)
    with caplog.at_level(logging.WARNING, LOGGER):
        m2 = managers([tmp_path / "a"])
    assert spy.calls["t-0"]["recovery_point"] == 0
    assert spy.calls["t-0"]["log_start_offset"] == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        f"reading {RECOVERY_POINT_CHECKPOINT_FILE} file of directory {tmp_path / 'a'}" in w
        and "line 3" in w
        for w in warnings
    )
    assert any(f"reading {LOG_START_OFFSET_CHECKPOINT_FILE} file" in w for w in warnings)
    assert any("Resetting the recovery point offset checkpoint to 0" in w for w in warnings)
    log = m2.get_log(TP0)
    assert log is not None and log.log_end_offset == 5


def test_a_non_utf8_recovery_point_checkpoint_recovers_the_dir_despite_a_clean_shutdown(
    tmp_path: Path,
    managers: Managers,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 5)
    managers.shutdown(m)
    assert (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()
    (tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE).write_bytes(b"0\n1\nt 0 \xff\xfe5\n")
    (tmp_path / "a" / LOG_START_OFFSET_CHECKPOINT_FILE).write_bytes(b"\x80\x81")
    # a torn tail that only recovery cuts off
    segment = tmp_path / "a" / "t-0" / "00000000000000000000.log"
    good_size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00")

    spy = LogSpy(monkeypatch)
    with caplog.at_level(logging.WARNING, LOGGER):
        m2 = managers([tmp_path / "a"])
    assert spy.calls["t-0"]["recovery_point"] == 0
    assert spy.calls["t-0"]["had_clean_shutdown"] is False
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(RECOVERY_POINT_CHECKPOINT_FILE in w and "not UTF-8" in w for w in warnings)
    assert any(LOG_START_OFFSET_CHECKPOINT_FILE in w and "not UTF-8" in w for w in warnings)
    assert segment.stat().st_size == good_size
    log = m2.get_log(TP0)
    assert log is not None and log.log_end_offset == 5


def test_loading_logs_progress(
    tmp_path: Path, managers: Managers, caplog: pytest.LogCaptureFixture
) -> None:
    m = managers([tmp_path / "a"])
    for p in range(3):
        m.create_log(TopicPartition("t", p))
    managers.shutdown(m)
    with caplog.at_level(logging.DEBUG, LOGGER):
        managers([tmp_path / "a"], recovery_threads_per_data_dir=2)
    # Kafka logs the start of each log's load at DEBUG, its end at INFO
    levels = {r.getMessage(): r.levelno for r in caplog.records}
    assert levels["[LogManager id=0] Loading log 't-1'"] == logging.DEBUG
    assert any(
        msg.startswith("[LogManager id=0] Completed load of log t-") and "(3/3 loaded in" in msg
        for msg in caplog.messages
    )
    assert "[LogManager id=0] Loaded 3 logs in 0ms." in caplog.messages


def test_same_partition_in_two_dirs_rejected(tmp_path: Path, managers: Managers) -> None:
    for name in ("a", "b"):
        m = managers([tmp_path / name])
        append(m.create_log(TP0))
        managers.shutdown(m)
    with pytest.raises(KafkaStorageError, match="Duplicate log directories for t-0") as e:
        managers([tmp_path / "a", tmp_path / "b"])
    assert str(tmp_path / "a" / "t-0") in str(e.value)
    assert str(tmp_path / "b" / "t-0") in str(e.value)
    # the failed manager let go of both dirs
    managers([tmp_path / "a"])
    managers([tmp_path / "b"])


def test_unparseable_dir_name_fails_loading(tmp_path: Path, managers: Managers) -> None:
    (tmp_path / "a" / "not_a_partition").mkdir(parents=True)
    with pytest.raises(KafkaStorageError, match="not_a_partition"):
        managers([tmp_path / "a"])


# ---------------------------------------------------------------------- shutdown and checkpoints


def test_shutdown_writes_checkpoints_and_marker(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"])
    t0, t1 = m.create_log(TP0), m.create_log(TopicPartition("t", 1))
    append(t0, 4)
    append(t0, 2)
    append(t1, 3)
    t1.maybe_increment_log_start_offset(2)
    managers.shutdown(m)
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 6}
    assert read_checkpoint(tmp_path / "b" / RECOVERY_POINT_CHECKPOINT_FILE) == {
        TopicPartition("t", 1): 3
    }
    # only logs whose start offset moved past their first segment are in this checkpoint
    assert read_checkpoint(tmp_path / "a" / LOG_START_OFFSET_CHECKPOINT_FILE) == {}
    assert read_checkpoint(tmp_path / "b" / LOG_START_OFFSET_CHECKPOINT_FILE) == {
        TopicPartition("t", 1): 2
    }
    for d in ("a", "b"):
        assert (tmp_path / d / CLEAN_SHUTDOWN_FILE).exists()
    assert m.all_logs() == []

    m2 = managers([tmp_path / "a", tmp_path / "b"])
    t1_again = m2.get_log(TopicPartition("t", 1))
    assert t1_again is not None and t1_again.log_start_offset == 2


@pytest.mark.parametrize("syncfs", [True, False], ids=["one-syncfs", "fsync-per-file"])
def test_clean_shutdown_makes_logs_and_snapshots_durable_before_the_marker(
    tmp_path: Path, managers: Managers, monkeypatch: pytest.MonkeyPatch, syncfs: bool
) -> None:
    if not syncfs:  # a kernel whose syncfs reports no errors, or no syncfs at all
        monkeypatch.setattr(file_lock_module, "syncfs_reporting_errors", lambda: None)
    elif file_lock_module.syncfs_reporting_errors() is None:
        pytest.skip("no syncfs(2) reporting write-back errors here")
    synced: list[tuple[bool, bool]] = []  # (snapshot there, marker there) at the sync
    real_sync = FileLock.sync_file_system

    def spy(self: FileLock) -> bool:
        d = self.path.parent
        synced.append(((d / "t-0" / SNAPSHOT_4).exists(), (d / CLEAN_SHUTDOWN_FILE).exists()))
        return real_sync(self)

    monkeypatch.setattr(FileLock, "sync_file_system", spy)
    m = managers([tmp_path / "a"])
    log = m.create_log(TP0)
    append(log, 4)
    managers.shutdown(m)
    assert synced == ([(True, False)] if syncfs else [])
    assert log.recovery_point == 4
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 4}
    assert (tmp_path / "a" / "t-0" / SNAPSHOT_4).exists()
    assert (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()


def test_a_failed_sync_at_shutdown_leaves_no_clean_shutdown_marker(
    tmp_path: Path, managers: Managers, monkeypatch: pytest.MonkeyPatch
) -> None:
    if file_lock_module.syncfs_reporting_errors() is None:
        pytest.skip("no syncfs(2) reporting write-back errors here")

    def failing_sync(self: FileLock) -> bool:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(FileLock, "sync_file_system", failing_sync)
    m = managers([tmp_path / "a"])
    log = m.create_log(TP0)
    append(log, 4)
    managers.shutdown(m)
    assert log.recovery_point == 0  # nothing is known to be on disk
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 0}
    assert not (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()


def test_periodic_checkpoints(tmp_path: Path, managers: Managers, time: MockTime) -> None:
    m = managers(
        [tmp_path / "a"],
        flush_recovery_offset_checkpoint_ms=1000,
        flush_start_offset_checkpoint_ms=1000,
    )
    log = m.create_log(TP0)
    append(log, 3)
    log.flush()
    m.startup()
    time.advance(INITIAL_TASK_DELAY_MS)
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 3}
    append(log, 2)
    log.flush()
    log.maybe_increment_log_start_offset(1)
    time.advance(1000)
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 5}
    assert read_checkpoint(tmp_path / "a" / LOG_START_OFFSET_CHECKPOINT_FILE) == {TP0: 1}


def test_startup_schedules_kafkas_tasks_and_shutdown_cancels_them(
    tmp_path: Path, managers: Managers, scheduler: MockScheduler
) -> None:
    m = managers([tmp_path / "a"])
    m.startup()
    assert scheduler.task_names() == [
        "kafka-delete-logs",
        "kafka-log-flusher",
        "kafka-log-retention",
        "kafka-log-start-offset-checkpoint",
        "kafka-recovery-point-checkpoint",
    ]
    managers.shutdown(m)
    assert scheduler.task_names() == []


def test_log_cleaner_starts_with_the_manager_and_stops_at_shutdown(
    tmp_path: Path, managers: Managers
) -> None:
    m = managers([tmp_path / "a"], cleaner_config=CleanerConfig(enable_cleaner=True, num_threads=2))
    m.startup()
    assert m.cleaner is not None
    assert [t.is_alive() for t in m.cleaner.cleaners] == [True, True]
    threads = list(m.cleaner.cleaners)
    managers.shutdown(m)
    assert not any(t.is_alive() for t in threads)


# ---------------------------------------------------------------------- deletion


def test_async_delete_renames_then_deletes_after_delay(
    tmp_path: Path, managers: Managers, time: MockTime, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = LogConfig(segment_bytes=1024, segment_index_bytes=4096, file_delete_delay_ms=60000)
    m = managers([tmp_path / "a"], initial_default_config=cfg)
    tp = TopicPartition("t", 2)
    append(m.create_log(tp), 3)
    m.create_log(TP0)
    m.checkpoint_log_recovery_offsets()
    m.startup()
    with caplog.at_level(logging.INFO):
        removed = m.async_delete(tp)
        assert removed is not None
        deleted_dir = removed.dir
        assert deleted_dir.parent == tmp_path / "a"
        assert deleted_dir.name.startswith("t-2.") and deleted_dir.name.endswith("-delete")
        assert deleted_dir.is_dir()
        assert not (tmp_path / "a" / "t-2").exists()
        assert m.get_log(tp) is None
        assert m.async_delete(tp) is None
        assert (
            f"[LogManager id=0] Log for partition t-2 is renamed to {deleted_dir} and is scheduled for deletion"
            in caplog.messages
        )
        # the dir's checkpoint forgets the partition at once
        assert tp not in read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE)

        time.advance(60000 - 1)
        assert deleted_dir.exists()
        time.advance(1)
        assert not deleted_dir.exists()
    assert f"[LogManager id=0] Deleted log for partition t-2 in {deleted_dir}." in caplog.messages
    # the per-file lines ("Deleted log .../00000000000000000000.log.") are LogSegment's in Kafka
    assert m.logs_to_be_deleted() == []
    assert m.get_log(TP0) is not None


def test_delete_dirs_found_at_startup_are_deleted_after_delay(
    tmp_path: Path, managers: Managers, time: MockTime
) -> None:
    m = managers([tmp_path / "a"])
    append(m.create_log(TP0), 3)
    managers.shutdown(m)
    leftover = tmp_path / "a" / log_delete_dir_name(TP0)
    os.rename(tmp_path / "a" / "t-0", leftover)

    m2 = managers([tmp_path / "a"])  # SMALL: file.delete.delay.ms = 60000
    assert m2.get_log(TP0) is None
    assert [log.dir for log, _ in m2.logs_to_be_deleted()] == [leftover]
    m2.startup()
    time.advance(INITIAL_TASK_DELAY_MS)
    assert leftover.exists()  # queued at load time, not yet 60 s ago
    time.advance(60000 - INITIAL_TASK_DELAY_MS)
    assert not leftover.exists()
    assert m2.logs_to_be_deleted() == []


def test_a_249_character_topic_is_deleted_and_its_delete_dir_loads_at_startup(
    tmp_path: Path, managers: Managers, time: MockTime
) -> None:
    tp = TopicPartition("d" * 249, 7)
    m = managers([tmp_path / "a"])
    append(m.create_log(tp), 3)
    removed = m.async_delete(tp)
    assert removed is not None and removed.dir.name.endswith("-delete")
    assert [p.name for p in (tmp_path / "a").iterdir() if p.is_dir()] == [removed.dir.name]
    managers.shutdown(m)  # before kafka-delete-logs ran: the next start finds the dir

    m2 = managers([tmp_path / "a"])
    assert [log.dir for log, _ in m2.logs_to_be_deleted()] == [removed.dir]
    m2.startup()
    time.advance(60000)
    assert not removed.dir.exists()
    assert m2.logs_to_be_deleted() == []


def test_failed_deletion_is_logged_and_requeued(
    tmp_path: Path,
    managers: Managers,
    time: MockTime,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = managers([tmp_path / "a"])
    m.create_log(TP0)
    m.startup()
    removed = m.async_delete(TP0)
    assert removed is not None
    real_delete = removed.delete
    attempts = []

    def flaky_delete() -> None:
        attempts.append(time.milliseconds())
        if len(attempts) == 1:
            raise OSError("disk hiccup")
        real_delete()

    monkeypatch.setattr(removed, "delete", flaky_delete)
    with caplog.at_level(logging.ERROR, LOGGER):
        time.advance(60000)
    assert len(attempts) == 1
    assert removed.dir.exists()
    assert any(
        "disk hiccup" in msg and "Moving it to the end of the queue" in msg
        for msg in caplog.messages
    )
    assert [log for log, _ in m.logs_to_be_deleted()] == [removed]
    time.advance(60000)
    assert len(attempts) == 2
    assert not removed.dir.exists()


def test_async_delete_unknown_partition_with_offline_dirs(
    tmp_path: Path, managers: Managers
) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"], initial_offline_dirs=[tmp_path / "b"])
    with pytest.raises(KafkaStorageError, match="offline"):
        m.async_delete(TP0)


# ---------------------------------------------------------------------- retention and flushing


def test_retention_task_deletes_only_for_delete_policy(
    tmp_path: Path, managers: Managers, time: MockTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    delete_cfg = LogConfig(
        segment_bytes=1024, segment_index_bytes=4096, retention_ms=1000, cleanup_policy=["delete"]
    )
    compact_cfg = LogConfig(
        segment_bytes=1024, segment_index_bytes=4096, retention_ms=1000, cleanup_policy=["compact"]
    )
    m = managers(
        [tmp_path / "a"],
        topic_configs={"deleted": delete_cfg, "compacted": compact_cfg},
        retention_check_ms=5000,
    )
    logs = {}
    for topic in ("deleted", "compacted"):
        log = m.create_log(TopicPartition(topic, 0))
        for _ in range(3):
            append(log, 2, timestamp=time.milliseconds())
            log.roll()
        logs[topic] = log
    segments_before = {t: log.num_segments for t, log in logs.items()}
    assert segments_before["deleted"] > 1
    # the compacted log's segments below its log start offset belong to the cleaner, which
    # is not built: LogManager must not even ask it
    monkeypatch.setattr(
        logs["compacted"], "delete_old_segments", lambda *a, **k: pytest.fail("called")
    )

    m.startup()
    time.advance(INITIAL_TASK_DELAY_MS)  # first kafka-log-retention run; data now 30 s old > 1 s
    assert logs["deleted"].num_segments < segments_before["deleted"]
    assert logs["deleted"].log_start_offset == 6
    assert logs["compacted"].num_segments == segments_before["compacted"]
    assert logs["compacted"].log_start_offset == 0


def test_cleanup_logs_counts_and_logs(
    tmp_path: Path, managers: Managers, time: MockTime, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = LogConfig(segment_bytes=1024, segment_index_bytes=4096, retention_ms=10)
    m = managers([tmp_path / "a"], initial_default_config=cfg)
    log = m.create_log(TP0)
    append(log, 2, timestamp=time.milliseconds())
    log.roll()
    append(log, 2, timestamp=time.milliseconds())
    log.roll()
    time.advance(100)
    with caplog.at_level(logging.DEBUG, LOGGER):
        deleted = m.cleanup_logs()
    assert deleted == 2
    assert "[LogManager id=0] Beginning log cleanup..." in caplog.messages
    assert (
        "[LogManager id=0] Log cleanup completed. 2 files deleted in 0 seconds" in caplog.messages
    )


def test_flusher_honours_flush_ms(
    tmp_path: Path, managers: Managers, time: MockTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = LogConfig(segment_bytes=1024, segment_index_bytes=4096, flush_ms=1000)
    m = managers([tmp_path / "a"], topic_configs={"fast": fast}, flush_check_ms=500)
    flushed: list[str] = []
    logs = {}
    for topic in ("fast", "slow"):  # slow: flush.ms = Long.MAX (Kafka's default)
        log = m.create_log(TopicPartition(topic, 0))
        append(log, 3)
        real_flush = log.flush

        def spy(offset: int | None = None, _topic: str = topic, _real: Any = real_flush) -> None:
            flushed.append(_topic)
            _real() if offset is None else _real(offset)

        monkeypatch.setattr(log, "flush", spy)
        logs[topic] = log
    m.startup()
    time.advance(INITIAL_TASK_DELAY_MS)
    assert flushed == ["fast"]
    assert logs["fast"].recovery_point == 3
    assert logs["slow"].recovery_point == 0
    # just flushed: not again until flush.ms has passed since
    time.advance(500)
    assert flushed == ["fast"]
    time.advance(500)
    assert flushed == ["fast", "fast"]


# ---------------------------------------------------------------------- truncation and configs


def test_truncate_to_checkpoints_recovery_points(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a"])
    log = m.create_log(TP0)
    append(log, 3)
    append(log, 3)
    log.flush()
    m.truncate_to({TP0: 3, TopicPartition("absent", 0): 5})
    assert log.log_end_offset == 3
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 3}


def test_truncate_fully_and_start_at(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a"])
    log = m.create_log(TP0)
    append(log, 3)
    log.flush()
    checkpoint = tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE
    assert not checkpoint.exists()
    m.truncate_fully_and_start_at(TP0, 100)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    # the dir is checkpointed at once (as Kafka, the recovery point is min(new offset, old))
    assert read_checkpoint(checkpoint) == {TP0: 3}
    m.truncate_fully_and_start_at(TopicPartition("absent", 0), 5)  # no log: nothing happens


def test_update_topic_config(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a"])
    log = m.create_log(TP0)
    other = m.create_log(TopicPartition("u", 0))
    new_cfg = SMALL.with_overrides({"retention.ms": "5"})
    m.update_topic_config("t", new_cfg)
    assert log.config.retention_ms == 5
    assert other.config == SMALL
    assert m.create_log(TopicPartition("t", 1)).config.retention_ms == 5
    new_default = SMALL.with_overrides({"retention.ms": "7"})
    m.reconfigure_default_log_config(new_default)
    assert other.config.retention_ms == 7
    assert log.config.retention_ms == 5


def test_runs_on_the_real_threaded_scheduler(tmp_path: Path) -> None:
    from kafpy.common.scheduler import KafkaScheduler
    from kafpy.common.time import SYSTEM_TIME

    scheduler = KafkaScheduler(threads=2, time=SYSTEM_TIME)
    scheduler.startup()
    try:
        m = LogManager(
            [tmp_path / "a"], scheduler=scheduler, initial_default_config=SMALL, broker_id=0
        )
        m.startup()
        append(m.create_log(TP0), 3)
        m.shutdown()
    finally:
        scheduler.shutdown()
    assert read_checkpoint(tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE) == {TP0: 3}
    assert (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()


def test_initial_task_delay_is_configurable(tmp_path: Path) -> None:
    time = MockTime()
    scheduler = MockScheduler(time)
    lm = LogManager(
        [tmp_path / "d"],
        scheduler=scheduler,
        time=time,
        initial_task_delay_ms=1000,
        retention_check_ms=10_000,
    )
    calls: list[int] = []
    lm.cleanup_logs = lambda: calls.append(time.milliseconds()) or 0  # type: ignore[method-assign]
    start = time.milliseconds()
    lm.startup()
    time.advance(999)
    assert calls == []
    time.advance(1)
    assert calls == [start + 1000]
    lm.shutdown()


def test_async_delete_without_checkpoint_defers_it_to_checkpoint_dirs(tmp_path: Path) -> None:
    time = MockTime()
    scheduler = MockScheduler(time)
    d = tmp_path / "d"
    lm = LogManager([d], scheduler=scheduler, time=time)
    for p in range(3):
        lm.create_log(TopicPartition("gone", p))
    lm.create_log(TopicPartition("kept", 0))
    lm.checkpoint_dirs([lm.live_log_dirs[0]])
    before = (lm.live_log_dirs[0] / "recovery-point-offset-checkpoint").read_text()
    assert "gone 0 0" in before
    for p in range(3):
        lm.async_delete(TopicPartition("gone", p), checkpoint=False)
    assert (lm.live_log_dirs[0] / "recovery-point-offset-checkpoint").read_text() == before
    lm.checkpoint_dirs([lm.live_log_dirs[0]])
    after = (lm.live_log_dirs[0] / "recovery-point-offset-checkpoint").read_text()
    assert "gone" not in after and "kept 0 0" in after
    lm.shutdown()


def test_async_delete_without_checkpoint_defers_the_cleaner_checkpoint_too(
    tmp_path: Path,
) -> None:
    """A StopReplica deleting 1,000 logs rewrote cleaner-offset-checkpoint 1,000 times (about
    20 ms each on the broker's event loop); now once per dir, in checkpoint_dirs."""
    time = MockTime()
    scheduler = MockScheduler(time)
    d = tmp_path / "d"
    lm = LogManager([d], scheduler=scheduler, time=time, cleaner_config=CleanerConfig())
    lm.startup()
    assert lm.cleaner is not None
    data_dir = lm.live_log_dirs[0]
    for tp in [TopicPartition("gone", p) for p in range(3)] + [TopicPartition("kept", 0)]:
        lm.create_log(tp)
        lm.cleaner.cleaner_manager.update_checkpoints(data_dir, (tp, 5))
    checkpoint = data_dir / "cleaner-offset-checkpoint"
    before = checkpoint.read_text()
    assert "gone 0 5" in before and "kept 0 5" in before
    for p in range(3):
        lm.async_delete(TopicPartition("gone", p), checkpoint=False)
    assert checkpoint.read_text() == before
    lm.checkpoint_dirs([data_dir])
    after = checkpoint.read_text()
    assert "gone" not in after and "kept 0 5" in after
    lm.shutdown()


def test_log_dir_failure_takes_the_dir_offline_and_the_last_one_halts(
    tmp_path: Path, managers: Managers
) -> None:
    halted: list[int] = []
    a, b = tmp_path / "a", tmp_path / "b"
    m = managers([a, b], halt=halted.append)
    in_a, in_b = TopicPartition("t", 0), TopicPartition("t", 1)
    append(m.create_log(in_a))
    append(m.create_log(in_b))
    log_a = m.get_log(in_a)
    assert log_a is not None and log_a.dir.parent == a.resolve()

    assert m.handle_log_dir_failure(a.resolve()) == [in_a]
    assert m.live_log_dirs == [b.resolve()]
    assert m.offline_log_dirs == [a.resolve()]
    assert m.get_log(in_a) is None and m.get_log(in_b) is not None
    with pytest.raises(KafkaStorageError):
        append(log_a)  # closed: nothing more is written in the failed dir
    # new logs go to the healthy dir; its checkpoints go on, the failed dir's stop
    assert m.create_log(TopicPartition("t", 2)).dir.parent == b.resolve()
    m.checkpoint_log_recovery_offsets()
    assert not (a / RECOVERY_POINT_CHECKPOINT_FILE).exists()
    assert halted == []
    # a second report of the same dir changes nothing; the last dir failing halts
    assert m.handle_log_dir_failure(a.resolve()) == []
    m.handle_log_dir_failure(b.resolve())
    assert halted == [1]


@pytest.mark.parametrize(
    ("topic", "partition"), [("", -5), ("", 0), ("t", -1), ("..", 0), ("a/b", 0), ("x" * 250, 0)]
)
def test_create_log_refuses_illegal_names_before_touching_the_disk(
    tmp_path: Path, managers: Managers, topic: str, partition: int
) -> None:
    m = managers([tmp_path / "a"])
    before = sorted(p.name for p in (tmp_path / "a").iterdir())
    with pytest.raises(InvalidTopicError):
        m.create_log(TopicPartition(topic, partition))
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == before
    assert m.all_logs() == []


def test_create_log_that_fails_leaves_no_directory(
    tmp_path: Path, managers: Managers, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = managers([tmp_path / "a"])

    class FailingLog(Log):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(log_manager_module, "Log", FailingLog)
    with pytest.raises(KafkaStorageError, match="Error while creating log for t-0 .*No space"):
        m.create_log(TP0)
    assert not (tmp_path / "a" / "t-0").exists()
    assert m.get_log(TP0) is None


class _SeenLine(logging.Handler):
    """Sets `seen` once a record containing `text` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


def test_recovery_after_an_unclean_shutdown_logs_segments_dirs_and_totals(
    tmp_path: Path,
    managers: Managers,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = managers([tmp_path / "a"])
    for p in range(2):
        log = m.create_log(TopicPartition("t", p))
        for _ in range(40):
            append(log, n=10)  # 1 KiB segments: a new segment every few batches
    segments = {p: m.get_log(TopicPartition("t", p)).num_segments for p in range(2)}  # type: ignore[union-attr]
    assert min(segments.values()) > 5
    managers.shutdown(m)
    # an unclean stop: no marker, recovery points back at 0
    (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).unlink()
    (tmp_path / "a" / RECOVERY_POINT_CHECKPOINT_FILE).unlink()

    # t-1 waits until a progress line has said how far the dir has got (1 of 2 logs)
    progress = _SeenLine("Loading logs in dir ")
    real_log = log_manager_module.Log

    class HeldLog(Log):
        def __init__(self, dir: Path, *args: Any) -> None:
            if Path(dir).name == "t-1":
                progress.seen.clear()
                progress.seen.wait(10)
            super().__init__(dir, *args)

    monkeypatch.setattr(log_manager_module, "Log", HeldLog)
    logger = logging.getLogger(LOGGER)
    logger.addHandler(progress)
    try:
        with caplog.at_level(logging.INFO):
            managers([tmp_path / "a"], load_progress_interval_ms=1)
    finally:
        logger.removeHandler(progress)
        monkeypatch.setattr(log_manager_module, "Log", real_log)
    lines = caplog.messages
    d = tmp_path / "a"
    assert (
        f"[LogManager id=0] Attempting recovery for all logs in {d} since no clean shutdown file was found"
        in lines
    )
    assert f"[LogManager id=0] Loading 2 logs in dir {d}: 0/2 loaded (0%)" in lines
    assert f"[LogManager id=0] Loading logs in dir {d}: 1/2 loaded (50%)" in lines
    assert f"[LogManager id=0] Loading logs in dir {d}: 2/2 loaded (100%)" in lines
    assert lines[-1] == "[LogManager id=0] Loaded 2 logs in 0ms."
    for p, count in segments.items():
        recovering = [
            line
            for line in lines
            if "Recovering unflushed segment" in line and f"for t-{p}." in line
        ]
        assert len(recovering) == count
        assert recovering[0].endswith(
            f"Recovering unflushed segment 0. 0/{count} recovered for t-{p}."
        )
        assert f"{count - 1}/{count} recovered for t-{p}." in recovering[-1]


# ---------------------------------------------------------------------- moves between dirs


def test_future_log_is_created_in_the_target_dir_and_replaces_the_current_log(
    tmp_path: Path, managers: Managers
) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"], initial_task_delay_ms=0)
    current = m.create_log(TP0)
    source = current.dir.parent
    target = next(d for d in m.live_log_dirs if d != source)
    append(current, 5)
    future = m.get_or_create_future_log(TP0, target)
    assert future.dir.parent == target
    assert future.dir.name.startswith("t-0.") and future.dir.name.endswith("-future")
    assert m.get_log(TP0, is_future=True) is future
    assert m.get_or_create_future_log(TP0, target) is future  # idempotent
    with pytest.raises(KafkaStorageError, match="abort that move first"):
        m.get_or_create_future_log(TP0, source)
    future.append_as_follower(current.read(0, 1 << 20).records)

    new = m.replace_current_with_future_log(TP0)
    assert new is future and m.get_log(TP0) is future and m.get_log(TP0, is_future=True) is None
    assert new.dir == target / "t-0" and new.log_end_offset == 5
    [(deleted, _)] = m.logs_to_be_deleted()
    assert deleted is current and deleted.dir.name.endswith("-delete")
    assert deleted.dir.parent == source
    assert read_checkpoint(target / RECOVERY_POINT_CHECKPOINT_FILE).keys() <= {TP0}
    assert TP0 not in read_checkpoint(source / RECOVERY_POINT_CHECKPOINT_FILE)


def test_future_log_is_loaded_as_future_after_a_restart(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"])
    current = m.create_log(TP0)
    target = next(d for d in m.live_log_dirs if d != current.dir.parent)
    append(current, 3)
    future = m.get_or_create_future_log(TP0, target)
    future.append_as_follower(current.read(0, 1 << 20).records)
    managers.shutdown(m)

    m2 = managers([tmp_path / "a", tmp_path / "b"])
    loaded = m2.get_log(TP0, is_future=True)
    assert loaded is not None and loaded.dir.parent == target and loaded.log_end_offset == 3
    assert m2.get_log(TP0) is not None and m2.get_log(TP0).dir.parent != target  # type: ignore[union-attr]


def test_abort_and_delete_future_log(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"])
    current = m.create_log(TP0)
    target = next(d for d in m.live_log_dirs if d != current.dir.parent)
    future = m.get_or_create_future_log(TP0, target)
    m.abort_and_delete_future_log(TP0)
    assert m.get_log(TP0, is_future=True) is None
    assert future.dir.name.endswith("-delete")
    m.abort_and_delete_future_log(TP0)  # nothing to abort: no error


def test_future_log_only_in_a_live_dir(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a"])
    m.create_log(TP0)
    with pytest.raises(KafkaStorageError, match="not an online log dir"):
        m.get_or_create_future_log(TP0, tmp_path / "elsewhere")


def test_preferred_log_dir_is_used_when_the_log_is_created(
    tmp_path: Path, managers: Managers
) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"])
    m.maybe_update_preferred_log_dir(TP0, tmp_path / "b")
    assert m.create_log(TP0).dir.parent == tmp_path / "b"
    # without a preference, the least loaded dir (a) is taken
    assert m.create_log(TopicPartition("t", 1)).dir.parent == tmp_path / "a"


def test_failed_dir_drops_its_future_logs(tmp_path: Path, managers: Managers) -> None:
    m = managers([tmp_path / "a", tmp_path / "b"], halt=lambda status: None)
    current = m.create_log(TP0)
    target = next(d for d in m.live_log_dirs if d != current.dir.parent)
    m.get_or_create_future_log(TP0, target)
    m.handle_log_dir_failure(target)
    assert m.get_log(TP0, is_future=True) is None and m.get_log(TP0) is current


def test_out_of_descriptors_a_new_log_is_refused_naming_the_limit_and_the_dir_stays(
    tmp_path: Path,
    managers: Managers,
    no_descriptor_left: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[Path] = []
    m = managers([tmp_path / "a"], log_dir_failure_handler=lambda d, msg, e: failures.append(d))
    existing = m.create_log(TP0)
    append(existing, n=3)
    tp1 = TopicPartition("t", 1)
    with no_descriptor_left() as limit, caplog.at_level(logging.WARNING, LOGGER):
        limit.room(1)
        existing.read(0, 1)  # its segment file takes the last descriptor (the cache may close it)
        with pytest.raises(TooManyOpenFilesError, match="Cannot create the log of t-1") as e:
            m.create_log(tp1)
        assert f"RLIMIT_NOFILE limit of {limit.limit}" in str(e.value)
        assert e.value.code == Errors.KAFKA_STORAGE_ERROR
        assert not (tmp_path / "a" / "t-1").exists()
        assert m.refused_log_reason(tp1) == str(e.value)
        assert "The partition is refused" in caplog.text
        limit.room(1)  # one descriptor: the existing log is read and appended to
        got = existing.read(0, 1 << 20).records
        assert [r.offset for b in got.batches_allow_partial() for r in b.records()] == [0, 1, 2]
        append(existing, n=1)
    assert m.live_log_dirs == [tmp_path / "a"] and failures == []
    assert m.create_log(tp1).log_end_offset == 0
    assert m.refused_log_reason(tp1) is None
