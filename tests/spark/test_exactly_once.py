"""The exactly-once sink's bookkeeping without Spark or a broker: transactional ids, the
group offsets that mark a batch committed, and PreparedTxnState's text form."""

from __future__ import annotations

import pytest

from kafpy.client.consumer_group_metadata import OffsetAndMetadata
from kafpy.client.transaction_manager import PreparedTxnState
from kafpy.common.topic_partition import TopicPartition
from kafpy.spark.errors import OptionError
from kafpy.spark.exactly_once import TaskTransaction, is_committed, markers_of, new_batch_write


def test_transactional_ids_follow_the_prefix_or_the_query_id() -> None:
    txn = TaskTransaction.for_micro_batch("app", 3, batch_id="7", query_id="q")
    assert txn == TaskTransaction("app-3", 7, streaming=True, query_id="q")
    txn = TaskTransaction.for_micro_batch(None, 0, batch_id="0", query_id="abc")
    assert txn.transactional_id == "kafpy-sink-abc-0"
    for prefix in (None, "app"):
        with pytest.raises(OptionError, match="knows no streaming query id"):
            TaskTransaction.for_micro_batch(prefix, 0, batch_id="0", query_id=None)
    with pytest.raises(OptionError, match="no micro-batch id"):
        TaskTransaction.for_micro_batch("app", 0, batch_id=None, query_id="q")


def test_a_batch_is_committed_once_the_group_offset_reaches_it() -> None:
    b5 = TaskTransaction("t-0", 5, streaming=True)
    assert not is_committed(set(), b5)
    assert not is_committed({4}, b5)
    assert is_committed({5}, b5) and is_committed({3, 6}, b5)
    prefix, token = new_batch_write()
    assert prefix.startswith("kafpy-sink-") and token > 0
    job = TaskTransaction(f"{prefix}-0", token, streaming=False)
    assert is_committed({token}, job)
    assert not is_committed({token + 1}, job)  # another job's token, even a higher one


def test_only_the_offsets_of_the_same_query_count() -> None:
    """A query started again without its checkpoint (a new query id, batch ids from 0)
    must not take the old query's offsets for its own commits."""
    txn = TaskTransaction.for_micro_batch("app", 0, batch_id="1", query_id="new")
    tp, other = TopicPartition("t", 0), TopicPartition("u", 0)
    ours = {tp: OffsetAndMetadata(1, "kafpy-sink query new batch 1")}
    theirs = {other: OffsetAndMetadata(5, "kafpy-sink query old batch 5")}
    assert markers_of({**ours, **theirs}, txn) == {1}
    assert markers_of(theirs, txn) == set()
    assert not is_committed(markers_of(theirs, txn), txn)
    assert markers_of({tp: OffsetAndMetadata(5, None)}, txn) == set()
    job = TaskTransaction("j-0", 77, streaming=False)
    assert markers_of({tp: OffsetAndMetadata(77, "kafpy-sink job 77")}, job) == {77}


def test_prepared_txn_state_text() -> None:
    assert str(PreparedTxnState(42, 3)) == "42:3"
    assert PreparedTxnState.parse("42:3") == PreparedTxnState(42, 3)
    assert str(PreparedTxnState()) == "" and PreparedTxnState.parse("") == PreparedTxnState()
    with pytest.raises(ValueError, match="expected producerId:epoch"):
        PreparedTxnState.parse("42")
