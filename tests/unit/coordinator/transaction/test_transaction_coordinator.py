"""TransactionCoordinator with its state manager and marker channel manager: Kafka 2.8's
answers to InitProducerId, AddPartitionsToTxn and EndTxn, fencing, timeouts, expiration and
failover, and KIP-939's two-phase commit (enable2Pc, keepPreparedTxn), over an in-memory
__transaction_state and recording marker channels."""

from __future__ import annotations

import asyncio

from kafpy.common.topic import TRANSACTION_STATE_TOPIC_NAME
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction import transaction_log
from kafpy.coordinator.transaction.transaction_config import TransactionConfig
from kafpy.coordinator.transaction.transaction_metadata import (
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    TransactionMetadata,
    TransactionState,
)
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import async_wait_until
from tests.unit.coordinator.fakes import FakePartition
from tests.unit.coordinator.transaction.fixtures import TXN_PARTITIONS, TxnHarness, run

S = TransactionState
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def _state(h: TxnHarness, tid: str) -> TransactionState:
    _, entry = h.state_manager.get_transaction_state(tid)
    assert entry is not None
    return entry.transaction_metadata.state


def _written(h: TxnHarness, tid: str) -> list[str]:
    """The states written to __transaction_state for `tid`, in order ('<DELETE>' for a tombstone)."""
    tp = TopicPartition(TRANSACTION_STATE_TOPIC_NAME, h.state_manager.partition_for(tid))
    partition = h.log.get_partition(tp)
    out = []
    for batch in partition.log.read(0, 1 << 20).records.batches() if partition else ():
        for record in batch.records():
            if transaction_log.read_key(record.key) == tid:
                m = transaction_log.read_value(tid, record.value)
                out.append("<DELETE>" if m is None else m.state.kafka_name)
    return out


async def _begin(h: TxnHarness, tid: str, *tps: TopicPartition) -> tuple[int, int]:
    r = await h.coordinator.handle_init_producer_id(tid, 60000)
    assert r.error == Errors.NONE
    for tp in tps:
        h.cluster.leaders.setdefault(tp, 1)
    if tps:
        code = await h.coordinator.handle_add_partitions_to_transaction(
            tid, r.producer_id, r.producer_epoch, set(tps)
        )
        assert code == Errors.NONE
    return r.producer_id, r.producer_epoch


def test_not_coordinator_before_election_and_load_in_progress_while_loading() -> None:
    async def t(h: TxnHarness) -> None:
        assert (
            await h.coordinator.handle_init_producer_id("tx", 1000)
        ).error == Errors.NOT_COORDINATOR
        h.state_manager.loading_partitions[h.state_manager.partition_for("tx")] = 0
        r = await h.coordinator.handle_init_producer_id("tx", 1000)
        assert r.error == Errors.COORDINATOR_LOAD_IN_PROGRESS
        assert (
            await h.coordinator.handle_end_transaction("tx", 1, 0, True)
            == Errors.COORDINATOR_LOAD_IN_PROGRESS
        )

    run(t)


def test_init_gives_a_new_id_then_bumps_the_epoch() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        first = await h.coordinator.handle_init_producer_id("tx", 1000)
        assert (first.error, first.producer_epoch) == (Errors.NONE, 0)
        second = await h.coordinator.handle_init_producer_id("tx", 1000)
        assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
        assert _written(h, "tx") == ["Empty", "Empty"]
        too_long = await h.coordinator.handle_init_producer_id("tx", 900001)
        assert too_long.error == Errors.INVALID_TRANSACTION_TIMEOUT
        assert (
            await h.coordinator.handle_init_producer_id("", 1000)
        ).error == Errors.INVALID_REQUEST
        assert _written(h, "tx") == ["Empty", "Empty"]

    run(t)


def test_commit_writes_prepare_then_markers_then_complete() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0, B0)
        h.cluster.leaders[B0] = 2
        assert _state(h, "tx") is S.ONGOING
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        await h.settle()
        assert sorted(h.cluster.marked()) == [(1, A0, True, epoch), (2, B0, True, epoch)]
        assert _written(h, "tx") == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
        assert _state(h, "tx") is S.COMPLETE_COMMIT
        # a retried commit is answered NONE, an abort now is invalid
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch, False)
            == Errors.INVALID_TXN_STATE
        )

    run(t)


def test_end_txn_errors_as_kafka() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        assert (
            await h.coordinator.handle_end_transaction("unknown", 5, 0, True)
            == Errors.INVALID_PRODUCER_ID_MAPPING
        )
        pid, epoch = await _begin(h, "tx")
        # nothing added yet: Empty cannot end
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch, True)
            == Errors.INVALID_TXN_STATE
        )
        assert (
            await h.coordinator.handle_end_transaction("tx", pid + 1, epoch, True)
            == Errors.INVALID_PRODUCER_ID_MAPPING
        )
        await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A0})
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch - 1, True)
            == Errors.PRODUCER_FENCED
        )
        assert _written(h, "tx") == ["Empty", "Ongoing"]

    run(t)


def test_add_partitions_errors_and_concurrent_transactions_while_markers_are_pending() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        assert (
            await h.coordinator.handle_add_partitions_to_transaction("nope", 1, 0, {A0})
            == Errors.INVALID_PRODUCER_ID_MAPPING
        )
        pid, epoch = await _begin(h, "tx", A0)
        assert (
            await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch + 1, {A1})
            == Errors.PRODUCER_FENCED
        )
        writes = len(_written(h, "tx"))
        # already in the transaction: answered without a write
        assert (
            await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A0})
            == Errors.NONE
        )
        assert len(_written(h, "tx")) == writes
        h.cluster.leaders[A0] = -1  # no leader: the marker waits
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, False) == Errors.NONE
        assert _state(h, "tx") is S.PREPARE_ABORT
        assert (
            await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A1})
            == Errors.CONCURRENT_TRANSACTIONS
        )
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch, False)
            == Errors.CONCURRENT_TRANSACTIONS
        )
        # the Complete transition is pending while markers go out: a commit is told to wait too
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch, True)
            == Errors.CONCURRENT_TRANSACTIONS
        )
        assert (
            await h.coordinator.handle_init_producer_id("tx", 1000)
        ).error == Errors.CONCURRENT_TRANSACTIONS
        h.cluster.leaders[A0] = 3  # a leader again: the marker goes there
        await h.settle()
        assert h.cluster.marked() == [(3, A0, False, epoch)]
        assert _state(h, "tx") is S.COMPLETE_ABORT

    run(t)


def test_add_partitions_waits_for_the_previous_transactions_markers() -> None:
    """kafpy's improvement on Kafka 2.8: the next transaction's AddPartitionsToTxn, sent
    while the last one's markers are still going out, is answered once they land instead
    of with CONCURRENT_TRANSACTIONS."""

    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0)
        h.cluster.leaders[A0] = -1  # no leader yet: the commit marker waits
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        add = asyncio.ensure_future(
            h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A1})
        )
        await asyncio.sleep(0.01)
        assert not add.done() and _state(h, "tx") is S.PREPARE_COMMIT
        h.cluster.leaders[A0] = 2  # elected: the marker lands, then the next transaction begins
        assert await add == Errors.NONE
        assert h.cluster.marked() == [(2, A0, True, epoch)]
        assert _written(h, "tx")[-3:] == ["PrepareCommit", "CompleteCommit", "Ongoing"]

    run(t)


def test_init_producer_id_waits_for_the_previous_transactions_markers() -> None:
    """The same for a producer starting again right after a commit (the exactly-once
    Spark sink's next task): InitProducerId waits for the markers, then bumps the epoch."""

    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0)
        h.cluster.leaders[A0] = -1
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        init = asyncio.ensure_future(h.coordinator.handle_init_producer_id("tx", 60000))
        await asyncio.sleep(0.01)
        assert not init.done() and _state(h, "tx") is S.PREPARE_COMMIT
        h.cluster.leaders[A0] = 2
        r = await init
        assert (r.error, r.producer_id, r.producer_epoch) == (Errors.NONE, pid, epoch + 1)
        assert _written(h, "tx")[-3:] == ["PrepareCommit", "CompleteCommit", "Empty"]

    run(t)


def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0)
        r = await h.coordinator.handle_init_producer_id("tx", 1000)
        assert r.error == Errors.CONCURRENT_TRANSACTIONS
        await h.settle()
        # the abort marker carries the fencing epoch
        assert h.cluster.marked() == [(1, A0, False, epoch + 1)]
        r = await h.coordinator.handle_init_producer_id("tx", 1000)
        assert (r.error, r.producer_id, r.producer_epoch) == (Errors.NONE, pid, epoch + 2)
        assert (
            await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A1})
            == Errors.PRODUCER_FENCED
        )
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch, True)
            == Errors.PRODUCER_FENCED
        )
        assert _written(h, "tx") == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]

    run(t)


def test_markers_retried_to_the_new_leader_after_not_leader() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0)
        h.cluster.answers[A0] = [Errors.NOT_LEADER_OR_FOLLOWER]

        def move_leader() -> bool:
            if h.cluster.requests:
                h.cluster.leaders[A0] = 2
            return bool(h.cluster.requests)

        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        await async_wait_until(move_leader, 5.0, interval_s=0.001)
        await h.settle()
        assert [m[0] for m in h.cluster.marked()] == [1, 2]
        assert _state(h, "tx") is S.COMPLETE_COMMIT

    run(t)


def test_marker_for_a_deleted_partition_is_skipped() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0, B0)
        del h.cluster.leaders[B0]
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        await h.settle()
        assert h.cluster.marked() == [(1, A0, True, epoch)]
        assert _state(h, "tx") is S.COMPLETE_COMMIT

    run(t)


def test_timed_out_transaction_is_aborted_with_a_bumped_epoch() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        r = await h.coordinator.handle_init_producer_id("tx", 1000)
        h.cluster.leaders[A0] = 1
        await h.coordinator.handle_add_partitions_to_transaction("tx", r.producer_id, 0, {A0})
        assert await h.coordinator.abort_timed_out_transactions() == 0
        h.time.advance(1001)
        assert await h.coordinator.abort_timed_out_transactions() == 1
        await h.settle()
        assert h.cluster.marked() == [(1, A0, False, 1)]
        assert _state(h, "tx") is S.COMPLETE_ABORT
        # the old producer is fenced
        assert (
            await h.coordinator.handle_end_transaction("tx", r.producer_id, 0, True)
            == Errors.PRODUCER_FENCED
        )

    run(t)


def test_idle_transactional_ids_expire_with_a_tombstone() -> None:
    config = TransactionConfig(
        transaction_log_num_partitions=TXN_PARTITIONS, transactional_id_expiration_ms=5000
    )

    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "done", A0)
        await h.coordinator.handle_end_transaction("done", pid, epoch, True)
        await h.settle()
        await _begin(h, "open", A1)
        h.time.advance(5000)
        assert await h.state_manager.remove_expired_transactional_ids() == 1
        assert _written(h, "done")[-1] == "<DELETE>"
        assert h.state_manager.get_transaction_state("done") == (Errors.NONE, None)
        assert _state(h, "open") is S.ONGOING  # an open transaction never expires

    run(t, config)


def test_failover_resumes_pending_markers_from_the_log() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0)
        h.cluster.leaders[A0] = -1
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        partition = h.state_manager.partition_for("tx")
        h.coordinator.on_resignation(partition, 0)
        assert (
            await h.coordinator.handle_init_producer_id("tx", 1000)
        ).error == Errors.NOT_COORDINATOR
        assert h.cluster.marked() == []
        # this broker (as a new coordinator) loads the partition at a higher epoch
        h.cluster.leaders[A0] = 1
        h.coordinator.on_election(partition, 1)
        await async_wait_until(
            lambda: not h.state_manager.loading_partitions, 5.0, interval_s=0.001
        )
        await h.settle()
        assert h.cluster.marked() == [(1, A0, True, epoch)]
        assert _written(h, "tx")[-2:] == ["PrepareCommit", "CompleteCommit"]
        assert _state(h, "tx") is S.COMPLETE_COMMIT

    run(t)


def test_failed_state_write_clears_the_pending_state_and_maps_the_error() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx")
        h.log.fail_with = Errors.NOT_ENOUGH_REPLICAS
        code = await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A0})
        assert code == Errors.COORDINATOR_NOT_AVAILABLE
        h.log.fail_with = Errors.NOT_LEADER_OR_FOLLOWER
        code = await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A0})
        assert code == Errors.NOT_COORDINATOR
        h.log.fail_with = None
        assert (
            await h.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {A0})
            == Errors.NONE
        )

    run(t)


class _LaggingPartition(FakePartition):
    """A new leader whose high watermark has not caught up with its log yet."""

    @property
    def high_watermark(self) -> int:
        return 0


def test_a_new_leader_loads_up_to_its_log_end_not_its_high_watermark() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _begin(h, "tx", A0)
        partition = h.state_manager.partition_for("tx")
        tp = TopicPartition(TRANSACTION_STATE_TOPIC_NAME, partition)
        h.log.partitions[tp] = _LaggingPartition(h.log.partitions[tp].log)
        h.coordinator.on_resignation(partition, 0)
        h.coordinator.on_election(partition, 1)
        await async_wait_until(
            lambda: not h.state_manager.loading_partitions, 5.0, interval_s=0.001
        )
        assert _state(h, "tx") is S.ONGOING
        # so a new producer still fences the open transaction and aborts it
        r = await h.coordinator.handle_init_producer_id("tx", 1000)
        assert r.error == Errors.CONCURRENT_TRANSACTIONS
        await h.settle()
        assert h.cluster.marked() == [(1, A0, False, epoch + 1)]
        assert pid == r.producer_id or r.producer_id == -1

    run(t)


# -- KIP-939: two-phase commit ------------------------------------------------------------------

TWO_PC = TransactionConfig(
    transaction_log_num_partitions=TXN_PARTITIONS, transaction_two_phase_commit_enable=True
)


def _metadata(h: TxnHarness, tid: str) -> TransactionMetadata:
    _, entry = h.state_manager.get_transaction_state(tid)
    assert entry is not None
    return entry.transaction_metadata


async def _prepare_2pc(h: TxnHarness, tid: str, *tps: TopicPartition) -> tuple[int, int]:
    """A two-phase-commit transaction on `tps`, left open (prepared) by its producer."""
    r = await h.coordinator.handle_init_producer_id(tid, 1000, enable_2pc=True)
    assert r.error == Errors.NONE and (r.ongoing_txn_producer_id, r.ongoing_txn_producer_epoch) == (
        -1,
        -1,
    )
    for tp in tps:
        h.cluster.leaders.setdefault(tp, 1)
    code = await h.coordinator.handle_add_partitions_to_transaction(
        tid, r.producer_id, r.producer_epoch, set(tps)
    )
    assert code == Errors.NONE
    return r.producer_id, r.producer_epoch


def test_two_phase_commit_is_refused_unless_the_broker_allows_it() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        off = await h.coordinator.handle_init_producer_id("tx", 1000, enable_2pc=True)
        assert off.error == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert (off.producer_id, off.producer_epoch) == (-1, -1)
        assert h.state_manager.get_transaction_state("tx") == (Errors.NONE, None)
        assert _written(h, "tx") == []

    run(t)


def test_two_phase_commit_flags_out_of_place_are_invalid_requests() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        init = h.coordinator.handle_init_producer_id
        assert (await init("tx", 1000, keep_prepared_txn=True)).error == Errors.INVALID_REQUEST
        assert (
            await init("tx", 1000, (5, 0), enable_2pc=True, keep_prepared_txn=True)
        ).error == Errors.INVALID_REQUEST
        assert (await init(None, 1000, enable_2pc=True)).error == Errors.INVALID_REQUEST
        assert _written(h, "tx") == []

    run(t, TWO_PC)


def test_a_two_phase_commit_transaction_never_times_out() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        await _prepare_2pc(h, "tx", A0)
        assert _metadata(h, "tx").txn_timeout_ms == TWO_PHASE_COMMIT_TIMEOUT_MS
        h.time.advance(TWO_PHASE_COMMIT_TIMEOUT_MS + 1)  # past even the marker timeout itself
        assert await h.coordinator.abort_timed_out_transactions() == 0
        assert _state(h, "tx") is S.ONGOING and h.cluster.marked() == []

    run(t, TWO_PC)


def test_keep_prepared_txn_keeps_the_transaction_and_fences_its_preparer() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _prepare_2pc(h, "tx", A0, B0)
        kept = await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        assert (kept.error, kept.producer_id, kept.producer_epoch) == (Errors.NONE, pid, epoch + 1)
        assert (kept.ongoing_txn_producer_id, kept.ongoing_txn_producer_epoch) == (pid, epoch)
        assert _written(h, "tx") == ["Empty", "Ongoing", "Ongoing"]
        m = _metadata(h, "tx")
        assert (m.state, m.topic_partitions, m.ongoing_txn_producer_epoch) == (
            S.ONGOING,
            {A0, B0},
            epoch,
        )
        # the preparer is fenced; the new owner may not grow the prepared transaction
        end, add = (
            h.coordinator.handle_end_transaction,
            h.coordinator.handle_add_partitions_to_transaction,
        )
        assert await end("tx", pid, epoch, True) == Errors.PRODUCER_FENCED
        assert await add("tx", pid, epoch, {A1}) == Errors.PRODUCER_FENCED
        assert await add("tx", pid, epoch + 1, {A1}) == Errors.INVALID_TXN_STATE
        # a second recovery: a newer owner, the same prepared transaction
        again = await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        assert (again.producer_epoch, again.ongoing_txn_producer_epoch) == (epoch + 2, epoch)
        assert await end("tx", pid, epoch + 1, True) == Errors.PRODUCER_FENCED
        assert await end("tx", pid, epoch + 2, True) == Errors.NONE
        await h.settle()
        assert sorted(h.cluster.marked()) == [(1, A0, True, epoch + 2), (1, B0, True, epoch + 2)]
        m = _metadata(h, "tx")
        assert (m.state, m.ongoing_txn_producer_epoch) == (S.COMPLETE_COMMIT, -1)
        assert _written(h, "tx")[-2:] == ["PrepareCommit", "CompleteCommit"]

    run(t, TWO_PC)


def test_a_kept_transaction_survives_coordinator_failover() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _prepare_2pc(h, "tx", A0)
        await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        partition = h.state_manager.partition_for("tx")
        h.coordinator.on_resignation(partition, 0)
        h.coordinator.on_election(partition, 1)
        await async_wait_until(
            lambda: not h.state_manager.loading_partitions, 5.0, interval_s=0.001
        )
        m = _metadata(h, "tx")
        assert (m.state, m.producer_epoch, m.ongoing_txn_producer_epoch) == (
            S.ONGOING,
            epoch + 1,
            epoch,
        )
        assert m.is_distributed_two_phase_commit_txn
        h.time.advance(10 * 900000)
        assert await h.coordinator.abort_timed_out_transactions() == 0
        again = await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        assert (again.producer_id, again.producer_epoch) == (pid, epoch + 2)
        assert (again.ongoing_txn_producer_id, again.ongoing_txn_producer_epoch) == (pid, epoch)
        assert (
            await h.coordinator.handle_end_transaction("tx", pid, epoch + 2, False) == Errors.NONE
        )
        await h.settle()
        assert h.cluster.marked() == [(1, A0, False, epoch + 2)]
        assert _state(h, "tx") is S.COMPLETE_ABORT

    run(t, TWO_PC)


def test_keep_prepared_txn_with_nothing_open_initializes_as_usual() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _prepare_2pc(h, "tx", A0)
        assert await h.coordinator.handle_end_transaction("tx", pid, epoch, True) == Errors.NONE
        await h.settle()
        r = await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        assert (r.error, r.producer_id, r.producer_epoch) == (Errors.NONE, pid, epoch + 1)
        assert (r.ongoing_txn_producer_id, r.ongoing_txn_producer_epoch) == (-1, -1)
        assert _state(h, "tx") is S.EMPTY

    run(t, TWO_PC)


def test_keep_prepared_txn_refuses_a_transaction_begun_without_two_phase_commit() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        await _begin(h, "tx", A0)
        r = await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        assert r.error == Errors.INVALID_TXN_STATE
        assert _state(h, "tx") is S.ONGOING and _written(h, "tx") == ["Empty", "Ongoing"]

    run(t, TWO_PC)


def test_init_without_keep_prepared_txn_aborts_a_prepared_transaction() -> None:
    async def t(h: TxnHarness) -> None:
        await h.own_all()
        pid, epoch = await _prepare_2pc(h, "tx", A0)
        await h.coordinator.handle_init_producer_id(
            "tx", 1000, enable_2pc=True, keep_prepared_txn=True
        )
        r = await h.coordinator.handle_init_producer_id("tx", 1000, enable_2pc=True)
        assert r.error == Errors.CONCURRENT_TRANSACTIONS  # fenced and aborted; the client retries
        await h.settle()
        assert h.cluster.marked() == [(1, A0, False, epoch + 2)]
        m = _metadata(h, "tx")
        assert (m.state, m.ongoing_txn_producer_epoch) == (S.COMPLETE_ABORT, -1)
        retried = await h.coordinator.handle_init_producer_id("tx", 1000, enable_2pc=True)
        assert (retried.error, retried.producer_id, retried.producer_epoch) == (
            Errors.NONE,
            pid,
            epoch + 3,
        )

    run(t, TWO_PC)
