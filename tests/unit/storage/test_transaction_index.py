"""TransactionIndex: the 34-byte aborted-transaction entries of `.txnindex`."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafpy.storage.abstract_index import CorruptIndexError
from kafpy.storage.transaction_index import AbortedTxn, TransactionIndex
from tests.fixtures.file_descriptors import open_paths


def test_file_format_and_lazy_creation(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    assert not path.exists()
    idx.append(AbortedTxn(producer_id=7, first_offset=3, last_offset=9, last_stable_offset=2))
    idx.close()
    assert path.read_bytes() == struct.pack(">hqqqq", 0, 7, 3, 9, 2)
    assert len(path.read_bytes()) == 34


def test_append_requires_increasing_last_offset(tmp_path: Path) -> None:
    idx = TransactionIndex(0, tmp_path / "a.txnindex")
    idx.append(AbortedTxn(1, 0, 10, 0))
    with pytest.raises(ValueError, match="must increase"):
        idx.append(AbortedTxn(2, 5, 10, 0))
    idx.close()
    reopened = TransactionIndex(0, tmp_path / "a.txnindex")
    with pytest.raises(ValueError, match="must increase"):
        reopened.append(AbortedTxn(2, 5, 8, 0))


def test_collect_aborted_txns(tmp_path: Path) -> None:
    idx = TransactionIndex(0, tmp_path / "a.txnindex")
    txns = [AbortedTxn(1, 0, 10, 11), AbortedTxn(2, 5, 20, 21), AbortedTxn(3, 30, 40, 50)]
    for t in txns:
        idx.append(t)
    result = idx.collect_aborted_txns(fetch_offset=12, upper_bound_offset=35)
    assert result.aborted_transactions == txns[1:]
    assert result.is_complete  # the last txn's LSO 50 >= 35
    result = idx.collect_aborted_txns(fetch_offset=0, upper_bound_offset=100)
    assert result.aborted_transactions == txns and not result.is_complete


def test_truncate_and_reset(tmp_path: Path) -> None:
    idx = TransactionIndex(0, tmp_path / "a.txnindex")
    for i in range(5):
        idx.append(AbortedTxn(i, 10 * i, 10 * i + 5, 0))
    idx.truncate_to(25)
    assert [t.producer_id for t in idx.all_aborted_txns()] == [0, 1]
    idx.append(AbortedTxn(9, 30, 35, 0))
    assert [t.producer_id for t in idx.all_aborted_txns()] == [0, 1, 9]
    idx.reset()
    assert idx.all_aborted_txns() == []


def test_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "a.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 1, 0, 5, 0))
    with pytest.raises(CorruptIndexError, match="less than start offset"):
        TransactionIndex(10, path).sanity_check()
    path.write_bytes(b"\x00" * 35)
    with pytest.raises(CorruptIndexError, match="multiple of 34"):
        TransactionIndex(0, path).sanity_check()


def test_an_index_holds_no_descriptor_between_writes(tmp_path: Path) -> None:
    indexes = [TransactionIndex(0, tmp_path / f"{i}.txnindex") for i in range(10)]
    for i, idx in enumerate(indexes):
        idx.append(AbortedTxn(producer_id=i, first_offset=0, last_offset=5, last_stable_offset=0))
        idx.flush()
    reopened = [TransactionIndex(0, idx.file) for idx in indexes]
    assert [idx.all_aborted_txns()[0].producer_id for idx in reopened] == list(range(10))
    # counted by what they name: other threads of the process open and close files meanwhile
    assert open_paths(tmp_path) == []
