"""Producer snapshot files: Kafka's bytes, and damaged files found corrupt."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kafpy.storage.producer_snapshot_file import (
    CorruptSnapshotError,
    producer_snapshot_file,
    read_snapshot,
    write_snapshot,
)
from kafpy.storage.producer_state_entry import BatchMetadata, ProducerStateEntry

from .segment_fixtures import T0

PID = 1000


def test_snapshot_bytes_are_kafkas_format(tmp_path: Path) -> None:
    entry = ProducerStateEntry(PID, [BatchMetadata(4, 41, 2, T0 + 5)], 3, 7, T0 + 5, 39)
    path = producer_snapshot_file(tmp_path, 42)
    assert path.name == "00000000000000000042.snapshot"
    write_snapshot(path, [entry])
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", PID, 3, 4, 41, 2, T0 + 5, 7, 39)
    assert path.read_bytes() == struct.pack(">hI", 1, crc32c(body)) + body
    [loaded] = read_snapshot(path)
    assert (loaded.producer_id, loaded.producer_epoch, loaded.coordinator_epoch) == (PID, 3, 7)
    assert list(loaded.batch_metadata) == [BatchMetadata(4, 41, 2, T0 + 5)]
    assert (loaded.last_timestamp, loaded.current_txn_first_offset) == (T0 + 5, 39)


def test_snapshot_of_a_producer_without_batches(tmp_path: Path) -> None:
    path = producer_snapshot_file(tmp_path, 1)
    write_snapshot(path, [ProducerStateEntry(PID, [], 2, 1, T0)])
    [loaded] = read_snapshot(path)
    assert (
        loaded.is_empty and loaded.producer_epoch == 2 and loaded.current_txn_first_offset is None
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[:-1],  # torn
        lambda b: b[:4],  # shorter than the header
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # bit flip: CRC
        lambda b: struct.pack(">h", 2) + b[2:],  # unknown version
        lambda b: b"",
    ],
)
def test_damaged_snapshot_is_corrupt(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = producer_snapshot_file(tmp_path, 5)
    write_snapshot(path, [ProducerStateEntry(PID, [BatchMetadata(0, 4, 0, T0)], 0)])
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(path)
