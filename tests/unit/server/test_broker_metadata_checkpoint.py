"""Tests of meta.properties handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.errors import InconsistentBrokerMetadataError
from kafpy.server.broker_metadata_checkpoint import (
    BrokerMetadata,
    BrokerMetadataCheckpoint,
    check_broker_metadata,
)


def test_write_then_read(tmp_path: Path) -> None:
    cp = BrokerMetadataCheckpoint(tmp_path / "meta.properties")
    assert cp.read() is None
    cp.write(BrokerMetadata(3, "abc"))
    assert cp.read() == BrokerMetadata(3, "abc")
    assert "version=0\nbroker.id=3\ncluster.id=abc\n" in (tmp_path / "meta.properties").read_text()


def test_check_writes_missing_and_rejects_mismatch(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    check_broker_metadata([a, b], 1)
    assert BrokerMetadataCheckpoint(b / "meta.properties").read() == BrokerMetadata(1)
    with pytest.raises(
        InconsistentBrokerMetadataError,
        match="Configured broker.id 2 doesn't match stored broker.id 1",
    ):
        check_broker_metadata([a, b], 2)


def test_dirs_disagreeing_are_rejected(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    BrokerMetadataCheckpoint(a / "meta.properties").write(BrokerMetadata(1))
    BrokerMetadataCheckpoint(b / "meta.properties").write(BrokerMetadata(2))
    with pytest.raises(
        InconsistentBrokerMetadataError, match="Failed to match broker.id across log.dirs"
    ):
        check_broker_metadata([a, b], 1)


def test_bad_version_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=7\nbroker.id=1\n")
    with pytest.raises(InconsistentBrokerMetadataError, match="Unrecognized version"):
        BrokerMetadataCheckpoint(tmp_path / "meta.properties").read()


def test_cluster_id_written_and_checked(tmp_path: Path) -> None:
    check_broker_metadata([tmp_path], 0, "cluster-a")
    assert BrokerMetadataCheckpoint(tmp_path / "meta.properties").read() == BrokerMetadata(
        0, "cluster-a"
    )
    check_broker_metadata([tmp_path], 0, "cluster-a")
    with pytest.raises(InconsistentBrokerMetadataError, match="trying to join the wrong cluster"):
        check_broker_metadata([tmp_path], 0, "cluster-b")
