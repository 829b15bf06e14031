"""Bulk decoding of fetched record batches into Arrow columns with Spark's Kafka schema.

The reader's hot path. For one fetch response's worth of batches, Python walks only the
batch headers and each record's length varint (to find where records start); every other
field (timestamp and offset deltas, key and value lengths, header counts) is decoded for
all records at once with numpy, and keys and values are cut out of the record bytes with
a byte mask, so no Python object is made per record. Headers, when asked for, are decoded
per record, but only for records that have some.

The Arrow schema is exactly what Spark expects for the Kafka source's Spark schema:
binary (not large_binary) key and value, string topic, int32 partition, int64 offset,
timestamp[us, tz=UTC], int32 timestampType, and list<struct<key: string, value: binary>>
headers. Timestamps are UTC microseconds whatever the worker's time zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kafpy.client.fetcher import AbortedTransactions
from kafpy.common.errors import CorruptRecordError, MessageTooLargeError
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.compression import MAX_DECOMPRESSED_BATCH_BYTES, decompress
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_MASK,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
    TimestampType,
)
from kafpy.records.varint import decode_varlong, decode_varlongs_at

SPARK_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
SPARK_SCHEMA_WITH_HEADERS = SPARK_SCHEMA + ", headers array<struct<key:string,value:binary>>"

HEADER_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
ARROW_SCHEMA = pa.schema(_FIELDS)
ARROW_SCHEMA_WITH_HEADERS = pa.schema([*_FIELDS, pa.field("headers", HEADER_TYPE)])

_PAD_BYTES = 16
_PAD = b"\x00" * _PAD_BYTES  # lets vectorized reads (varints, 12-byte view heads) run past the end
_TWELVE = np.arange(12, dtype=np.int64)


def spark_schema(include_headers: bool) -> str:
    return SPARK_SCHEMA_WITH_HEADERS if include_headers else SPARK_SCHEMA


def arrow_schema(include_headers: bool) -> pa.Schema:
    return ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA


@dataclass
class DecodedChunk:
    """What one fetch response held for a partition: Arrow rows in [start, end) and where
    the next fetch starts (past the last complete batch, control batches included)."""

    batch: pa.RecordBatch | None
    next_offset: int
    batches_seen: int


def decode_batches(
    data: bytes | memoryview,
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    include_headers: bool = False,
    check_crcs: bool = True,
    aborted: Sequence[tuple[int, int]] | None = None,
) -> DecodedChunk:
    """Decode the complete batches of a fetch response's records for one partition into
    one Arrow record batch of the rows whose offsets lie in [start, end).

    `aborted` (read_committed only) is the response's aborted transactions, (producer
    id, first offset) pairs: a transactional batch of a producer whose aborted
    transaction has begun is dropped, until that producer's abort marker, as Kafka's
    consumer does."""
    txns = AbortedTransactions(aborted or ())
    payloads: list[bytes | memoryview] = []
    record_pos: list[np.ndarray] = []  # where each record (its length varint) begins
    record_ends: list[np.ndarray] = []
    batch_counts: list[int] = []
    batch_meta: list[tuple[int, int, int, int]] = []  # base, first ts, max ts, log-append?
    position = start
    seen = 0
    base_pos = 0
    for batch in MemoryRecords(data).batches_allow_partial():
        seen += 1
        if aborted is not None and txns.is_aborted(batch):
            position = max(position, batch.next_offset)
            continue
        if batch.next_offset <= position:
            continue
        if batch.is_legacy:
            batch = _as_v2(batch)
        if batch.attributes & CONTROL_MASK or batch.record_count == 0:
            position = batch.next_offset
            continue
        if batch.base_offset >= end:
            # Nothing lies between: offsets below this batch were compacted away.
            position = max(position, batch.base_offset)
            break
        if check_crcs:
            batch.ensure_valid()
        elif batch.magic != 2:
            batch.ensure_valid()
        payload = _payload(batch)
        count = batch.record_count
        positions = _record_positions(payload, count, batch.base_offset)
        record_pos.append(positions + base_pos)
        next_pos = np.empty_like(positions)
        next_pos[:-1] = positions[1:]
        next_pos[-1] = len(payload)
        record_ends.append(next_pos + base_pos)
        payloads.append(payload)
        base_pos += len(payload)
        batch_counts.append(count)
        batch_meta.append(
            (
                batch.base_offset,
                batch.first_timestamp,
                batch.max_timestamp,
                1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0,
            )
        )
        position = batch.next_offset
    if not record_pos:
        return DecodedChunk(None, position, seen)
    # one copy of the record bytes (plus padding) that every column is cut from
    buf = bytearray(base_pos + len(_PAD))
    at = 0
    for payload in payloads:
        buf[at : at + len(payload)] = payload
        at += len(payload)
    u = np.frombuffer(buf, dtype=np.uint8)
    columns = _decode_columns(
        u, np.concatenate(record_pos), np.concatenate(record_ends), batch_counts, batch_meta
    )
    offsets = columns.offsets
    keep = (offsets >= start) & (offsets < end)
    rb = _to_record_batch(buf, columns, topic, partition, include_headers)
    if not keep.all():
        rb = rb.filter(pa.array(keep))
    return DecodedChunk(rb, position, seen)


def empty_batch(include_headers: bool) -> pa.RecordBatch:
    schema = arrow_schema(include_headers)
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


# --- internals ---------------------------------------------------------------


def _as_v2(batch: RecordBatch) -> RecordBatch:
    """A message of format v0/v1 (a topic whose message.format.version is, or was, below
    0.11.0) as a v2 batch of the same records, offsets and timestamps, so that it is
    decoded as any other batch; its CRC-32 is checked on the way."""
    batch.ensure_entry_valid()
    lat = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    records = list(batch.records())
    builder = RecordBatchBuilder(
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        base_offset=records[0].offset if records else batch.base_offset,
        log_append_time=batch.max_timestamp if lat else None,
    )
    for r in records:
        builder.append(r.timestamp, r.key, r.value, offset=r.offset)
    return RecordBatch(builder.build())


def _payload(batch: RecordBatch) -> bytes | memoryview:
    view = batch.buffer()[RECORD_BATCH_OVERHEAD:]
    codec = batch.attributes & COMPRESSION_CODEC_MASK
    if codec:
        try:
            # The reader does not know the topic's max.message.bytes: the batch-size cap
            # of decompressed_limit bounds it.
            return decompress(codec, view, MAX_DECOMPRESSED_BATCH_BYTES)
        except (CorruptRecordError, MessageTooLargeError) as exc:
            raise type(exc)(
                f"Record batch at base offset {batch.base_offset} is refused: {exc}"
            ) from exc
    return view


def _record_positions(data: bytes | memoryview, count: int, base_offset: int) -> np.ndarray:
    """Where each of the `count` records begins (its length varint) in `data`.

    A record's place depends on the previous record's length, so in general this is a
    sequential walk touching one varint per record (the reader's one per-record Python
    loop). Runs of records of one length (fixed-size values: offset deltas change a
    record's size only at 64, 8192, ...) are found without it: when the first record's
    length prefix repeats every stride bytes, the walk would visit exactly those places,
    so numpy checks a whole run at once. Short runs fall back to the walk."""
    end = len(data)
    if not isinstance(data, bytes):
        data = bytes(data)  # one copy (~1% of the walk) makes each byte read faster
    u = np.frombuffer(data, dtype=np.uint8)
    pieces: list[np.ndarray] = []
    walked: list[int] = []
    pos = 0
    done = 0
    try:
        while done < count:
            length, size = decode_varlong(data, pos)
            stride = size - pos + length
            size -= pos
            if length < 0 or pos + stride > end:
                raise ValueError(f"a record length at byte {pos} runs outside the batch")
            window = min(count - done, (end - pos) // stride, 8192)
            run = 0
            if window >= 16:
                # a cheap probe of the next 16 records first, the whole window only if
                # they all share the prefix (varied sizes fail the probe quickly)
                probe = u[pos : pos + 16 * stride].reshape(16, stride)[:, :size]
                if (probe == probe[0]).all():
                    prefixes = u[pos : pos + window * stride].reshape(window, stride)[:, :size]
                    same = (prefixes == prefixes[0]).all(axis=1)
                    run = window if same.all() else int(same.argmin())
            if run >= 16:
                if walked:
                    pieces.append(np.array(walked, dtype=np.int64))
                    walked = []
                pieces.append(pos + np.arange(run, dtype=np.int64) * stride)
                pos += run * stride
                done += run
                continue
            step = min(count - done, 512)
            pos = _walk(data, pos, step, walked)
            done += step
    except (IndexError, ValueError) as exc:
        raise CorruptRecordError(
            f"Record batch at base offset {base_offset} is corrupt: {exc}"
        ) from None
    if pos != end:
        raise CorruptRecordError(
            f"Record batch at base offset {base_offset} is corrupt: {end - pos} bytes remain "
            f"after the {count} records its header declares"
        )
    if walked:
        pieces.append(np.array(walked, dtype=np.int64))
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


def _record_steps() -> list[int]:
    """For each 16-bit little-endian word w (a record's first two bytes), how far the record
    reaches: the size of its length varint plus the length, when the varint has one or two
    bytes (records under 8 KiB); 0 when it is longer, or the length is -1 (1 + -1)."""
    w = np.arange(1 << 16, dtype=np.int64)
    u = np.zeros(3 * len(w) + _PAD_BYTES, dtype=np.uint8)  # b0, b1, then a 0 byte
    u[0 : 3 * len(w) : 3] = w & 0xFF
    u[1 : 3 * len(w) : 3] = w >> 8
    lengths, sizes = decode_varlongs_at(u, 3 * w)
    steps = np.where(sizes <= 2, sizes + lengths, 0)
    return [int(x) for x in steps.tolist()]


_STEPS = _record_steps()


def _walk(data: bytes | memoryview, pos: int, count: int, out: list[int]) -> int:
    """Walk `count` records from `pos`, appending where each begins; returns the end.

    One table lookup per record (_STEPS, keyed by the record's first two bytes) instead of
    decoding its length varint in Python. No checks per record: a bad length sends the
    walk astray, which the caller's vectorized checks (lengths >= 0, each record ending
    where the next begins, the last ending at the end) then report."""
    add = out.append
    steps = _STEPS
    for _ in range(count):
        add(pos)
        step = steps[data[pos] | (data[pos + 1] << 8)]
        if step:
            pos += step
        else:  # a length varint of three bytes or more, or a corrupt length
            length, pos = decode_varlong(data, pos)
            pos += length
    return pos


@dataclass
class _Columns:
    offsets: np.ndarray
    timestamps_ms: np.ndarray
    ts_types: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray
    header_pos: np.ndarray
    header_count: np.ndarray
    record_ends: np.ndarray


def _decode_columns(
    u: np.ndarray,
    record_pos: np.ndarray,
    ends: np.ndarray,
    counts: Sequence[int],
    meta: Sequence[tuple[int, int, int, int]],
) -> _Columns:
    counts_arr = np.array(counts, dtype=np.int64)
    meta_arr = np.array(meta, dtype=np.int64).reshape(-1, 4)
    base = np.repeat(meta_arr[:, 0], counts_arr)
    first_ts = np.repeat(meta_arr[:, 1], counts_arr)
    max_ts = np.repeat(meta_arr[:, 2], counts_arr)
    log_append = np.repeat(meta_arr[:, 3], counts_arr)

    lengths, size = decode_varlongs_at(u, record_pos)
    if (lengths < 0).any() or not np.array_equal(record_pos + size + lengths, ends):
        raise CorruptRecordError(
            "A fetched record's length does not match where the next record starts: the "
            "batch is corrupt."
        )
    pos = record_pos + size + 1  # skip the record attributes byte
    ts_delta, size = decode_varlongs_at(u, pos)
    pos = pos + size
    offset_delta, size = decode_varlongs_at(u, pos)
    pos = pos + size
    key_len, size = decode_varlongs_at(u, pos)
    key_pos = pos + size
    pos = key_pos + np.maximum(key_len, 0)
    value_len, size = decode_varlongs_at(u, pos)
    value_pos = pos + size
    pos = value_pos + np.maximum(value_len, 0)
    header_count, size = decode_varlongs_at(u, pos)
    header_pos = pos + size
    if (header_count < 0).any() or (key_len < -1).any() or (value_len < -1).any():
        raise CorruptRecordError("A fetched record has a negative key, value or header length.")
    no_headers = header_count == 0
    if (header_pos > ends).any() or not np.array_equal(header_pos[no_headers], ends[no_headers]):
        raise CorruptRecordError(
            "A fetched record's fields do not add up to its declared length: the batch is corrupt."
        )
    timestamps = np.where(log_append == 1, max_ts, first_ts + ts_delta)
    return _Columns(
        offsets=base + offset_delta,
        timestamps_ms=timestamps,
        ts_types=log_append.astype(np.int32),
        key_pos=key_pos,
        key_len=key_len,
        value_pos=value_pos,
        value_len=value_len,
        header_pos=header_pos,
        header_count=header_count,
        record_ends=ends,
    )


def _binary_column(
    u4: np.ndarray, pos: np.ndarray, lengths: np.ndarray, data: pa.Buffer
) -> pa.Array:
    """A binary array of the byte ranges [pos, pos + length) of `data` (length -1: null).

    Built as an Arrow binary view array over `data` (16 bytes per value: the length, then
    the value inline when it has at most 12 bytes, else its first 4 bytes, buffer 0 and
    its position), then cast to plain binary by Arrow's C++ kernels, so no Python loop
    copies bytes. `u4` reads a little-endian uint32 at any byte position of `data`,
    which must extend at least 12 bytes past the last value (the joined buffer's
    padding)."""
    n = len(pos)
    nulls = lengths < 0
    null_count = int(nulls.sum())
    if null_count == n:
        return pa.nulls(n, pa.binary())  # e.g. no record has a key
    present = np.maximum(lengths, 0)
    views = np.empty((n, 4), dtype=np.uint32)
    views[:, 0] = present
    views[:, 1] = u4[pos]
    views[:, 2] = 0
    views[:, 3] = pos
    short = present <= 12
    if short.any():
        where = pos[short]
        inline = np.empty((len(where), 3), dtype=np.uint32)
        inline[:, 0] = views[short, 1]
        inline[:, 1] = u4[where + 4]
        inline[:, 2] = u4[where + 8]
        keep = (_TWELVE < present[short, None]).astype(np.uint8) * np.uint8(0xFF)
        inline &= keep.view(np.uint32)
        views[short, 1:] = inline
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if null_count else None
    array = pa.Array.from_buffers(
        pa.binary_view(), n, [validity, pa.py_buffer(views), data], null_count
    )
    return array.cast(pa.binary())


def _repeated_string(value: str, n: int) -> pa.Array:
    encoded = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)]
    )


def _headers_column(buf: bytearray, c: _Columns) -> pa.Array:
    """Headers, decoded per record for the records that have any."""
    rows: list[list[tuple[str, bytes | None]]] = []
    counts = c.header_count.tolist()
    positions = c.header_pos.tolist()
    ends = c.record_ends.tolist()
    for count, pos, end in zip(counts, positions, ends, strict=True):
        if not count:
            rows.append([])
            continue
        headers: list[tuple[str, bytes | None]] = []
        try:
            for _ in range(count):
                name_len, pos = decode_varlong(buf, pos)
                if name_len < 0 or pos + name_len > end:
                    raise CorruptRecordError(f"A record has a header key of length {name_len}.")
                name = buf[pos : pos + name_len].decode("utf-8", "replace")
                pos += name_len
                value_len, pos = decode_varlong(buf, pos)
                if value_len >= 0:
                    headers.append((name, bytes(buf[pos : pos + value_len])))
                    pos += value_len
                else:
                    headers.append((name, None))
        except ValueError:
            raise CorruptRecordError(
                "A record holds an over-long variable-length integer."
            ) from None
        if pos != end:
            raise CorruptRecordError("A record's headers do not end where the record does.")
        rows.append(headers)
    return pa.array([[{"key": k, "value": v} for k, v in row] for row in rows], type=HEADER_TYPE)


def _to_record_batch(
    buf: bytearray,
    c: _Columns,
    topic: str,
    partition: int,
    include_headers: bool,
) -> pa.RecordBatch:
    n = len(c.offsets)
    data = pa.py_buffer(buf)
    u4 = np.ndarray((len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))
    arrays = [
        _binary_column(u4, c.key_pos, c.key_len, data),
        _binary_column(u4, c.value_pos, c.value_len, data),
        _repeated_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(c.offsets),
        pa.array(c.timestamps_ms * 1000, type=pa.int64()).view(pa.timestamp("us", tz="UTC")),
        pa.array(c.ts_types),
    ]
    if include_headers:
        arrays.append(_headers_column(buf, c))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


__all__ = [
    "ARROW_SCHEMA",
    "ARROW_SCHEMA_WITH_HEADERS",
    "DecodedChunk",
    "arrow_schema",
    "decode_batches",
    "empty_batch",
    "spark_schema",
]
