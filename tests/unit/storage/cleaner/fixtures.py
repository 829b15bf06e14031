"""Helpers for the cleaner tests: compacted logs written key by key, read back whole."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kafpy.common.topic_partition import TopicPartition
from kafpy.records import CompressionType, MemoryRecords, Record, RecordBatch, build_batch
from kafpy.storage.cleaner.cleaner import Cleaner
from kafpy.storage.cleaner.log_to_clean import LogToClean
from kafpy.storage.cleaner.offset_map import SkimpyOffsetMap
from kafpy.storage.cleaner.throttler import Throttler
from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig

from ..segment_fixtures import T0, Clock, open_log

__all__ = ["T0", "Clock", "compacted_config", "make_cleaner", "open_log"]

KV = tuple[bytes | None, bytes | None]


def compacted_config(**kw: object) -> LogConfig:
    kw.setdefault("segment_bytes", 1024)
    kw.setdefault("index_interval_bytes", 128)
    kw.setdefault("segment_index_bytes", 4096)
    kw.setdefault("file_delete_delay_ms", 0)
    kw.setdefault("cleanup_policy", ["compact"])
    return LogConfig(**kw)  # type: ignore[arg-type]


def append(
    log: Log,
    pairs: Sequence[KV],
    timestamp: int = T0,
    compression: CompressionType = CompressionType.NONE,
    **kw: object,
) -> int:
    """Append one batch of (key, value) pairs; returns its first offset."""
    data = build_batch(list(pairs), timestamp=timestamp, compression=compression, **kw)  # type: ignore[arg-type]
    return log.append_as_leader(MemoryRecords(bytearray(data)), 0).first_offset


def write_each(log: Log, pairs: Iterable[KV], per_batch: int = 1, **kw: object) -> list[int]:
    """Append the pairs `per_batch` at a time; returns every record's offset."""
    pairs = list(pairs)
    out: list[int] = []
    for i in range(0, len(pairs), per_batch):
        chunk = pairs[i : i + per_batch]
        first = append(log, chunk, **kw)
        out.extend(range(first, first + len(chunk)))
    return out


def batches(log: Log) -> list[RecordBatch]:
    out: list[RecordBatch] = []
    for s in log.log_segments():
        data = MemoryRecords(s.log.read(0, s.size))
        out.extend(data.batches_allow_partial())
    return out


def all_records(log: Log) -> list[Record]:
    return [r for b in batches(log) if not b.is_control for r in b.records()]


def read_through_log(log: Log) -> list[Record]:
    """Every record, read with Log.read from the log start offset (as a consumer would)."""
    out: list[Record] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        got = [b for b in data.batches_allow_partial()]
        if not got:
            break
        for b in got:
            out.extend(r for r in b.records() if r.offset >= offset)
        offset = got[-1].next_offset
    return out


def key_map(records: Iterable[Record]) -> dict[bytes | None, bytes | None]:
    """The final value of each key (a tombstone removes the key)."""
    m: dict[bytes | None, bytes | None] = {}
    for r in records:
        if r.value is None:
            m.pop(r.key, None)
        else:
            m[r.key] = r.value
    return m


def make_cleaner(
    memory: int = 64 * 1024,
    load_factor: float = 0.75,
    io_buffer_size: int = 4096,
    check_done: object = None,
    clock: Clock | None = None,
) -> Cleaner:
    clock = clock or Clock()
    return Cleaner(
        0,
        SkimpyOffsetMap(memory, "md5", load_factor),
        io_buffer_size,
        1 << 20,
        load_factor,
        Throttler(1e300, 300, clock.time),
        clock.time,
        check_done or (lambda tp: None),  # type: ignore[arg-type]
    )


def to_clean(
    log: Log, first_dirty: int | None = None, first_uncleanable: int | None = None
) -> LogToClean:
    return LogToClean(
        TopicPartition("t", 0),
        log,
        log.log_start_offset if first_dirty is None else first_dirty,
        log.active_segment.base_offset if first_uncleanable is None else first_uncleanable,
    )


def tmp_log(tmp_path: Path, clock: Clock, **kw: object) -> Log:
    return open_log(tmp_path / "t-0", clock, compacted_config(**kw))
