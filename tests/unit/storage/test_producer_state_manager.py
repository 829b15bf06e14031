"""ProducerStateManager: idempotent-producer checks, snapshots, and its place in Log
(duplicates, gaps, fencing, restart, truncation, retention)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.records import MemoryRecords
from kafpy.records.control_record import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig
from kafpy.storage.producer_append_info import AppendOrigin
from kafpy.storage.producer_snapshot_file import producer_snapshot_file, read_snapshot
from kafpy.storage.producer_state_entry import INT32_MAX, BatchMetadata, ProducerStateEntry
from kafpy.storage.producer_state_manager import ProducerStateManager
from kafpy.storage.transaction_index import AbortedTxn

from .segment_fixtures import T0, Clock, batch, open_log, records

TP = TopicPartition("t", 0)
PID = 1000


def pbatch(
    seq: int,
    n: int = 1,
    pid: int = PID,
    epoch: int = 0,
    base_offset: int = 0,
    timestamp: int = T0,
    transactional: bool = False,
) -> bytes:
    """A batch of `n` records from producer `pid` starting at sequence `seq`."""
    return batch(
        [b"v%d" % (seq + i) for i in range(n)],
        base_offset=base_offset,
        timestamp=timestamp,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )


def marker(commit: bool, base_offset: int, coordinator_epoch: int = 0, pid: int = PID) -> bytes:
    """The COMMIT (or ABORT) marker of producer `pid`'s transaction, at `base_offset`."""
    return build_end_transaction_marker(
        EndTransactionMarker(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, coordinator_epoch
        ),
        producer_id=pid,
        producer_epoch=0,
        timestamp=T0,
        base_offset=base_offset,
    )


def append(
    psm: ProducerStateManager, *batches: bytes, origin: AppendOrigin = AppendOrigin.CLIENT
) -> BatchMetadata | None:
    """Check `batches` (offsets as built) and, unless one is a duplicate, apply them."""
    update = psm.analyze_and_validate(memoryview(b"".join(batches)), origin)
    if update is None:
        return None
    if update.duplicate is not None:
        return update.duplicate
    psm.apply(update)
    return None


@pytest.fixture
def psm(tmp_path: Path) -> ProducerStateManager:
    return ProducerStateManager(TP, tmp_path)


# -- checks as leader -------------------------------------------------------------------------


def test_in_sequence_batches_are_tracked_last_five(psm: ProducerStateManager) -> None:
    offset = 0
    for i in range(7):
        assert append(psm, pbatch(i * 2, n=2, base_offset=offset)) is None
        offset += 2
    entry = psm.last_entry(PID)
    assert entry is not None
    assert len(entry.batch_metadata) == 5
    assert entry.first_seq == 4 and entry.last_seq == 13
    assert entry.first_data_offset == 4 and entry.last_data_offset == 13
    assert entry.producer_epoch == 0


def test_duplicate_of_any_of_the_last_five_batches_returns_its_metadata(
    psm: ProducerStateManager,
) -> None:
    for i in range(6):
        append(psm, pbatch(i * 3, n=3, base_offset=100 + i * 3))
    # batch 1 (seq 3-5) is among the last five; its retry carries a new base offset
    dup = append(psm, pbatch(3, n=3, base_offset=500))
    assert dup == BatchMetadata(last_seq=5, last_offset=105, offset_delta=2, timestamp=T0)
    assert (dup.first_seq, dup.first_offset) == (3, 103)
    # batch 0 (seq 0-2) was pushed out: its retry is out of order, not a duplicate
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, pbatch(0, n=3, base_offset=500))
    # a retry under another epoch is no duplicate: a new epoch must start at 0
    with pytest.raises(OutOfOrderSequenceError, match="new epoch"):
        append(psm, pbatch(3, n=3, epoch=1, base_offset=500))
    entry = psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 17


def test_gap_is_out_of_order(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, n=2))
    with pytest.raises(
        OutOfOrderSequenceError, match="5 \\(incoming seq. number\\), 1 \\(current end"
    ):
        append(psm, pbatch(5, base_offset=2))
    assert append(psm, pbatch(2, base_offset=2)) is None


def test_overlapping_range_that_is_not_a_retry_is_out_of_order(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, n=4))
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, pbatch(2, n=4, base_offset=4))


def test_older_epoch_is_fenced(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError, match="smaller than the last seen epoch 3"):
        append(psm, pbatch(1, epoch=2, base_offset=1))


def test_new_epoch_must_start_at_sequence_zero(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, n=2, epoch=0))
    with pytest.raises(OutOfOrderSequenceError, match="new epoch"):
        append(psm, pbatch(2, epoch=1, base_offset=2))
    assert append(psm, pbatch(0, epoch=1, base_offset=2)) is None
    entry = psm.last_entry(PID)
    assert entry is not None
    assert entry.producer_epoch == 1
    assert [b.first_seq for b in entry.batch_metadata] == [0]  # the old epoch's batches are gone


def test_an_unknown_producer_goes_on_from_any_sequence(psm: ProducerStateManager) -> None:
    # its records were deleted (retention, DeleteRecords): Kafka 2.5+ accepts it (KIP-360)
    assert append(psm, pbatch(7)) is None
    entry = psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 7
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, pbatch(9, base_offset=1))  # once known, its sequence is checked again


def test_several_batches_of_one_producer_in_one_append_are_checked_in_order(
    psm: ProducerStateManager,
) -> None:
    assert (
        append(psm, pbatch(0, n=2), pbatch(2, n=2, base_offset=2), pbatch(0, pid=7, base_offset=4))
        is None
    )
    entry = psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 3
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, pbatch(4, base_offset=5), pbatch(6, base_offset=6))
    # nothing of the failed append was applied
    entry = psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 3


def test_sequence_wraps_after_int32_max(psm: ProducerStateManager) -> None:
    psm.producers[PID] = ProducerStateEntry(PID, [BatchMetadata(INT32_MAX - 1, 9, 0, T0)], 0)
    assert append(psm, pbatch(INT32_MAX, n=3, base_offset=10)) is None  # INT32_MAX, 0, 1
    entry = psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 1
    assert append(psm, pbatch(2, base_offset=13)) is None


def test_batches_without_producer_id_are_ignored(psm: ProducerStateManager) -> None:
    assert (
        psm.analyze_and_validate(
            memoryview(batch([b"a"]) + batch([b"b"], base_offset=1)), AppendOrigin.CLIENT
        )
        is None
    )
    assert psm.is_empty


def test_replication_applies_without_checks(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, epoch=5))
    # a gap and an older epoch: a follower takes what the leader wrote
    assert append(psm, pbatch(9, epoch=4, base_offset=1), origin=AppendOrigin.REPLICATION) is None
    entry = psm.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 4 and entry.last_seq == 9


def test_coordinator_origin_checks_epoch_but_not_sequence(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, epoch=2))
    assert append(psm, pbatch(10, epoch=2, base_offset=1), origin=AppendOrigin.COORDINATOR) is None
    with pytest.raises(InvalidProducerEpochError):
        append(psm, pbatch(11, epoch=1, base_offset=2), origin=AppendOrigin.COORDINATOR)


def test_transactions_are_tracked_until_their_marker(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0, n=2, base_offset=10, transactional=True))
    assert psm.first_unstable_offset() == 10
    with pytest.raises(InvalidTxnStateError):
        append(psm, pbatch(2, base_offset=12))
    append(psm, marker(True, 12, coordinator_epoch=3), origin=AppendOrigin.COORDINATOR)
    assert psm.first_unstable_offset() is None
    entry = psm.last_entry(PID)
    assert (
        entry is not None
        and entry.coordinator_epoch == 3
        and entry.current_txn_first_offset is None
    )


# -- snapshots ---------------------------------------------------------------------------------


def test_take_snapshot_and_reload(psm: ProducerStateManager, tmp_path: Path) -> None:
    append(psm, pbatch(0, n=2), pbatch(0, pid=9, base_offset=2))
    psm.update_map_end_offset(3)
    psm.take_snapshot()
    assert [o for o, _ in psm.snapshot_files()] == [3]
    other = ProducerStateManager(TP, tmp_path)
    other.truncate_and_reload(0, 3, T0)
    assert other.map_end_offset == 3
    assert set(other.producers) == {PID, 9}
    # the reloaded state detects a retry of the last batch and continues the sequence
    assert append(other, pbatch(0, n=2, base_offset=7)) == BatchMetadata(1, 1, 1, T0)
    assert append(other, pbatch(2, base_offset=3)) is None


def test_reload_skips_a_corrupt_snapshot_and_drops_out_of_range_ones(
    psm: ProducerStateManager, tmp_path: Path
) -> None:
    append(psm, pbatch(0, base_offset=0))
    psm.update_map_end_offset(1)
    psm.take_snapshot()
    append(psm, pbatch(1, base_offset=1))
    psm.update_map_end_offset(2)
    psm.take_snapshot()
    append(psm, pbatch(2, base_offset=2))
    psm.update_map_end_offset(3)
    psm.take_snapshot()
    producer_snapshot_file(tmp_path, 2).write_bytes(b"junk")
    other = ProducerStateManager(TP, tmp_path)
    # log end 2: the snapshot at 3 goes, the one at 2 is corrupt, the one at 1 loads
    other.truncate_and_reload(0, 2, T0)
    assert other.map_end_offset == 1
    assert [o for o, _ in other.snapshot_files()] == [1]
    entry = other.last_entry(PID)
    assert entry is not None and entry.last_seq == 0


def test_expired_producers_are_not_loaded(tmp_path: Path) -> None:
    psm = ProducerStateManager(TP, tmp_path, max_producer_id_expiration_ms=1000)
    append(
        psm, pbatch(0, pid=1, timestamp=T0), pbatch(0, pid=2, timestamp=T0 + 5000, base_offset=1)
    )
    psm.update_map_end_offset(2)
    psm.take_snapshot()
    other = ProducerStateManager(TP, tmp_path, max_producer_id_expiration_ms=1000)
    other.truncate_and_reload(0, 2, T0 + 5500)
    assert set(other.producers) == {2}
    psm.remove_expired_producers(T0 + 6000)
    assert psm.is_empty


def test_truncate_head_keeps_producers_and_drops_snapshots_below_the_log_start(
    psm: ProducerStateManager,
) -> None:
    append(psm, pbatch(0, pid=1, base_offset=0), pbatch(0, pid=2, base_offset=5))
    for offset in (3, 6):
        psm.update_map_end_offset(offset)
        psm.take_snapshot()
    psm.truncate_head(5)
    assert set(psm.producers) == {1, 2}
    assert [o for o, _ in psm.snapshot_files()] == [6]


def test_transactional_producer_goes_on_in_sequence_after_delete_records(
    psm: ProducerStateManager,
) -> None:
    """librdkafka's 0103 (fatal_idempo_error_without_kip360): a transaction of 6 records is
    committed, DeleteRecords moves the log start to 6 before the commit marker lands (the
    coordinator writes it after EndTxn answered), then the next transaction goes on at
    sequence 6: the producer's state must survive, or the marker makes a new empty entry
    of the same epoch that refuses sequence 6 as out of order."""
    append(psm, pbatch(0, n=6, base_offset=0, transactional=True))
    psm.update_map_end_offset(6)
    psm.truncate_head(6)
    append(psm, marker(True, 6), origin=AppendOrigin.COORDINATOR)
    assert append(psm, pbatch(6, base_offset=7, transactional=True)) is None
    entry = psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 6


def test_snapshot_files_are_tracked_after_one_listing(
    psm: ProducerStateManager, tmp_path: Path
) -> None:
    for offset in (1, 2):
        psm.update_map_end_offset(offset)
        psm.take_snapshot()
        assert [o for o, _ in psm.snapshot_files()] == list(range(1, offset + 1))
    psm.delete_snapshots_before(2)
    assert psm.snapshot_files() == [(2, producer_snapshot_file(tmp_path, 2))]
    assert not producer_snapshot_file(tmp_path, 1).exists()
    # a listing made elsewhere (the LogLoader's) serves as the manager's own
    other = ProducerStateManager(TP, tmp_path)
    other.load_snapshots(
        ["00000000000000000002.snapshot", "00000000000000000000.log", "x.snapshot"]
    )
    assert other.snapshot_files() == psm.snapshot_files()
    assert (other.oldest_snapshot_offset, other.latest_snapshot_offset) == (2, 2)


def test_truncate_forgets_everything(psm: ProducerStateManager) -> None:
    append(psm, pbatch(0))
    psm.update_map_end_offset(1)
    psm.take_snapshot()
    psm.truncate()
    assert psm.is_empty and psm.snapshot_files() == [] and psm.map_end_offset == 0


# -- in the Log ----------------------------------------------------------------------------------


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "t-0"


def produce(log: Log, seq: int, n: int = 1, pid: int = PID, epoch: int = 0) -> tuple[int, int]:
    info = log.append_as_leader(records(pbatch(seq, n, pid=pid, epoch=epoch)), 0)
    return info.first_offset, info.last_offset


def snapshot_offsets(log: Log) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in log.dir.glob("*.snapshot"))


def test_log_answers_a_retried_batch_with_its_original_offsets(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    log.append_as_leader(records(batch([b"x", b"y"])), 0)  # a non-idempotent batch first
    assert produce(log, 0, 3) == (2, 4)
    assert produce(log, 3, 2) == (5, 6)
    size = log.size
    info = log.append_as_leader(records(pbatch(0, 3)), 0)
    assert (info.first_offset, info.last_offset) == (2, 4)
    assert log.log_end_offset == 7 and log.size == size  # nothing appended
    assert produce(log, 5) == (7, 7)


def test_log_refuses_gaps_and_fenced_epochs_without_writing(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    produce(log, 0, 2, epoch=1)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 3, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        produce(log, 2, epoch=0)
    assert log.log_end_offset == 2
    assert produce(log, 2, epoch=1) == (2, 2)


def test_producer_state_survives_a_clean_restart_through_the_snapshot(
    log_dir: Path, clock: Clock
) -> None:
    log = open_log(log_dir, clock)
    produce(log, 0, 2)
    produce(log, 2, 2)
    log.close()
    assert snapshot_offsets(log) == [4]
    log = open_log(log_dir, clock)
    info = log.append_as_leader(records(pbatch(2, 2)), 0)  # the last batch retried
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (2, 3, 4)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 5)
    assert produce(log, 4) == (4, 4)


@pytest.mark.parametrize("clean", [True, False])
def test_producer_state_is_rebuilt_from_the_log_without_snapshots(
    log_dir: Path, clock: Clock, clean: bool
) -> None:
    config = LogConfig(segment_bytes=300)
    log = open_log(log_dir, clock, config)
    for i in range(6):
        produce(log, i * 2, 2)
        produce(log, i, pid=2)
    assert log.num_segments > 2
    log.close()
    for path in log_dir.glob("*.snapshot"):
        path.unlink()
    log = open_log(log_dir, clock, config, had_clean_shutdown=clean)
    entry = log.producer_state_manager.last_entry(PID)
    assert entry is not None and entry.last_seq == 11
    assert len(entry.batch_metadata) == 5  # rebuilt from the batches, not a snapshot
    dup = log.append_as_leader(records(pbatch(6, 2)), 0)
    assert dup.first_offset == 9
    assert produce(log, 12) == (18, 18)
    assert produce(log, 6, pid=2) == (19, 19)
    # the rebuild left snapshots at the last two segments and the log end
    bases = [s.base_offset for s in log.log_segments()]
    assert set(bases[-2:]) <= set(snapshot_offsets(log)) and 18 in snapshot_offsets(log)


def test_roll_writes_a_snapshot_at_the_new_segment(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    produce(log, 0, 3)
    log.roll()
    assert snapshot_offsets(log) == [3]
    [entry] = read_snapshot(producer_snapshot_file(log_dir, 3))
    assert (entry.producer_id, entry.last_seq, entry.last_data_offset) == (PID, 2, 2)


def test_truncation_rewinds_the_producer_state(log_dir: Path, clock: Clock) -> None:
    config = LogConfig(segment_bytes=300)
    log = open_log(log_dir, clock, config)
    for i in range(8):
        produce(log, i * 2, 2)
    log.truncate_to(7)  # the batch at 6-7 goes whole
    assert log.log_end_offset == 6
    assert max(snapshot_offsets(log), default=0) <= 6
    entry = log.producer_state_manager.last_entry(PID)
    assert entry is not None and entry.last_seq == 5
    # the batch that was truncated is no duplicate now: it is written again
    assert produce(log, 6, 2) == (6, 7)
    log.truncate_fully_and_start_at(100)
    assert log.producer_state_manager.is_empty and snapshot_offsets(log) == []
    # every record of the producer is gone: it goes on where it was (Kafka 2.5+)
    assert produce(log, 8) == (100, 100)


def test_retention_keeps_producers_whose_batches_are_gone(log_dir: Path, clock: Clock) -> None:
    config = LogConfig(segment_bytes=300, file_delete_delay_ms=0)
    log = open_log(log_dir, clock, config)
    produce(log, 0, pid=1)
    for i in range(12):
        produce(log, i, pid=2)
    assert log.num_segments > 2
    log.maybe_increment_log_start_offset(5)
    log.delete_old_segments()
    assert log.log_start_offset >= 4
    # kept until they expire (Kafka 2.8, KAFKA-7190)
    assert set(log.producer_state_manager.producers) == {1, 2}
    assert all(o >= log.log_start_offset for o in snapshot_offsets(log))
    # the producer whose batches are gone goes on from its next sequence
    end = log.log_end_offset
    assert produce(log, 1, pid=1) == (end, end)


def test_follower_appends_update_the_state(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    log.append_as_follower(MemoryRecords(pbatch(40, 2, base_offset=0, epoch=2)))
    entry = log.producer_state_manager.last_entry(PID)
    assert entry is not None and (entry.producer_epoch, entry.last_seq) == (2, 41)
    assert produce(log, 42, epoch=2) == (2, 2)
    assert log.producer_state_manager.map_end_offset == 3


# -- transactions in the Log: markers, the aborted index, restarts -----------------------------


def end_marker(log: Log, commit: bool, pid: int = PID, coordinator_epoch: int = 0) -> int:
    control = build_end_transaction_marker(
        EndTransactionMarker(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, coordinator_epoch
        ),
        producer_id=pid,
        producer_epoch=0,
        timestamp=T0,
    )
    return log.append_as_leader(records(control), 0, is_from_client=False).first_offset


def txn_produce(log: Log, seq: int, n: int = 1, pid: int = PID) -> tuple[int, int]:
    info = log.append_as_leader(records(pbatch(seq, n, pid=pid, transactional=True)), 0)
    return info.first_offset, info.last_offset


def aborted_index(log: Log) -> list[AbortedTxn]:
    return [t for s in log.log_segments() for t in s.txn_index.all_aborted_txns()]


def test_the_lso_of_an_abort_is_the_oldest_other_open_transaction(
    psm: ProducerStateManager,
) -> None:
    append(psm, pbatch(0, n=2, base_offset=10, transactional=True))
    append(psm, pbatch(0, pid=PID + 1, base_offset=12, transactional=True))
    update = psm.analyze_and_validate(memoryview(marker(False, 13)), AppendOrigin.COORDINATOR)
    assert update is not None
    assert psm.apply(update) == [AbortedTxn(PID, 10, 13, 12)]
    assert psm.first_unstable_offset() == 12


@pytest.mark.parametrize("clean", [True, False])
def test_an_open_transaction_survives_a_restart_and_its_abort_is_indexed(
    log_dir: Path, clock: Clock, clean: bool
) -> None:
    log = open_log(log_dir, clock)
    produce(log, 0, 2, pid=5)  # an idempotent producer: never unstable
    assert txn_produce(log, 0, 3) == (2, 4)
    assert log.producer_state_manager.first_unstable_offset() == 2
    if clean:
        log.close()  # the snapshot at the log end carries currentTxnFirstOffset
        [entry] = [
            e for e in read_snapshot(producer_snapshot_file(log_dir, 5)) if e.producer_id == PID
        ]
        assert entry.current_txn_first_offset == 2
    else:
        log.close_handlers()  # a crash: no snapshot at the end, the log is recovered
        for path in log_dir.glob("*.snapshot"):
            path.unlink()
    log = open_log(log_dir, clock, had_clean_shutdown=clean)
    assert log.producer_state_manager.first_unstable_offset() == 2
    assert end_marker(log, commit=False) == 5
    assert log.producer_state_manager.first_unstable_offset() is None
    assert aborted_index(log) == [AbortedTxn(PID, 2, 5, 6)]


def test_recovery_after_a_crash_rebuilds_the_aborted_index(log_dir: Path, clock: Clock) -> None:
    config = LogConfig(segment_bytes=400)
    log = open_log(log_dir, clock, config)
    expected = []
    for i in range(4):
        first, _ = txn_produce(log, i * 2, 2)
        end = end_marker(log, commit=i % 2 == 1)
        if i % 2 == 0:
            expected.append(AbortedTxn(PID, first, end, end + 1))
    assert log.num_segments > 1
    assert aborted_index(log) == expected
    log.close_handlers()
    log = open_log(log_dir, clock, config, had_clean_shutdown=False)
    assert aborted_index(log) == expected


def test_a_follower_tracks_open_transactions_and_indexes_aborts_like_its_leader(
    log_dir: Path, clock: Clock
) -> None:
    # what a follower replicates must leave it with the leader's LSO when it takes over
    leader = open_log(log_dir.parent / "leader" / "t-0", clock)
    txn_produce(leader, 0, 2)
    txn_produce(leader, 0, pid=PID + 1)
    end_marker(leader, commit=False)
    follower = open_log(log_dir, clock)
    follower.append_as_follower(MemoryRecords(leader.read(0, 1 << 20).records.buffer()))
    assert follower.log_end_offset == leader.log_end_offset == 4
    assert follower.producer_state_manager.first_unstable_offset() == 2
    assert aborted_index(follower) == aborted_index(leader) == [AbortedTxn(PID, 0, 3, 2)]
