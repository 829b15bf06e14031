"""MetadataDatabase on its own: transactions all-or-nothing with the watch events they
caused, the directory lock, a previous run's ephemerals, and a closed database."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.time import MockTime
from kafpy.metadata.errors import ConnectionLossError, MetadataStoreError, NodeExistsError
from kafpy.metadata.metadata_database import MetadataDatabase, Transaction
from kafpy.metadata.store import EventType


def test_a_write_returns_its_result_and_the_watch_events_it_caused() -> None:
    database = MetadataDatabase(None, MockTime())
    path, fired = database.transact(1, lambda txn: txn.create("/a", b"x"), write=True)
    assert path == "/a"
    assert (fired.data, fired.child) == ([("/a", EventType.CREATED)], ["/"])
    children, fired = database.transact(1, lambda txn: txn.children("/"), write=False)
    assert (children, fired.data, fired.child) == (["a"], [], [])
    database.close()


def test_a_failed_transaction_leaves_nothing() -> None:
    database = MetadataDatabase(None, MockTime())

    def two_creates(txn: Transaction) -> None:
        txn.create("/b", b"")
        txn.create("/b", b"")

    with pytest.raises(NodeExistsError):
        database.transact(1, two_creates, write=True)
    assert database.transact(1, lambda txn: txn.node("/b"), write=False)[0] is None
    database.close()


def test_ephemerals_of_a_previous_run_are_deleted_on_open(tmp_path: Path) -> None:
    database = MetadataDatabase(tmp_path, MockTime())
    session = database.new_session_id()
    database.transact(session, lambda txn: txn.create("/e", b"", ephemeral=True), write=True)
    database.transact(session, lambda txn: txn.create("/p", b""), write=True)
    database.close()  # without ending the session: as a process that died
    reopened = MetadataDatabase(tmp_path, MockTime())
    assert reopened.transact(0, lambda txn: txn.children("/"), write=False)[0] == ["p"]
    assert reopened.new_session_id() > session
    reopened.close()


def test_one_opener_of_a_directory_at_a_time(tmp_path: Path) -> None:
    database = MetadataDatabase(tmp_path, MockTime())
    with pytest.raises(MetadataStoreError, match="in use by another process"):
        MetadataDatabase(tmp_path, MockTime())
    database.close()
    MetadataDatabase(tmp_path, MockTime()).close()


def test_a_closed_database_refuses_transactions() -> None:
    database = MetadataDatabase(None, MockTime())
    database.close()
    assert database.is_closed
    with pytest.raises(ConnectionLossError, match="in memory is closed"):
        database.transact(1, lambda txn: txn.node("/"), write=False)
