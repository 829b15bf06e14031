"""Tests for OffsetCheckpointFile: Kafka's byte format, atomic writes, malformed files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafpy.common.errors import KafkaStorageError
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.offset_checkpoint_file import (
    CheckpointFile,
    MalformedCheckpointError,
    OffsetCheckpointFile,
)


def test_write_produces_kafkas_bytes(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    f.write({TopicPartition("topic_test1", 6): 0, TopicPartition("my-topic", 13): 42})
    assert f.path.read_bytes() == b"0\n2\ntopic_test1 6 0\nmy-topic 13 42\n"
    assert not f.tmp_path.exists()


def test_round_trip(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(tmp_path / "cp")
    offsets = {TopicPartition(f"t.{i}-x", i): i * 1000 for i in range(50)}
    f.write(offsets)
    assert f.read() == offsets
    f.write({})
    assert f.read() == {}
    assert f.path.read_bytes() == b"0\n0\n"


def test_reads_a_file_kafka_wrote(tmp_path: Path) -> None:
    p = tmp_path / "cp"
    p.write_bytes(b"0\n3\n__consumer_offsets 12 0\nt 0 100\nt 1 7\n")
    assert OffsetCheckpointFile(p).read() == {
        TopicPartition("__consumer_offsets", 12): 0,
        TopicPartition("t", 0): 100,
        TopicPartition("t", 1): 7,
    }


def test_missing_file_reads_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "nope").read() == {}


def test_write_replaces_atomically_over_old_file(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(tmp_path / "cp")
    f.write({TopicPartition("a", 0): 1})
    inode_before = os.stat(f.path).st_ino
    f.write({TopicPartition("a", 0): 2})
    assert f.read() == {TopicPartition("a", 0): 2}
    # a rename, not an in-place rewrite
    assert os.stat(f.path).st_ino != inode_before


def test_leftover_tmp_file_is_ignored_and_overwritten(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(tmp_path / "cp")
    f.tmp_path.write_bytes(b"garbage")
    f.write({TopicPartition("a", 0): 5})
    assert f.read() == {TopicPartition("a", 0): 5}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"1\n0\n", "Unrecognized version of the checkpoint file .* at line 1: '1'"),
        (b"x\n", "Unrecognized version"),
        (b"0\n", "has no entry count at line 2"),
        (b"0\nabc\n", "Malformed entry count .* at line 2: 'abc'"),
        (b"0\n2\nt 0 1\n", "Expected 2 entries .*, but found 1"),
        (b"0\n1\nt 0 1\nt 1 2\n", "Expected 1 entries .*, but found 2"),
        (b"0\n2\nt 0 1\nt 1\n", "Malformed line .* at line 4: 't 1'"),
        (b"0\n1\nt x 1\n", "at line 3: 't x 1'"),
        (b"0\n1\nt 0 1.5\n", "at line 3"),
        (b"0\n1\nt -1 5\n", "at line 3"),
        (b"0\n1\nt\xff\xfe 0 5\n", "is not UTF-8 text: byte 5 at line 3"),
        (b"\x80\n0\n", "is not UTF-8 text: byte 0 at line 1"),
        ("0\n\u00b2\n".encode(), "Malformed entry count"),
        (b"0\n1\nt 0 1_000\n", "at line 3"),
        ("0\n1\nt \u0663 5\n".encode(), "at line 3"),
        (b"0\n1\nt 0 5 6\n", "at line 3"),
    ],
)
def test_malformed_files(tmp_path: Path, content: bytes, message: str) -> None:
    p = tmp_path / "recovery-point-offset-checkpoint"
    p.write_bytes(content)
    with pytest.raises(MalformedCheckpointError, match=message) as e:
        OffsetCheckpointFile(p).read()
    assert str(p) in str(e.value)
    assert isinstance(e.value, KafkaStorageError)


def test_write_error_is_storage_error(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(tmp_path / "missing-dir" / "cp")
    with pytest.raises(KafkaStorageError, match="Error while writing to checkpoint file"):
        f.write({TopicPartition("a", 0): 1})


def test_generic_checkpoint_file(tmp_path: Path) -> None:
    def parse(line: str) -> tuple[int, int] | None:
        a, b = line.split()
        return int(a), int(b)

    f: CheckpointFile[int, int] = CheckpointFile(
        tmp_path / "leader-epoch-checkpoint", 0, lambda k, v: f"{k} {v}", parse
    )
    f.write({0: 0, 3: 120})
    assert f.path.read_bytes() == b"0\n2\n0 0\n3 120\n"
    assert f.read() == {0: 0, 3: 120}
