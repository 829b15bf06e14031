"""CleanerProcess: rounds cleaned in a spawned worker process and swapped in by the broker.

These tests start real worker processes (one per test module where possible): the
process boundary is what they check.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.cleaner import CleanerConfig, LogCleaner
from kafpy.storage.cleaner.cleaner_process import CleanerProcess
from kafpy.storage.cleaner.log_cleaner_manager import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LogCleaningAbortedError,
)
from kafpy.storage.log import Log
from kafpy.storage.log_manager import LogManager
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

from .fixtures import (
    Clock,
    all_records,
    compacted_config,
    key_map,
    make_cleaner,
    tmp_log,
    to_clean,
    write_each,
)

TP = TopicPartition("c", 0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def updates(keys: int, rounds: int) -> list[tuple[bytes, bytes | None]]:
    out: list[tuple[bytes, bytes | None]] = []
    for r in range(rounds):
        for k in range(keys):
            out.append((b"key-%d" % k, None if (k + r) % 7 == 0 else (b"r%d-" % r).ljust(20, b"x")))
    return out


def files(log: Log) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.dir.iterdir()) if p.is_file()}


def no_leftovers(log: Log) -> bool:
    return not any(p.name.endswith((".cleaned", ".swap")) for p in log.dir.iterdir())


@pytest.mark.parametrize("memory", [64 * 1024, 2048])  # 2048: the map fills, the round stops early
def test_a_round_in_the_worker_writes_the_same_bytes_as_in_process(
    tmp_path: Path, clock: Clock, memory: int
) -> None:
    pairs = updates(12, 8)
    a = tmp_log(tmp_path / "a", clock)
    b = tmp_log(tmp_path / "b", clock)
    write_each(a, pairs, per_batch=3)
    write_each(b, pairs, per_batch=3)
    for x, y in zip(a.log_segments(), b.log_segments(), strict=True):  # the same delete horizon
        y.last_modified = x.last_modified = 1_000_000_000_000
    assert a.num_segments > 4
    expected = key_map(all_records(a))
    end_a, stats_a = make_cleaner(memory=memory, load_factor=0.75).clean(to_clean(a))
    proc = CleanerProcess(CleanerConfig(dedupe_buffer_size=memory, dedupe_buffer_load_factor=0.75,
                                        io_buffer_size=8192), 0)  # fmt: skip
    try:
        end_b, stats_b = proc.clean(to_clean(b), lambda tp: None)
    finally:
        proc.shutdown()
    assert end_b == end_a
    assert (stats_b.messages_read, stats_b.messages_written, stats_b.groups) == (
        stats_a.messages_read,
        stats_a.messages_written,
        stats_a.groups,
    )
    assert files(b) == files(a)
    assert [s.base_offset for s in b.log_segments()] == [s.base_offset for s in a.log_segments()]
    assert key_map(all_records(b)) == expected
    assert no_leftovers(b)
    # the swapped-in segments are live: the log still appends and reads
    write_each(b, [(b"key-0", b"after")])
    assert key_map(all_records(b))[b"key-0"] == b"after"


def test_aborting_mid_round_leaves_no_cleaned_files_and_the_log_intact(
    tmp_path: Path, clock: Clock
) -> None:
    log = tmp_log(tmp_path, clock)
    write_each(log, updates(12, 8), per_batch=3)
    before = files(log)
    # a slow worker (throttled to ~50 KB/s), so that the abort comes while it writes
    proc = CleanerProcess(CleanerConfig(dedupe_buffer_size=64 * 1024, io_buffer_size=2048,
                                        max_io_bytes_per_second=50_000), 0)  # fmt: skip
    seen_cleaned = []

    def check_done(tp: object) -> None:
        if any(p.name.endswith(".cleaned") for p in log.dir.iterdir()):
            seen_cleaned.append(True)
        if seen_cleaned:
            raise LogCleaningAbortedError(f"Cleaning of partition {tp} was aborted")

    try:
        with pytest.raises(LogCleaningAbortedError):
            proc.clean(to_clean(log), check_done)
        assert seen_cleaned
        assert proc.stopped_by_abort  # the worker stopped at the abort, not at the end
        assert no_leftovers(log)
        assert files(log) == before
        # the worker is still there and the next round runs to the end
        end, _ = proc.clean(to_clean(log), lambda tp: None)
        assert end == log.active_segment.base_offset
        assert no_leftovers(log)
    finally:
        proc.shutdown()


def _manager(tmp_path: Path, clock: Clock, **kw: object) -> LogManager:
    m = LogManager(
        [tmp_path / "data"],
        initial_default_config=compacted_config(),
        cleaner_config=CleanerConfig(enable_cleaner=False),
        scheduler=clock.scheduler,
        time=clock.time,
        broker_id=0,
    )
    m.cleaner = LogCleaner(
        CleanerConfig(dedupe_buffer_size=1 << 20, io_buffer_size=8192, **kw),  # type: ignore[arg-type]
        m.live_log_dirs,
        m.logs_by_topic_partition,
        clock.time,
    )
    return m


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_cleaner_thread_cleans_in_its_worker_and_shutdown_stops_it(
    tmp_path: Path, clock: Clock
) -> None:
    m = _manager(tmp_path, clock)
    try:
        log = m.create_log(TP)
        write_each(log, updates(5, 10))
        expected = key_map(all_records(log))
        assert m.cleaner is not None
        thread = m.cleaner.cleaners[0]
        assert thread.clean_once() is True
        checkpoint = OffsetCheckpointFile(
            m.live_log_dirs[0] / CLEANER_OFFSET_CHECKPOINT_FILE
        ).read()
        assert checkpoint == {TP: log.active_segment.base_offset}
        assert key_map(all_records(log)) == expected
        pids = thread.process.worker_pids()
        assert pids and all(_alive(p) for p in pids) and os.getpid() not in pids
    finally:
        m.shutdown()
    assert not any(_alive(p) for p in pids)


def test_shutdown_during_a_round_stops_the_worker_and_discards_the_round(
    tmp_path: Path, clock: Clock
) -> None:
    m = _manager(tmp_path, clock, max_io_bytes_per_second=50_000, worker_process=True)
    assert m.cleaner is not None
    cleaner = m.cleaner
    log = m.create_log(TP)
    write_each(log, updates(12, 8), per_batch=3)
    expected = key_map(all_records(log))
    thread = cleaner.cleaners[0]
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            thread.clean_once()
        except BaseException as e:  # ThreadShutdownError ends the thread's loop
            outcome.append(e)

    runner = threading.Thread(target=run)
    runner.start()
    for _ in range(2000):
        if any(p.name.endswith(".cleaned") for p in log.dir.iterdir()):
            break
        threading.Event().wait(0.005)
    pids = thread.process.worker_pids()
    cleaner.shutdown()
    runner.join(30)
    assert not runner.is_alive()
    assert outcome and type(outcome[0]).__name__ == "ThreadShutdownError"
    assert pids and not any(_alive(p) for p in pids)
    assert no_leftovers(log)
    # groups swapped in before the shutdown stay (as in Kafka); the rest is as it was
    assert key_map(all_records(log)) == expected
    # and the clean boundary has not moved
    assert (
        OffsetCheckpointFile(m.live_log_dirs[0] / CLEANER_OFFSET_CHECKPOINT_FILE).read().get(TP, 0)
        == 0
    )
    m.cleaner = None
    m.shutdown()


def test_the_worker_logs_into_the_brokers_log_cleaner_log(tmp_path: Path, clock: Clock) -> None:
    import logging

    from kafpy.common.logger import configure_logging, reset_logging

    root = logging.getLogger("kafpy")
    saved = (root.handlers[:], root.level, root.propagate)
    configure_logging(logging.INFO, logs_dir=tmp_path / "logs")
    try:
        log = tmp_log(tmp_path / "data", clock)
        write_each(log, updates(12, 4), per_batch=3)
        proc = CleanerProcess(CleanerConfig(io_buffer_size=8192), 0)
        try:
            proc.clean(to_clean(log), lambda tp: None)
        finally:
            proc.shutdown()
    finally:
        reset_logging()
        root.handlers[:], root.level, root.propagate = saved
    # kafpy.log.LogCleaner goes to log-cleaner.log only, as Kafka's log4j.properties routes it
    cleaner_log = (tmp_path / "logs" / "log-cleaner.log").read_text()
    assert f"Beginning cleaning of log {log.topic_partition}" in cleaner_log
    assert "Beginning cleaning" not in (tmp_path / "logs" / "server.log").read_text()


def test_the_worker_removes_aborted_transactions_as_the_broker_does(
    tmp_path: Path, clock: Clock
) -> None:
    from kafpy.records.control_record import (  # noqa: PLC0415
        ControlRecordType,
        EndTransactionMarker,
        build_end_transaction_marker,
    )
    from kafpy.records.memory_records import MemoryRecords  # noqa: PLC0415

    from .fixtures import append  # noqa: PLC0415

    def fill(log: Log) -> None:
        for i, pid in enumerate(range(10, 16)):
            append(log, [(b"t-%d" % i, b"txn-%d" % pid)], producer_id=pid, producer_epoch=0,
                   base_sequence=0, is_transactional=True)  # fmt: skip
            marker = EndTransactionMarker(ControlRecordType(pid % 2), 0)  # odd: COMMIT
            ctrl = build_end_transaction_marker(
                marker, producer_id=pid, producer_epoch=0, timestamp=0
            )
            log.append_as_leader(MemoryRecords(bytearray(ctrl)), 0, is_from_client=False)
        write_each(log, updates(12, 3), per_batch=3)

    a = tmp_log(tmp_path / "a", clock)
    b = tmp_log(tmp_path / "b", clock)
    fill(a)
    fill(b)
    for x, y in zip(a.log_segments(), b.log_segments(), strict=True):
        y.last_modified = x.last_modified = 1_000_000_000_000
    make_cleaner().clean(to_clean(a))
    proc = CleanerProcess(CleanerConfig(io_buffer_size=8192), 0)
    try:
        proc.clean(to_clean(b), lambda tp: None)
    finally:
        proc.shutdown()
    assert files(b) == files(a)
    txn_values = sorted(
        r.value for r in all_records(b) if r.key is not None and r.key.startswith(b"t-")
    )
    assert txn_values == [b"txn-11", b"txn-13", b"txn-15"]  # the committed ones
