"""Tests of LeaderEpochFileCache: assignment, end offsets per epoch, truncation, the checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.leader_epoch_file_cache import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    EpochEntry,
    LeaderEpochFileCache,
)
from kafpy.storage.offset_checkpoint_file import MalformedCheckpointError

TP = TopicPartition("t", 0)


def _cache(tmp_path: Path) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(TP, lambda: tmp_path)


def test_assign_writes_kafka_checkpoint_format_and_reloads(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.assign(0, 0)
    cache.assign(2, 10)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).read_text() == "0\n2\n0 0\n2 10\n"
    again = _cache(tmp_path)
    assert again.entries == [EpochEntry(0, 0), EpochEntry(2, 10)]
    assert again.latest_epoch == 2


def test_assign_same_epoch_later_offset_is_a_no_op(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.assign(1, 5)
    cache.assign(1, 9)
    assert cache.entries == [EpochEntry(1, 5)]


def test_assign_removes_conflicting_entries(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.assign(1, 5)
    cache.assign(3, 10)
    cache.assign(2, 8)  # epoch 3 >= 2 goes
    assert cache.entries == [EpochEntry(1, 5), EpochEntry(2, 8)]
    cache.assign(4, 6)  # start offset 8 >= 6 goes
    assert cache.entries == [EpochEntry(1, 5), EpochEntry(4, 6)]


def test_assign_rejects_negative_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must both be non-negative"):
        _cache(tmp_path).assign(-1, 0)


def test_end_offset_for(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    assert cache.end_offset_for(0, 100) == (-1, -1)
    cache.assign(1, 5)
    cache.assign(3, 10)
    cache.assign(5, 20)
    assert cache.end_offset_for(5, 100) == (5, 100)  # latest: the log end offset
    assert cache.end_offset_for(3, 100) == (3, 20)
    assert cache.end_offset_for(4, 100) == (3, 20)  # unknown epoch between: floor epoch
    assert cache.end_offset_for(0, 100) == (0, 5)  # older than all
    assert cache.end_offset_for(6, 100) == (-1, -1)  # newer than all
    assert cache.end_offset_for(-1, 100) == (-1, -1)


def test_epoch_for_offset(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.assign(1, 5)
    cache.assign(3, 10)
    assert cache.epoch_for_offset(4) is None
    assert cache.epoch_for_offset(5) == 1
    assert cache.epoch_for_offset(9) == 1
    assert cache.epoch_for_offset(10) == 3


def test_truncate_from_end_and_start(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    for e, o in ((1, 0), (2, 10), (3, 20)):
        cache.assign(e, o)
    cache.truncate_from_end(25)
    assert len(cache.entries) == 3
    cache.truncate_from_end(10)
    assert cache.entries == [EpochEntry(1, 0)]
    cache.assign(2, 10)
    cache.assign(3, 20)
    cache.truncate_from_start(15)
    assert cache.entries == [EpochEntry(2, 15), EpochEntry(3, 20)]
    assert _cache(tmp_path).entries == [EpochEntry(2, 15), EpochEntry(3, 20)]
    cache.clear_and_flush()
    assert _cache(tmp_path).entries == []


def test_follows_the_directory_when_it_moves(tmp_path: Path) -> None:
    where = {"dir": tmp_path / "a"}
    where["dir"].mkdir()
    cache = LeaderEpochFileCache(TP, lambda: where["dir"])
    cache.assign(0, 0)
    (tmp_path / "a").rename(tmp_path / "b")
    where["dir"] = tmp_path / "b"
    cache.assign(1, 3)
    assert (tmp_path / "b" / LEADER_EPOCH_CHECKPOINT_FILE).read_text() == "0\n2\n0 0\n1 3\n"


def test_malformed_checkpoint_names_the_file(tmp_path: Path) -> None:
    (tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).write_text("0\n1\nzero 0\n")
    with pytest.raises(MalformedCheckpointError, match="leader-epoch-checkpoint at line 3"):
        _cache(tmp_path)
