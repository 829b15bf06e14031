"""Tests of LazyOffsetCheckpoints: each dir's replication-offset-checkpoint read once until
cleared or forgotten, an unreadable file read as empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.server.lazy_offset_checkpoints import (
    HIGH_WATERMARK_CHECKPOINT_FILE,
    LazyOffsetCheckpoints,
)
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

TP = TopicPartition("t", 0)


def test_a_dir_is_read_once_until_cleared_or_forgotten(tmp_path: Path) -> None:
    file = OffsetCheckpointFile(tmp_path / HIGH_WATERMARK_CHECKPOINT_FILE)
    file.write({TP: 5})
    checkpoints = LazyOffsetCheckpoints(component_logger("test"))
    assert checkpoints.fetch(tmp_path, TP) == 5
    assert checkpoints.fetch(tmp_path, TopicPartition("t", 1)) is None
    file.write({TP: 7})
    assert checkpoints.fetch(tmp_path, TP) == 5  # read once
    checkpoints.clear()
    assert checkpoints.fetch(tmp_path, TP) == 7
    file.write({TP: 9})
    checkpoints.forget(tmp_path)
    assert checkpoints.fetch(tmp_path, TP) == 9


def test_an_unreadable_file_reads_as_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / HIGH_WATERMARK_CHECKPOINT_FILE).write_text("not a checkpoint\n")
    checkpoints = LazyOffsetCheckpoints(component_logger("test"))
    assert checkpoints.fetch(tmp_path, TP) is None
    assert f"Error while reading {HIGH_WATERMARK_CHECKPOINT_FILE} in {tmp_path}" in caplog.text
