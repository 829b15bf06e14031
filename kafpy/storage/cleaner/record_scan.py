"""Key-only record scanning and batch filtering for the cleaner.

The cleaner needs, per record, only its offset, timestamp, key and whether its value
is null. `scan_records` reads just those fields from a batch's (decompressed) records
section and remembers where each record's bytes lie; `filter_batch` then writes a
batch holding only the records kept by splicing their bytes, unchanged, after a patched
copy of the original header (same base offset, first timestamp, lastOffsetDelta,
producer fields and codec; new length, count, maxTimestamp and CRC). Records are never
re-encoded.

A message of format v0/v1 (a log whose message.format.version is, or was, below
0.11.0) is scanned with `scan_legacy` and rewritten with `filter_legacy` in its own
magic, codec and timestamp type, as Kafka's MemoryRecords.filterTo does for legacy
batches: the kept messages of a compressed wrapper go into a new wrapper.
"""

from __future__ import annotations

import struct
from functools import partial
from typing import NamedTuple

from crc32c import crc32c

from kafpy.common.errors import CorruptRecordError, MessageTooLargeError
from kafpy.records.compression import (
    MAX_DECOMPRESSED_BATCH_BYTES,
    CompressionType,
    compress,
    decompress,
    decompressed_limit,
)
from kafpy.records.legacy_record import build_message_set, iter_legacy_records
from kafpy.records.record_batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    FIRST_TIMESTAMP_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    RecordBatch,
)
from kafpy.records.varint import decode_varlong

_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")


class ScannedRecord(NamedTuple):
    """Where one record lies in its batch's records section, and what the cleaner needs."""

    start: int
    end: int
    offset: int
    timestamp: int
    key: bytes | None
    null_value: bool


def records_section(batch: RecordBatch, max_message_bytes: int | None = None) -> bytes:
    """The batch's records, decompressed within decompressed_limit (the produce path's
    bound; MAX_DECOMPRESSED_BATCH_BYTES without a `max_message_bytes`)."""
    body = batch.buffer()[RECORD_BATCH_OVERHEAD:]
    codec = batch.compression_type
    if codec is CompressionType.NONE:
        return bytes(body)
    if max_message_bytes is None:
        limit = MAX_DECOMPRESSED_BATCH_BYTES
    else:
        limit = decompressed_limit(batch.record_count, max_message_bytes)
    try:
        return decompress(codec, body, limit)
    except (CorruptRecordError, MessageTooLargeError) as exc:
        raise type(exc)(f"Record batch at base offset {batch.base_offset}: {exc}") from None


def scan_records(batch: RecordBatch, data: bytes) -> list[ScannedRecord]:
    """Offset, timestamp, key and null-value flag of every record in `data` (see module)."""
    base_offset = batch.base_offset
    first_ts = batch.first_timestamp
    end = len(data)
    out: list[ScannedRecord] = []
    pos = 0

    varint = partial(decode_varlong, data)

    try:
        while pos < end:
            start = pos
            length, pos = varint(pos)
            record_end = pos + length
            if length <= 0 or record_end > end:
                raise CorruptRecordError(
                    f"Record batch at base offset {base_offset} is corrupt: a record of "
                    f"{length} bytes at byte {start} of {end}"
                )
            ts_delta, p = varint(pos + 1)  # after the attributes byte
            offset_delta, p = varint(p)
            key_len, p = varint(p)
            if key_len >= 0:
                key: bytes | None = data[p : p + key_len]
                p += key_len
            else:
                key = None
            value_len, _ = varint(p)
            out.append(
                ScannedRecord(
                    start,
                    record_end,
                    base_offset + offset_delta,
                    first_ts + ts_delta,
                    key,
                    value_len < 0,
                )
            )
            pos = record_end
    except IndexError as exc:
        raise CorruptRecordError(
            f"Record batch at base offset {base_offset} is corrupt: a record runs past its batch"
        ) from exc
    except ValueError as exc:  # an over-long varint
        raise CorruptRecordError(
            f"Record batch at base offset {base_offset} is corrupt: {exc}"
        ) from exc
    return out


def filter_batch(batch: RecordBatch, data: bytes, kept: list[ScannedRecord]) -> bytes:
    """`batch` with only the `kept` records of its records section `data` (see module).

    With no records kept the result is an empty batch (count 0) whose first and max
    timestamps are the original max timestamp: what Kafka keeps for a producer's last batch.
    """
    body = b"".join([data[r.start : r.end] for r in kept])
    codec = batch.compression_type
    payload = body if codec is CompressionType.NONE else compress(codec, body)
    header = bytearray(batch.buffer()[:RECORD_BATCH_OVERHEAD])
    if batch.timestamp_type.value == 1:  # LogAppendTime: the batch's time stays
        max_ts = batch.max_timestamp
    elif kept:
        max_ts = max(r.timestamp for r in kept)
    else:
        max_ts = batch.max_timestamp
    if not kept:
        _INT64.pack_into(header, FIRST_TIMESTAMP_OFFSET, max_ts)
    _INT32.pack_into(header, LENGTH_OFFSET, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload))
    _INT64.pack_into(header, MAX_TIMESTAMP_OFFSET, max_ts)
    _INT32.pack_into(header, RECORDS_COUNT_OFFSET, len(kept))
    out = header + payload
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def scan_legacy(batch: RecordBatch) -> list[ScannedRecord]:
    """`scan_records` for a v0/v1 message (a compressed wrapper is opened): each
    record's `start` is its index in the wrapper, `end` the one after it."""
    return [
        ScannedRecord(i, i + 1, r.offset, r.timestamp, r.key, r.value is None)
        for i, r in enumerate(iter_legacy_records(batch.buffer(), MAX_DECOMPRESSED_BATCH_BYTES))
    ]


def filter_legacy(batch: RecordBatch, kept: list[ScannedRecord]) -> bytes:
    """The `kept` messages of the v0/v1 message `batch`, written in its magic, codec and
    timestamp type (a LogAppendTime wrapper keeps its time)."""
    records = list(iter_legacy_records(batch.buffer(), MAX_DECOMPRESSED_BATCH_BYTES))
    items = [
        (records[r.start].offset, records[r.start].timestamp, records[r.start].key,
         records[r.start].value)
        for r in kept
    ]  # fmt: skip
    ts_type = batch.timestamp_type
    return build_message_set(
        batch.magic,
        items,
        batch.compression_type,
        ts_type,
        batch.max_timestamp if ts_type.value == 1 else None,
    )
