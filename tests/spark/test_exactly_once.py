"""The exactly-once sink's bookkeeping without Spark or a broker: transactional ids, the
group offsets that mark a batch committed, and PreparedTxnState's text form."""

from __future__ import annotations

import pytest

from kafpy.client.transaction_manager import PreparedTxnState
from kafpy.spark.errors import OptionError
from kafpy.spark.exactly_once import TaskTransaction, is_committed, new_batch_write


def test_transactional_ids_follow_the_prefix_or_the_query_id() -> None:
    txn = TaskTransaction.for_micro_batch("app", 3, batch_id="7", query_id="q")
    assert txn == TaskTransaction("app-3", 7, streaming=True)
    txn = TaskTransaction.for_micro_batch(None, 0, batch_id="0", query_id="abc")
    assert txn.transactional_id == "kafpy-sink-abc-0"
    with pytest.raises(OptionError, match="set .*transactionalIdPrefix"):
        TaskTransaction.for_micro_batch(None, 0, batch_id="0", query_id=None)
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


def test_prepared_txn_state_text() -> None:
    assert str(PreparedTxnState(42, 3)) == "42:3"
    assert PreparedTxnState.parse("42:3") == PreparedTxnState(42, 3)
    assert str(PreparedTxnState()) == "" and PreparedTxnState.parse("") == PreparedTxnState()
    with pytest.raises(ValueError, match="expected producerId:epoch"):
        PreparedTxnState.parse("42")
