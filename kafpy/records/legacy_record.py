"""Message format v0 and v1: the message sets of Kafka before 0.11 (Kafka's LegacyRecord).

Old clients (Produce v0–v2, Fetch v0–v3) speak this format. A log of format v2 gets
their produce requests converted up on the way in (`up_convert`) and its fetch
responses down on the way out (`down_convert`), as Kafka's LogValidator and its lazy
down-conversion do. A log whose message.format.version is below 0.11.0 stores these
message sets themselves: the LogValidator converts what it is sent to them
(`to_message_set`), and they stay in the log, next to any v2 batches written before or
after, when the version changes.

One message on the wire (`LOG_OVERHEAD` = offset + size, then the message itself):

    offset int64, message_size int32,
    crc uint32 (CRC-32 of everything after it), magic int8, attributes int8
    (bits 0-2 codec, bit 3 LogAppendTime in magic 1), timestamp int64 (magic 1 only),
    key bytes (int32 length, -1 for null), value bytes (int32 length, -1 for null)

A compressed message set is one wrapper message whose value is the compressed inner
message set. In magic 1 the inner offsets are relative (0..n-1) and the wrapper carries
the absolute offset of the last inner message; in magic 0 the inner offsets are absolute.
Inner messages are never compressed again.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafpy.common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaError,
    UnsupportedForMessageFormatError,
)
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.compression import (
    CompressionType,
    compress,
    decompress,
    lz4_frame_from_legacy,
    lz4_frame_to_legacy,
)
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import MAGIC_V2, TimestampType, iter_headers

MAGIC_V0 = 0
MAGIC_V1 = 1
LOG_OVERHEAD = 12
NO_TIMESTAMP = -1
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

_OFFSET_SIZE = struct.Struct(">qi")
_CRC_MAGIC_ATTR = struct.Struct(">Ibb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
RECORD_OVERHEAD = {MAGIC_V0: 14, MAGIC_V1: 22}
# How far a stored wrapper may decompress when read back (it was checked on append).
_STORED_LIMIT = 1 << 31


@dataclass(frozen=True, slots=True)
class LegacyRecord:
    """One message of a v0/v1 message set, with its absolute offset resolved.

    `timestamp` is -1 in magic 0; `timestamp_type` is the wrapper's for inner messages
    of a compressed set (LogAppendTime wrappers give their timestamp to every inner one).
    `crc` is the message's own stored CRC-32 (an inner message's, in a wrapper).
    """

    offset: int
    magic: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    compression: CompressionType
    crc: int = 0


def _read_bytes(buf: memoryview, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError(f"Message is truncated in its {what} length")
    (length,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"Message has a negative {what} length {length}")
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(f"Message's {what} of {length} bytes runs past the message")
    return bytes(buf[pos : pos + length]), pos + length


def _shallow(
    buf: memoryview,
) -> Iterator[tuple[int, int, int, int, int, bytes | None, bytes | None]]:
    """(offset, magic, attributes, timestamp, crc, key, value) of each whole message,
    checking each CRC. A partial trailing message is dropped, as Kafka's readers do."""
    pos, end = 0, len(buf)
    while pos + LOG_OVERHEAD <= end:
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        start = pos + LOG_OVERHEAD
        if size < RECORD_OVERHEAD[MAGIC_V0]:
            raise CorruptRecordError(
                f"Message at offset {offset} has size {size}, below the minimum of "
                f"{RECORD_OVERHEAD[MAGIC_V0]} bytes"
            )
        if start + size > end:
            return  # partial trailing message
        stop = start + size
        crc, magic, attributes = _CRC_MAGIC_ATTR.unpack_from(buf, start)
        if magic not in (MAGIC_V0, MAGIC_V1):
            raise CorruptRecordError(
                f"Message at offset {offset} has magic {magic} inside a message set of format v0/v1"
            )
        if size < RECORD_OVERHEAD[magic]:
            raise CorruptRecordError(
                f"Message at offset {offset} has size {size}, below the minimum of "
                f"{RECORD_OVERHEAD[magic]} bytes for magic {magic}"
            )
        if zlib.crc32(buf[start + 4 : stop]) != crc:
            raise CorruptRecordError(
                f"Message at offset {offset} is corrupt (stored crc = {crc}, computed crc = "
                f"{zlib.crc32(buf[start + 4 : stop])})"
            )
        p = start + 6
        timestamp = NO_TIMESTAMP
        if magic == MAGIC_V1:
            (timestamp,) = _INT64.unpack_from(buf, p)
            p += 8
        key, p = _read_bytes(buf, p, stop, "key")
        value, p = _read_bytes(buf, p, stop, "value")
        if p != stop:
            raise CorruptRecordError(
                f"Message at offset {offset} has {stop - p} bytes after its value"
            )
        yield offset, magic, attributes, timestamp, crc, key, value
        pos = stop


def first_magic(data: bytes | bytearray | memoryview) -> int | None:
    """The magic byte of the first entry of a message set or record batch (both put it at
    byte 16), or None when the data is too short to tell."""
    return data[16] if len(data) > 16 else None


def iter_legacy_records(
    data: bytes | bytearray | memoryview, decompressed_limit: int
) -> Iterator[LegacyRecord]:
    """Every message of a v0/v1 message set, compressed wrappers opened (deep iteration).

    Checks every CRC; raises CorruptRecordError for damage and InvalidRecordError for a
    compressed message nested in another or a wrapper with a key.
    """
    for offset, magic, attributes, ts, crc, key, value in _shallow(memoryview(data)):
        codec = CompressionType.from_id(attributes & CODEC_MASK)
        ts_type = (
            TimestampType.NO_TIMESTAMP_TYPE
            if magic == MAGIC_V0
            else TimestampType.LOG_APPEND_TIME
            if attributes & TIMESTAMP_TYPE_MASK
            else TimestampType.CREATE_TIME
        )
        if codec is CompressionType.NONE:
            yield LegacyRecord(offset, magic, ts, ts_type, key, value, codec, crc)
            continue
        if codec is CompressionType.ZSTD:
            raise InvalidRecordError(
                f"Message at offset {offset} is compressed with zstd, which message format "
                f"v{magic} cannot carry (zstd needs record batch v2)"
            )
        if value is None:
            raise CorruptRecordError(f"Compressed message at offset {offset} has no value")
        payload = value
        if codec is CompressionType.LZ4 and magic == MAGIC_V0:
            payload = lz4_frame_from_legacy(payload)
        inner_data = decompress(codec, payload, decompressed_limit)
        inner = list(_shallow(memoryview(inner_data)))
        if not inner:
            raise CorruptRecordError(f"Compressed message at offset {offset} holds no messages")
        last_relative = inner[-1][0]
        for i_offset, i_magic, i_attr, i_ts, i_crc, i_key, i_value in inner:
            if i_attr & CODEC_MASK:
                raise InvalidRecordError(
                    f"Compressed message at offset {offset} holds another compressed message"
                )
            if i_magic != magic:
                raise InvalidRecordError(
                    f"Compressed message at offset {offset} (magic {magic}) holds a message "
                    f"of magic {i_magic}"
                )
            absolute = offset - last_relative + i_offset if magic == MAGIC_V1 else i_offset
            timestamp = ts if ts_type is TimestampType.LOG_APPEND_TIME else i_ts
            yield LegacyRecord(absolute, magic, timestamp, ts_type, i_key, i_value, codec, i_crc)


def _message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == MAGIC_V1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field))
            body += field
    crc = zlib.crc32(body)
    return _OFFSET_SIZE.pack(offset, len(body) + 4) + struct.pack(">I", crc) + bytes(body)


def build_message_set(
    magic: int,
    records: Iterable[tuple[int, int, bytes | None, bytes | None]],
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """A message set of `magic` from (offset, timestamp, key, value) tuples, as one
    compressed wrapper when `compression` is set (zstd cannot be written in v0/v1), the
    way Kafka's MemoryRecordsBuilder writes it.

    With LogAppendTime (magic 1) every message, inner ones included, carries the
    timestamp-type bit, and `log_append_time` (when given) replaces every timestamp; the
    wrapper's timestamp is the log append time, or the largest inner one for CreateTime.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"magic {magic} is not a message set format (0 or 1)")
    items = list(records)
    lat = magic == MAGIC_V1 and timestamp_type is TimestampType.LOG_APPEND_TIME
    ts_bit = TIMESTAMP_TYPE_MASK if lat else 0
    if magic == MAGIC_V0:
        items = [(o, NO_TIMESTAMP, k, v) for o, _t, k, v in items]
    elif lat and log_append_time is not None:
        items = [(o, log_append_time, k, v) for o, _t, k, v in items]
    if compression is CompressionType.NONE:
        return b"".join(_message(o, magic, ts_bit, t, k, v) for o, t, k, v in items)
    if compression is CompressionType.ZSTD:
        raise InvalidRecordError(f"zstd compression cannot be written in message format v{magic}")
    if not items:
        return b""
    first = items[0][0]
    inner = b"".join(
        _message(o - first if magic == MAGIC_V1 else o, magic, ts_bit, t, k, v)
        for o, t, k, v in items
    )
    payload = compress(compression, inner)
    if compression is CompressionType.LZ4 and magic == MAGIC_V0:
        payload = lz4_frame_to_legacy(payload)
    wrapper_ts = max(t for _o, t, _k, _v in items) if magic == MAGIC_V1 else NO_TIMESTAMP
    return _message(items[-1][0], magic, int(compression) | ts_bit, wrapper_ts, None, payload)


@dataclass(frozen=True, slots=True)
class ConvertedMessageSet:
    """What `to_message_set` made: the bytes and the append's largest timestamp with the
    offset the log indexes it at (Kafka's RecordsInfo), and what it was made of and for:
    the first record offset of the input, the magic, the codec asked for (None: the
    producer's) and the LogAppendTime given."""

    data: bytes
    max_timestamp: int
    offset_of_max_timestamp: int
    first_offset: int = 0
    magic: int = MAGIC_V1
    compression: CompressionType | None = None
    log_append_time: int | None = None
    largest_entry: int = 0  # bytes of the largest message (wrapper), offset and size included

    def can_move(self) -> bool:
        """True when the set can be given other offsets by rewriting only the offset
        fields, which the CRCs do not cover: not with LogAppendTime (the time is known
        only at the append) and not for magic 0 wrappers, whose inner offsets are
        absolute (Kafka never assigns those in place either)."""
        if self.log_append_time is not None:
            return False
        return self.magic == MAGIC_V1 or not any(
            h[5] & CODEC_MASK for _p, h in iter_headers(self.data)
        )

    def moved_to(self, first_offset: int) -> ConvertedMessageSet:
        """The same messages from `first_offset` on (see can_move)."""
        delta = first_offset - self.first_offset
        data = bytearray(self.data)
        pos, end = 0, len(data)
        while pos < end:  # the set was built here: every message is whole
            offset, size = _OFFSET_SIZE.unpack_from(data, pos)
            _INT64.pack_into(data, pos, offset + delta)
            pos += LOG_OVERHEAD + size
        return ConvertedMessageSet(
            bytes(data),
            self.max_timestamp,
            self.offset_of_max_timestamp + delta,
            first_offset,
            self.magic,
            self.compression,
            self.log_append_time,
            self.largest_entry,
        )


def to_message_set(
    data: bytes | bytearray | memoryview,
    magic: int,
    compression: CompressionType | None,
    log_append_time: int | None,
) -> ConvertedMessageSet:
    """Validated record batches v2 (offsets assigned) as a message set of `magic`, for a
    log whose message.format.version is below 0.11.0 (Kafka's LogValidator converting
    on the way in).

    Uncompressed (`compression` NONE) gives one message per record; a codec gives one
    wrapper message per batch, whose inner messages have relative offsets in v1 and
    absolute ones in v0; None keeps each batch's own codec (compression.type=producer).
    `log_append_time` (message.timestamp.type=LogAppendTime) stamps every v1 message.

    Raises UnsupportedForMessageFormatError for a batch with a producer id (idempotent
    or transactional), and KafkaError (UNKNOWN_SERVER_ERROR, as Kafka's builder fails)
    for a record with headers or a zstd codec, which v0/v1 cannot carry.
    """
    ts_type = (
        TimestampType.LOG_APPEND_TIME
        if magic == MAGIC_V1 and log_append_time is not None
        else TimestampType.CREATE_TIME
    )
    parts: list[bytes] = []
    max_ts = NO_TIMESTAMP
    offset_of_max_ts = -1
    last_offset = -1
    first_offset = -1
    largest = 0
    for batch in MemoryRecords(data).batches():
        if first_offset < 0:
            first_offset = batch.base_offset
        if batch.is_transactional:
            raise UnsupportedForMessageFormatError(
                f"Transactional records cannot be used with magic version {magic}"
            )
        if batch.has_producer_id:
            raise UnsupportedForMessageFormatError(
                f"Idempotent records cannot be used with magic version {magic}"
            )
        codec = batch.compression_type if compression is None else compression
        if codec is CompressionType.ZSTD:
            raise KafkaError(f"ZStandard compression is not supported for magic {magic}")
        items = []
        max_record_size = 0
        for r in batch.records():
            size = RECORD_OVERHEAD[magic] + len(r.key or b"") + len(r.value or b"")
            max_record_size = max(max_record_size, size)
            if r.headers:
                raise KafkaError(
                    f"Magic v{magic} does not support record headers (the record at offset "
                    f"{r.offset}: the topic's message.format.version is below 0.11.0)"
                )
            items.append((r.offset, r.timestamp, r.key, r.value))
        if not items:
            continue
        part = build_message_set(magic, items, codec, ts_type, log_append_time)
        parts.append(part)
        largest = max(largest, len(part) if codec else LOG_OVERHEAD + max_record_size)
        last_offset = items[-1][0]
        if magic == MAGIC_V0:
            continue
        if ts_type is TimestampType.LOG_APPEND_TIME:
            if max_ts == NO_TIMESTAMP:
                max_ts = log_append_time if log_append_time is not None else NO_TIMESTAMP
                offset_of_max_ts = items[-1][0] if codec else items[0][0]
            continue
        for o, t, _k, _v in items:
            if t > max_ts:
                max_ts = t
                offset_of_max_ts = items[-1][0] if codec else o
    if max_ts == NO_TIMESTAMP:
        offset_of_max_ts = last_offset
    return ConvertedMessageSet(
        b"".join(parts), max_ts, offset_of_max_ts, first_offset, magic, compression,
        log_append_time, largest,
    )  # fmt: skip


def up_convert(
    data: bytes | bytearray | memoryview,
    decompressed_limit: int,
    compression: CompressionType | None = None,
) -> bytes:
    """A produce request's v0/v1 message set as one record batch v2 (Kafka's
    LogValidator.convertAndAssignOffsetsNonCompressed and its compressed counterpart).

    Offsets start at 0 (the log assigns the real ones); magic 0 messages get no
    timestamp (-1). The batch is compressed with `compression`, or with the codec the
    messages came in when None (the topic's compression.type=producer).
    """
    records = list(iter_legacy_records(data, decompressed_limit))
    if not records:
        raise InvalidRecordError("The produce request's message set holds no whole message")
    codec = compression if compression is not None else records[0].compression
    builder = RecordBatchBuilder(compression=codec)
    for r in records:
        builder.append(r.timestamp, r.key, r.value)
    return builder.build()


def down_convert(
    data: bytes | bytearray | memoryview, magic: int, first_offset: int
) -> tuple[bytes, bool]:
    """Record batches v2 (a fetch's stored bytes) as a message set of `magic` (Kafka's
    RecordsUtil.downConvert): one message set per batch, in the batch's codec, records
    below `first_offset` and control batches dropped, a partial trailing batch left out.

    Returns the bytes and whether a batch was compressed with zstd, which v0/v1 cannot
    carry (the caller answers UNSUPPORTED_COMPRESSION_TYPE then, as Kafka does).
    """
    parts: list[bytes] = []
    for batch in MemoryRecords(data).batches_allow_partial():
        if batch.magic < MAGIC_V2:
            # A log that was (or is) of format v0/v1 holds messages stored as they came:
            # one of the fetch's magic or older goes out as it is, a v1 one to a v0
            # client is rewritten.
            if batch.magic <= magic:
                parts.append(bytes(batch.buffer()))
                continue
            legacy = [r for r in iter_legacy_records(batch.buffer(), _STORED_LIMIT)]
            items = [(r.offset, NO_TIMESTAMP, r.key, r.value) for r in legacy]
            items = [i for i in items if i[0] >= first_offset]
            if items:
                parts.append(build_message_set(magic, items, legacy[0].compression))
            continue
        if batch.is_control or batch.last_offset < first_offset:
            continue
        codec = batch.compression_type
        if codec is CompressionType.ZSTD:
            return b"".join(parts), True
        ts_type = batch.timestamp_type
        items = [
            (r.offset, r.timestamp if magic == MAGIC_V1 else NO_TIMESTAMP, r.key, r.value)
            for r in batch.records()
            if r.offset >= first_offset
        ]
        if items:
            parts.append(build_message_set(magic, items, codec, ts_type))
    return b"".join(parts), False
