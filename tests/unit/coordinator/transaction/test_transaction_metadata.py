"""TransactionMetadata's state machine: Kafka's valid transitions and the two-step changes,
and KIP-939's kept prepared transaction."""

from __future__ import annotations

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    VALID_PREVIOUS_STATES,
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
    is_valid_transition,
)

S = TransactionState
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _new(epoch: int = NO_PRODUCER_EPOCH) -> TransactionMetadata:
    return TransactionMetadata("tx", producer_id=10, producer_epoch=epoch, txn_timeout_ms=1000,
                               txn_last_update_timestamp=0)  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new"),
    [(S.EMPTY, S.ONGOING), (S.ONGOING, S.PREPARE_COMMIT), (S.ONGOING, S.PREPARE_ABORT),
     (S.PREPARE_COMMIT, S.COMPLETE_COMMIT), (S.PREPARE_ABORT, S.COMPLETE_ABORT),
     (S.COMPLETE_COMMIT, S.ONGOING), (S.COMPLETE_ABORT, S.EMPTY), (S.ONGOING, S.PREPARE_EPOCH_FENCE),
     (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT), (S.EMPTY, S.DEAD), (S.COMPLETE_COMMIT, S.DEAD)],
)  # fmt: skip
def test_kafkas_allowed_transitions(old: TransactionState, new: TransactionState) -> None:
    assert is_valid_transition(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [(S.EMPTY, S.PREPARE_COMMIT), (S.PREPARE_COMMIT, S.COMPLETE_ABORT), (S.PREPARE_ABORT, S.ONGOING),
     (S.ONGOING, S.DEAD), (S.PREPARE_EPOCH_FENCE, S.PREPARE_COMMIT), (S.DEAD, S.EMPTY),
     (S.EMPTY, S.PREPARE_EPOCH_FENCE)],
)  # fmt: skip
def test_other_transitions_are_refused(old: TransactionState, new: TransactionState) -> None:
    assert not is_valid_transition(old, new)
    metadata = _new(0)
    metadata.state = old
    with pytest.raises(IllegalTransactionStateError, match="not a valid previous state"):
        metadata._prepare(new, 10, 0, -1, 1000, frozenset(), 0, 1)


def test_every_state_has_its_previous_states() -> None:
    assert set(VALID_PREVIOUS_STATES) == set(TransactionState)
    assert [s.kafka_name for s in S] == [
        "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
        "Dead", "PrepareEpochFence",
    ]  # fmt: skip


def test_a_commit_goes_through_the_states_in_two_steps() -> None:
    m = _new()
    transit = m.prepare_increment_producer_epoch(1000, None, now_ms=1)
    assert transit is not None and transit.producer_epoch == 0
    with pytest.raises(IllegalTransactionStateError, match="pending state Empty"):
        m.prepare_add_partitions(frozenset({TP0}), 2)  # one pending transition at a time
    m.complete_transition_to(transit)
    assert (m.state, m.producer_epoch, m.pending_state) == (S.EMPTY, 0, None)
    m.complete_transition_to(m.prepare_add_partitions(frozenset({TP0}), 5))
    m.complete_transition_to(m.prepare_add_partitions(frozenset({TP1}), 6))
    assert m.state is S.ONGOING and m.topic_partitions == {TP0, TP1} and m.txn_start_timestamp == 5
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 7))
    assert m.state is S.PREPARE_COMMIT and m.topic_partitions == {TP0, TP1}
    m.complete_transition_to(m.prepare_complete(8))
    assert m.state is S.COMPLETE_COMMIT and not m.topic_partitions
    assert m.txn_last_update_timestamp == 8


def test_fencing_bumps_the_epoch_and_allows_only_an_abort() -> None:
    m = _new(3)
    m.state = S.ONGOING
    m.topic_partitions = {TP0}
    transit = m.prepare_fence_producer_epoch()
    assert transit.txn_state is S.PREPARE_EPOCH_FENCE and transit.producer_epoch == 4
    assert m.pending_state is S.PREPARE_EPOCH_FENCE
    with pytest.raises(IllegalTransactionStateError):
        m.complete_transition_to(transit)  # a fence is never written as such


def test_expected_epoch_decides_between_bump_retry_and_fenced() -> None:
    m = _new(5)
    m.last_producer_epoch = 4
    bumped = m.prepare_increment_producer_epoch(1000, 5, 1)
    assert bumped is not None and (bumped.producer_epoch, bumped.last_producer_epoch) == (6, 5)
    m.pending_state = None
    retry = m.prepare_increment_producer_epoch(1000, 4, 1)
    assert retry is not None and (retry.producer_epoch, retry.last_producer_epoch) == (5, 4)
    m.pending_state = None
    assert m.prepare_increment_producer_epoch(1000, 2, 1) is None


def test_rotation_gives_a_new_producer_id_with_epoch_0() -> None:
    m = _new(32766)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransactionStateError, match="Cannot allocate"):
        m.prepare_increment_producer_epoch(1000, None, 1)
    transit = m.prepare_producer_id_rotation(11, 1000, 2, record_last_epoch=True)
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_id, m.last_producer_epoch) == (
        11,
        0,
        10,
        32766,
    )


def test_keeping_a_prepared_transaction_bumps_the_epoch_and_remembers_the_first() -> None:
    m = TransactionMetadata("tx", producer_id=10, producer_epoch=3,
                            txn_timeout_ms=TWO_PHASE_COMMIT_TIMEOUT_MS, state=S.ONGOING,
                            topic_partitions={TP0}, txn_start_timestamp=5)  # fmt: skip
    for owner_epoch in (4, 5):
        transit = m.prepare_keep_prepared_txn(now_ms=10)
        assert (transit.txn_state, transit.producer_epoch) == (S.ONGOING, owner_epoch)
        assert transit.ongoing_txn_producer_epoch == 3
        m.complete_transition_to(transit)
        assert (m.producer_epoch, m.ongoing_txn_producer_epoch, m.topic_partitions) == (
            owner_epoch,
            3,
            {TP0},
        )
    commit = m.prepare_abort_or_commit(S.PREPARE_COMMIT, now_ms=11)
    assert commit.ongoing_txn_producer_epoch == 3
    m.complete_transition_to(commit)
    m.complete_transition_to(m.prepare_complete(now_ms=12))
    assert (m.state, m.ongoing_txn_producer_epoch, m.producer_epoch) == (S.COMPLETE_COMMIT, -1, 5)


def test_only_an_open_two_phase_commit_transaction_is_kept() -> None:
    ordinary = TransactionMetadata("tx", producer_id=10, producer_epoch=3, txn_timeout_ms=1000,
                                   state=S.ONGOING, topic_partitions={TP0})  # fmt: skip
    with pytest.raises(IllegalTransactionStateError, match="only an open two-phase-commit"):
        ordinary.prepare_keep_prepared_txn(now_ms=1)
    idle = _new(3)
    idle.txn_timeout_ms = TWO_PHASE_COMMIT_TIMEOUT_MS
    with pytest.raises(IllegalTransactionStateError, match="state Empty"):
        idle.prepare_keep_prepared_txn(now_ms=1)
    assert ordinary.pending_state is None and idle.pending_state is None
