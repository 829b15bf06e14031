"""Kafka's per-record rules for the records of a client batch (DefaultRecord.readFrom over
each record, as Kafka's LogValidator runs it), checked without building records.

This is the strict reader of the produce path: a length below the smallest record, an
offset delta outside the batch, a key, value or header length below -1, a negative
header count, a null header key, a field past its record or bytes left after its fields
make the batch corrupt (CorruptRecordError naming the batch at its offset in the
append). The lenient reader that builds Record objects for tools, compaction and the
Spark reader is record_batch's `RecordBatch.records()`: it reads what a broker stored,
which these rules already checked on the way in.

`check_records` checks an uncompressed records section and reads runs of same-layout
records at once (see its doc); `scan_records` walks a (decompressed) records section one
record at a time, collecting keyless records and timestamps out of bounds for the caller.
"""

from __future__ import annotations

from kafpy.common.errors import CorruptRecordError
from kafpy.records.record_batch import (
    H_BASE_OFFSET,
    H_FIRST_TIMESTAMP,
    H_LAST_OFFSET_DELTA,
    H_RECORD_COUNT,
    BatchHeader,
)
from kafpy.records.varint import decode_varint, decode_varlong

__all__ = ["check_records", "scan_records"]

# The smallest record body: attributes, timestampDelta, offsetDelta, keyLength,
# valueLength and headers count, one byte each.
_MIN_RECORD_BODY = 6
# Runs shorter than this are walked record by record (a slice costs more).
_RUN_MIN = 4
# A run of records read at once stays within one block of offset deltas 8192k..8192k+8191
# (and below 64 while they take one byte). Offset delta i is written zigzag(i) = 2i: its
# first byte is 2i & 0x7F, its second (i >> 6) & 0x7F, each with the high bit when more
# follow; bytes after the second are the same for a whole block.
_BLOCK = 8192
_DELTA_ONE = bytes(2 * i for i in range(64))
_DELTA_FIRST = bytes(0x80 | (2 * i) & 0x7F for i in range(_BLOCK))
_DELTA_SECOND = bytes((i >> 6) & 0x7F for i in range(_BLOCK))
_DELTA_SECOND_MORE = bytes(0x80 | (i >> 6) & 0x7F for i in range(_BLOCK))
_BYTE = tuple(bytes((i,)) for i in range(256))
# translate table flipping the high bit: a column of varint continuation bytes becomes ASCII
_FLIP = bytes(i ^ 0x80 for i in range(256))


def _corrupt(offset: int, what: str) -> CorruptRecordError:
    return CorruptRecordError(
        f"Record batch at offset {offset} of the append is corrupt: {what}; the producer "
        "must send a well-formed batch"
    )


def check_records(buffer: memoryview, start: int, end: int, header: BatchHeader) -> None:
    """Every record of an uncompressed records section, field by field (Kafka's
    DefaultRecord.readFrom over each record of a client batch, see _read_record).

    Records are read one at a time, except within a run: a producer's records usually
    share one layout (the same length, key length, value length and header lengths, and
    varints of the same sizes), and such a record parses exactly as the one before it
    did. So after reading record i in full, _repeats checks the bytes that fix the layout
    of the records after it, one strided slice per byte position, in C. A run ends where
    the layout changes (offset deltas reaching 64 and 8192 take another varint byte) and
    at each block of 8192 offset deltas, so a batch of equal records costs a few full
    reads in Python whatever its size.
    """
    count = header[H_RECORD_COUNT]
    last_delta = header[H_LAST_OFFSET_DELTA]
    offset = header[H_BASE_OFFSET]
    copy: bytes | None = None  # for runs: strided slices of bytes cost a tenth of memoryview's
    pos = start
    n = 0
    layout = [0, 0, 0, 0]
    try:
        while pos < end:
            if n == count:
                raise _corrupt(
                    offset,
                    f"its records section holds more than the {count} records the header declares",
                )
            want = layout if count - n > _RUN_MIN else None
            record_end, _, _, delta = _read_record(buffer, pos, end, n, last_delta, offset, want)
            n += 1
            if layout[0] and delta == n - 1:  # the next record starts as this one did
                stride = record_end - pos
                block_left = 64 - n if n < 64 else -n % _BLOCK
                left = min(count - n, (end - record_end) // stride, block_left)
                if left >= _RUN_MIN:
                    if copy is None:
                        copy = buffer[start:end].tobytes()
                    k = _repeats(copy, start, stride, left, layout, n)
                    n += k
                    record_end += k * stride
                layout = [0, 0, 0, 0]
            pos = record_end
    except (IndexError, ValueError) as exc:
        raise _corrupt(offset, f"record {n} is malformed ({exc})") from None
    if n != count:
        raise _corrupt(offset, f"the header declares {count} records but it holds {n}")


def _repeats(data: bytes, start: int, stride: int, left: int, layout: list[int], index: int) -> int:
    """How many of the `left` records that follow the one `layout` describes (every
    `stride` bytes, from record `index`) read the same way: their layout bytes (lengths,
    the offset delta's bytes after its second) equal its own, their timestamp deltas have
    its varint size, and their offset deltas are their indexes. `left` stays within one
    block of offset deltas (_BLOCK). `data` holds the records section from `start`, where
    `layout`'s positions count from."""
    k = left
    ts_start, ts_end, od_start, od_end = (q - start for q in layout[:4])
    for q in layout[4:]:
        q -= start
        column = data[q + stride : q + k * stride + 1 : stride]
        same = _BYTE[data[q]]
        if column.count(same) != k:
            k -= len(column.lstrip(same))
            if not k:
                return 0
    for q in range(ts_start, ts_end):
        column = data[q + stride : q + k * stride + 1 : stride]
        if q < ts_end - 1:
            column = column.translate(_FLIP)  # continuation bytes: all must have the high bit
        if not column.isascii():
            k = next(i for i, c in enumerate(column) if c >= 0x80)
            if not k:
                return 0
    at = index % _BLOCK
    if od_end - od_start == 1:
        expected = [_DELTA_ONE]
    else:
        expected = [_DELTA_FIRST, _DELTA_SECOND if od_end - od_start == 2 else _DELTA_SECOND_MORE]
    for q, table in enumerate(expected, od_start):
        column = data[q + stride : q + k * stride + 1 : stride]
        want = table[at : at + k]
        if column != want:
            k = next(i for i, (a, b) in enumerate(zip(column, want, strict=True)) if a != b)
            if not k:
                return 0
    return k


def _read_record(
    data: bytes | memoryview,
    pos: int,
    end: int,
    index: int,
    last_delta: int,
    offset: int,
    layout: list[int] | None = None,
) -> tuple[int, int, int, int]:
    """Read record `index` at `pos` by Kafka's rules; return (its end, timestamp delta,
    key length, offset delta).

    Refuses (CorruptRecordError naming the batch at `offset`) a length below the smallest
    record or past `end`, an offset delta outside [0, last_delta], a key, value or header
    value length below -1 (kafpy is stricter than Kafka 2.8 here, which reads any
    negative length as null), a negative header count, a null or negative header key, a
    field running past its record and bytes left in the record after its fields.
    Over-long varints raise ValueError and a record cut short IndexError (the caller
    names them). With `layout` (four slots), fills it with the timestamp delta's and the
    offset delta's [start, end) and appends the positions of the bytes that fix the
    record's layout: its length, key length, value length, header count and header
    lengths varints, and the offset delta's bytes after its first.
    """
    # each varint's one-byte case is decoded inline: a call per field would cost more
    # than the field (this is the produce path's per-record read)
    b = data[pos]
    if b < 0x80:
        length = (b >> 1) ^ -(b & 1)
        p = pos + 1
    else:
        length, p = decode_varint(data, pos)
    record_end = p + length
    if length < _MIN_RECORD_BODY or record_end > end:
        raise _corrupt(
            offset, f"record {index} claims {length} bytes where {end - p} remain in the batch"
        )
    if layout is not None:
        if record_end < end and data[record_end] == b:
            layout.extend(range(pos, p))
        else:
            layout = None  # the next record's length differs: no run to check
    ts_start = p + 1  # after the attributes byte, which Kafka does not read
    b = data[ts_start]
    if b < 0x80:
        ts_delta = (b >> 1) ^ -(b & 1)
        p = ts_start + 1
    else:
        ts_delta, p = decode_varlong(data, ts_start)
    od_start = p
    b = data[p]
    if b < 0x80:
        offset_delta = (b >> 1) ^ -(b & 1)
        p += 1
    else:
        offset_delta, p = decode_varint(data, p)
    if not 0 <= offset_delta <= last_delta:
        raise _corrupt(
            offset,
            f"record {index} has offset delta {offset_delta} outside the batch's [0, {last_delta}]",
        )
    if layout is not None:
        layout[0:4] = ts_start, od_start, od_start, p
        layout.extend(range(od_start + 2, p))
    at = p
    b = data[p]
    if b < 0x80:
        key_len = (b >> 1) ^ -(b & 1)
        p += 1
    else:
        key_len, p = decode_varint(data, p)
    if layout is not None:
        layout.extend(range(at, p))
    if key_len > 0:
        p += key_len
        if p >= record_end:
            raise _corrupt(offset, f"record {index} has a key that runs past it")
    elif key_len < -1:
        raise _corrupt(offset, f"record {index} has a key of length {key_len}")
    at = p
    b = data[p]
    if b < 0x80:
        value_len = (b >> 1) ^ -(b & 1)
        p += 1
    else:
        value_len, p = decode_varint(data, p)
    if layout is not None:
        layout.extend(range(at, p))
    if value_len > 0:
        p += value_len
    elif value_len < -1:
        raise _corrupt(offset, f"record {index} has a value of length {value_len}")
    if p >= record_end:
        raise _corrupt(offset, f"record {index} has a value that runs past it")
    at = p
    b = data[p]
    if b < 0x80:
        header_count = (b >> 1) ^ -(b & 1)
        p += 1
    else:
        header_count, p = decode_varint(data, p)
    if header_count < 0:
        raise _corrupt(offset, f"record {index} declares {header_count} headers")
    if layout is not None:
        layout.extend(range(at, p))
    for _ in range(header_count):
        if p >= record_end:
            raise _corrupt(offset, f"record {index} has headers that run past it")
        at = p
        name_len, p = decode_varint(data, p)
        if layout is not None:
            layout.extend(range(at, p))
        if name_len < 0:
            what = "is null" if name_len == -1 else f"has length {name_len}"
            raise _corrupt(offset, f"record {index} has a header whose key {what}")
        p += name_len
        if p >= record_end:
            raise _corrupt(offset, f"record {index} has headers that run past it")
        at = p
        value_len, p = decode_varint(data, p)
        if layout is not None:
            layout.extend(range(at, p))
        if value_len > 0:
            p += value_len
        elif value_len < -1:
            raise _corrupt(offset, f"record {index} has a header value of length {value_len}")
        if p > record_end:
            raise _corrupt(offset, f"record {index} has headers that run past it")
    if p != record_end:
        raise _corrupt(
            offset,
            f"record {index} declares {length} bytes but its fields take {length + p - record_end}",
        )
    return record_end, ts_delta, key_len, offset_delta


def scan_records(
    data: bytes | memoryview,
    header: BatchHeader,
    offset: int,
    need_keys: bool,
    min_ts: int | None,
    max_ts: int | None,
) -> tuple[list[int], list[tuple[int, int]]]:
    """Walk every record of a (decompressed) records section field by field (_read_record).

    Raises CorruptRecordError for a structure that lies (lengths, counts, fields running
    past their record); returns the indexes of keyless records when `need_keys`, and
    (index, timestamp) of records outside [min_ts, max_ts] when those are given.
    """
    count = header[H_RECORD_COUNT]
    last_delta = header[H_LAST_OFFSET_DELTA]
    first_ts = header[H_FIRST_TIMESTAMP]
    check_ts = min_ts is not None and max_ts is not None
    lowest, highest = (min_ts, max_ts) if min_ts is not None and max_ts is not None else (0, 0)
    end = len(data)
    pos = 0
    keyless: list[int] = []
    bad_timestamps: list[tuple[int, int]] = []
    index = 0
    try:
        for index in range(count):
            if pos >= end:
                raise _corrupt(
                    offset, f"the header declares {count} records but it holds only {index}"
                )
            pos, ts_delta, key_len, _ = _read_record(data, pos, end, index, last_delta, offset)
            if need_keys and key_len < 0:
                keyless.append(index)
            if check_ts:
                ts = first_ts + ts_delta
                if ts < lowest or ts > highest:
                    bad_timestamps.append((index, ts))
    except (IndexError, ValueError) as exc:
        raise _corrupt(offset, f"record {index} is malformed ({exc})") from None
    if pos != end:
        raise _corrupt(offset, f"{end - pos} bytes remain after the {count} records it declares")
    return keyless, bad_timestamps
