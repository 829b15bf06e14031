"""Producer snapshot files: `<20-digit offset>.snapshot`, the producer state of a
partition at an offset, in Kafka's format (Kafka's SnapshotFile and the snapshot codec
of its ProducerStateManager).

Snapshot file (big-endian)::

    version int16 (1), crc uint32 (CRC-32C of everything after it),
    count int32, then per producer:
      producerId int64, epoch int16, lastSequence int32, lastOffset int64,
      offsetDelta int32, timestamp int64, coordinatorEpoch int32,
      currentTxnFirstOffset int64 (-1: none)

Only each producer's last batch is in a snapshot (as in Kafka).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

from crc32c import crc32c

from kafpy.common.errors import (
    KafkaError,
)
from kafpy.storage.producer_state_entry import (
    BatchMetadata,
    ProducerStateEntry,
)

PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
PRODUCER_SNAPSHOT_VERSION = 1

_SNAPSHOT_HEADER = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_ENTRIES_OFFSET = _SNAPSHOT_HEADER.size  # the CRC covers the bytes from here


def producer_snapshot_file(log_dir: Path, offset: int) -> Path:
    """`<log_dir>/<20-digit offset>.snapshot`."""
    return log_dir / f"{offset:020d}{PRODUCER_SNAPSHOT_FILE_SUFFIX}"


def _snapshot_offset(name: str) -> int | None:
    if not name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX):
        return None
    prefix = name[: -len(PRODUCER_SNAPSHOT_FILE_SUFFIX)]
    return int(prefix) if prefix.isdigit() else None


def snapshots_in(file_names: Iterable[str]) -> dict[int, str]:
    """offset -> name of the snapshot files among `file_names`."""
    snapshots = {}
    for name in file_names:
        offset = _snapshot_offset(name)
        if offset is not None:
            snapshots[offset] = name
    return snapshots


class CorruptSnapshotError(KafkaError):
    """A producer snapshot file cannot be read; it is deleted and the state rebuilt."""


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], sync: bool = False) -> None:
    """Write `entries` to `path` in Kafka's producer snapshot format."""
    items = list(entries)
    body = bytearray(_COUNT.size + _ENTRY.size * len(items))
    _COUNT.pack_into(body, 0, len(items))
    pos = _COUNT.size
    for e in items:
        txn_first = e.current_txn_first_offset
        _ENTRY.pack_into(
            body, pos,
            e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
            e.last_timestamp, e.coordinator_epoch, -1 if txn_first is None else txn_first,
        )  # fmt: skip
        pos += _ENTRY.size
    data = _SNAPSHOT_HEADER.pack(PRODUCER_SNAPSHOT_VERSION, crc32c(body)) + bytes(body)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    """The entries of a snapshot file; CorruptSnapshotError if it is not a valid one."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CorruptSnapshotError(f"Cannot read producer snapshot {path}: {e}") from e
    if len(data) < _ENTRIES_OFFSET + _COUNT.size:
        raise CorruptSnapshotError(
            f"Producer snapshot {path} has {len(data)} bytes, too few for its header"
        )
    version, crc = _SNAPSHOT_HEADER.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot {path} contained an unknown file version {version}")
    computed = crc32c(data[_ENTRIES_OFFSET:])
    if computed != crc:
        raise CorruptSnapshotError(
            f"Snapshot {path} is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    (count,) = _COUNT.unpack_from(data, _ENTRIES_OFFSET)
    expected = _ENTRIES_OFFSET + _COUNT.size + count * _ENTRY.size
    if count < 0 or expected != len(data):
        raise CorruptSnapshotError(
            f"Snapshot {path} says it holds {count} producers but has {len(data)} bytes"
        )
    entries = []
    for values in _ENTRY.iter_unpack(data[_ENTRIES_OFFSET + _COUNT.size :]):
        pid, epoch, seq, offset, delta, timestamp, coordinator_epoch, txn_first = values
        batches = [BatchMetadata(seq, offset, delta, timestamp)] if offset >= 0 else []
        entries.append(
            ProducerStateEntry(
                pid,
                batches,
                epoch,
                coordinator_epoch,
                timestamp,
                txn_first if txn_first >= 0 else None,
            )
        )
    return entries
