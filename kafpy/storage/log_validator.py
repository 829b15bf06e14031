"""LogValidator: checks the batches of an append and assigns their offsets (Kafka's LogValidator).

The leader path walks the batch headers once (one unpack per batch): for each batch it
checks the size against `max.message.bytes`, the magic byte, the CRC-32C and (for
producers) the header's own consistency, then the records, as Kafka does:

- uncompressed: every record field by field, on every topic (_check_records): lengths
  and deltas in range, no field past its record, no bytes left after its fields, the
  header's record count exact. Records that share the layout of the one before them (a
  producer's usual batch) are checked a run at a time with strided slices, in C; on a
  compacted topic, or when `message.timestamp.difference.max.ms` is set for CreateTime,
  the plain walk also checks keys and timestamps one record at a time;
- compressed: the codec must be known; the records are decompressed within
  `decompressed_limit` (MessageTooLargeError as soon as it is passed) and every record
  is walked field by field.

Failures answer CORRUPT_MESSAGE for a batch whose structure lies and INVALID_RECORD /
INVALID_TIMESTAMP for records that break a rule; the latter carry per-record errors
(`RecordValidationError.record_errors`, KIP-467). Then it patches baseOffset and
partitionLeaderEpoch, which the CRC does not cover; with `message.timestamp.type=
LogAppendTime` it also stamps the broker time into maxTimestamp and rewrites the CRC.
Records are re-encoded only when the topic's `compression.type` asks for a codec other
than the producer's. The same walk hands the producer-state check the headers of the
batches that carry a producer id (`LogAppendInfo.producer_batches`).

The offset of the max timestamp is the last offset of the batch holding it (as Kafka
reports it for compressed batches).
"""

from __future__ import annotations

from crc32c import crc32c

from kafpy.common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaError,
    MessageTooLargeError,
)
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.compression import CompressionType, decompress, decompressed_limit
from kafpy.records.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_MASK,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_SEQUENCE,
    H_FIRST_TIMESTAMP,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_MAX_TIMESTAMP,
    H_PRODUCER_ID,
    H_RECORD_COUNT,
    HEADER,
    HEADER_PATCH,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    RecordBatch,
    TimestampType,
    batch_too_small,
    ensure_batch_valid,
    header_at,
    iter_headers,
)
from kafpy.records.varint import decode_varint, decode_varlong
from kafpy.storage.log_append_info import LogAppendInfo
from kafpy.storage.log_config import LogConfig

LONG_MAX = 2**63 - 1
_WHERE = " of the append"
# The smallest record body: attributes, timestampDelta, offsetDelta, keyLength,
# valueLength and headers count, one byte each.
_MIN_RECORD_BODY = 6
_MAX_CODEC_ID = max(CompressionType)
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
# A codec, or the LogAppendTime bit (which producers must not set).
_CODEC_OR_LOG_APPEND_TIME = COMPRESSION_CODEC_MASK | TIMESTAMP_TYPE_MASK


class RecordValidationError(KafkaError):
    """Records of a batch broke a rule (Kafka's RecordValidationException).

    Answers with the code of `invalid` (INVALID_RECORD or INVALID_TIMESTAMP) and carries
    `record_errors`: (batch_index, message) per failing record, which Produce v8+
    returns as record_errors.
    """

    def __init__(self, invalid: KafkaError, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(str(invalid))
        self.code = invalid.code
        self.invalid = invalid
        self.record_errors = record_errors


def target_codec(config: LogConfig, source_codec: int) -> int:
    """The codec batches are stored with: the producer's, or the topic's compression.type."""
    name = config.compression_type
    if name == "producer":
        return source_codec
    if name == "uncompressed":
        return CompressionType.NONE
    return CompressionType.from_name(name)


def analyze_and_validate(
    buffer: memoryview, config: LogConfig, is_from_client: bool
) -> LogAppendInfo:
    """Walk the batch headers, checking sizes, magic and CRCs (Kafka's analyzeAndValidateRecords).

    A trailing partial batch is left out of `valid_bytes` (the caller trims it), as Kafka
    does. Used as is for follower appends, whose offsets are kept.
    """
    max_message_bytes = config.max_message_bytes
    end = len(buffer)
    pos = 0
    first_offset = -1
    last_offset = -1
    last_offset_of_first_batch = -1
    monotonic = True
    max_timestamp = -1
    offset_of_max_timestamp = -1
    count = 0
    num_messages = 0
    source_codec = 0
    while True:
        header = header_at(buffer, pos, end, _WHERE)
        if header is None:
            break
        size = header[H_LENGTH] + LOG_OVERHEAD
        _check_size(size, max_message_bytes)
        ensure_batch_valid(buffer, pos, header)
        base = header[H_BASE_OFFSET]
        last = base + header[H_LAST_OFFSET_DELTA]
        if first_offset < 0 and count == 0:
            first_offset = base
            last_offset_of_first_batch = last
        if last_offset >= last:
            monotonic = False
        last_offset = last
        if header[H_MAX_TIMESTAMP] > max_timestamp:
            max_timestamp = header[H_MAX_TIMESTAMP]
            offset_of_max_timestamp = last
        if header[H_ATTRIBUTES] & COMPRESSION_CODEC_MASK:
            source_codec = header[H_ATTRIBUTES] & COMPRESSION_CODEC_MASK
        count += 1
        num_messages += header[H_RECORD_COUNT]
        pos += size
    return LogAppendInfo(
        first_offset=first_offset,
        last_offset=last_offset,
        max_timestamp=max_timestamp,
        offset_of_max_timestamp=offset_of_max_timestamp,
        num_messages=num_messages,
        shallow_count=count,
        valid_bytes=pos,
        offsets_monotonic=monotonic,
        last_offset_of_first_batch=last_offset_of_first_batch,
        source_codec=source_codec,
        target_codec=target_codec(config, source_codec),
    )


class LogValidator:
    """The leader's checks and offset assignment for one log's configuration.

    Built once per LogConfig (the Log rebuilds it on update_config) so that the per-append
    path reads plain attributes instead of deriving them from the config every time.
    `topic_partition` names the log in error messages.
    """

    __slots__ = (
        "config",
        "max_message_bytes",
        "log_append_time",
        "check_timestamps",
        "diff_max",
        "producer_codec",
        "compacted",
        "topic_partition",
    )

    def __init__(self, config: LogConfig, topic_partition: object = None) -> None:
        self.config = config
        self.max_message_bytes = config.max_message_bytes
        self.log_append_time = config.message_timestamp_type == "LogAppendTime"
        self.diff_max = config.message_timestamp_difference_max_ms
        self.check_timestamps = self.diff_max < LONG_MAX and not self.log_append_time
        self.producer_codec = config.compression_type == "producer"
        self.compacted = config.compact
        self.topic_partition = topic_partition

    def validate_and_assign_offsets(
        self,
        buffer: memoryview,
        next_offset: int,
        now: int,
        leader_epoch: int,
        is_from_client: bool = True,
        records_validated: bool = False,
    ) -> tuple[memoryview, LogAppendInfo]:
        """Validate the batches of a leader append and give them offsets from `next_offset`.

        With `records_validated` (validate_records already passed for these bytes) only
        the headers are checked.

        Returns the bytes to write (the same buffer, patched in place, unless it was
        read-only or had to be re-compressed) and the append info, whose
        `producer_batches` holds (position, header) of each batch with a producer id.
        Raises MessageTooLargeError, CorruptRecordError, InvalidRecordError,
        InvalidTimestampError or RecordValidationError naming the batch. A trailing
        partial batch is left out.
        """
        max_message_bytes = self.max_message_bytes
        log_append_time = self.log_append_time
        check_timestamps = self.check_timestamps
        unpack_header = HEADER.unpack_from
        patch_header = HEADER_PATCH.pack_into
        crc = crc32c
        end = len(buffer)
        pos = 0
        offset = next_offset
        max_timestamp = -1
        offset_of_max_timestamp = -1
        count = 0
        num_messages = 0
        source_codec = 0
        last_offset_of_first_batch = -1
        patched = None
        producer_batches: list[tuple[int, BatchHeader]] = []
        while end - pos >= LOG_OVERHEAD:
            if end - pos < RECORD_BATCH_OVERHEAD:
                header_at(buffer, pos, end, _WHERE)  # raises for a bad length, else partial
                break
            header: BatchHeader = unpack_header(buffer, pos)
            (
                _,
                length,
                _,
                magic,
                stored_crc,
                attributes,
                last_delta,
                _,
                batch_max_ts,
                producer_id,
                _,
                base_sequence,
                records_in_batch,
            ) = header
            if length < MIN_BATCH_LENGTH:
                raise batch_too_small(length, pos, _WHERE)
            size = length + LOG_OVERHEAD
            if pos + size > end:
                break
            if size > max_message_bytes:
                _check_size(size, max_message_bytes)
            if magic != MAGIC_V2 or crc(buffer[pos + ATTRIBUTES_OFFSET : pos + size]) != stored_crc:
                ensure_batch_valid(buffer, pos, header)
            if is_from_client and (
                records_in_batch <= 0
                or last_delta + 1 != records_in_batch
                or (producer_id >= 0 and base_sequence < 0)
                or attributes & CONTROL_MASK
            ):
                _validate_client_batch(header)
            codec = attributes & COMPRESSION_CODEC_MASK
            if attributes & _CODEC_OR_LOG_APPEND_TIME:
                if codec > _MAX_CODEC_ID:
                    _check_codec(header)
                if attributes & TIMESTAMP_TYPE_MASK:
                    raise InvalidTimestampError(
                        f"Invalid timestamp type in the batch at offset {offset}: producers must "
                        "not set the timestamp type to LogAppendTime"
                    )
                source_codec = codec
            if check_timestamps:
                _validate_timestamps(header, offset, now, self.diff_max)
            if is_from_client and not records_validated:
                if codec or self.compacted or check_timestamps:
                    self._validate_records(buffer, pos, size, header, offset, now)
                else:
                    _check_records(buffer, pos + RECORD_BATCH_OVERHEAD, pos + size, header)
            if patched is None:
                patched = memoryview(bytearray(buffer)) if buffer.readonly else buffer
            last = offset + last_delta
            patch_header(patched, pos, offset, length, leader_epoch)
            if producer_id >= 0:
                producer_batches.append((pos, (offset, length, leader_epoch) + header[3:]))
            if log_append_time:
                RecordBatch(patched, pos).set_max_timestamp(TimestampType.LOG_APPEND_TIME, now)
            elif batch_max_ts > max_timestamp:
                max_timestamp = batch_max_ts
                offset_of_max_timestamp = last
            if count == 0:
                last_offset_of_first_batch = last
            count += 1
            num_messages += records_in_batch
            offset = last + 1
            pos += size
        if patched is None:
            patched = buffer
        target = source_codec if self.producer_codec else target_codec(self.config, source_codec)
        info = LogAppendInfo(
            next_offset if count else -1,
            offset - 1,
            max_timestamp,
            offset_of_max_timestamp,
            -1,
            0,
            num_messages,
            count,
            pos,
            True,
            last_offset_of_first_batch,
            source_codec,
            target,
            producer_batches,
        )
        if log_append_time and count:
            info.max_timestamp = now
            info.offset_of_max_timestamp = offset - 1
            info.log_append_time = now
        if target != source_codec and count:
            rebuilt = _recompress(
                patched[:pos], info, self.config, leader_epoch, now if log_append_time else None
            )
            info.producer_batches = None  # positions moved: the producer check walks again
            return rebuilt, info
        return (patched if pos == end else patched[:pos]), info

    def validate_records(self, buffer: memoryview, now: int) -> None:
        """The record checks of validate_and_assign_offsets alone, for a client's batches.

        Touches no log state, so the broker runs it off its event loop for batches that
        must be decompressed; raises as validate_and_assign_offsets would (headers are
        only parsed here, not checked: the append checks them).
        """
        for pos, header in iter_headers(buffer, where=_WHERE):
            size = header[H_LENGTH] + LOG_OVERHEAD
            self._validate_records(buffer, pos, size, header, header[H_BASE_OFFSET], now)

    def _validate_records(
        self, buffer: memoryview, pos: int, size: int, header: BatchHeader, offset: int, now: int
    ) -> None:
        """Walk every record of the batch at `pos` field by field (decompressing it first)."""
        body = buffer[pos + RECORD_BATCH_OVERHEAD : pos + size]
        codec = header[H_ATTRIBUTES] & COMPRESSION_CODEC_MASK
        count = header[H_RECORD_COUNT]
        if codec:
            limit = decompressed_limit(count, self.max_message_bytes)
            try:
                data: bytes | memoryview = decompress(codec, body, limit)
            except (CorruptRecordError, MessageTooLargeError) as exc:
                raise type(exc)(
                    f"Record batch at offset {offset} of the append is refused: {exc}"
                ) from None
        else:
            data = body
        keyless, bad_timestamps = _scan_records(
            data,
            header,
            offset,
            self.compacted,
            now - self.diff_max if self.check_timestamps else None,
            now + self.diff_max if self.check_timestamps else None,
        )
        if keyless:
            where = f" in topic partition {self.topic_partition}" if self.topic_partition else ""
            message = f"Compacted topic cannot accept message without key{where}."
            raise RecordValidationError(
                InvalidRecordError(
                    f"One or more records have been rejected: record(s) {keyless} of the batch "
                    f"at offset {offset} have no key, and a compacted topic "
                    "(cleanup.policy=compact) keeps records by key; give every record a key"
                ),
                [(i, message) for i in keyless],
            )
        if bad_timestamps:
            errors = [
                (
                    i,
                    f"Timestamp {ts} of message with offset {offset + i} is out of range. The "
                    f"timestamp should be within [{now - self.diff_max}, {now + self.diff_max}]",
                )
                for i, ts in bad_timestamps
            ]
            raise RecordValidationError(
                InvalidTimestampError(
                    f"One or more records have been rejected: {errors[0][1]} "
                    "(message.timestamp.difference.max.ms)"
                ),
                errors,
            )


def validate_and_assign_offsets(
    buffer: memoryview,
    next_offset: int,
    now: int,
    config: LogConfig,
    leader_epoch: int,
    is_from_client: bool = True,
) -> tuple[memoryview, LogAppendInfo]:
    """`LogValidator(config).validate_and_assign_offsets(...)` for one-off callers."""
    return LogValidator(config).validate_and_assign_offsets(
        buffer, next_offset, now, leader_epoch, is_from_client
    )


def _corrupt(offset: int, what: str) -> CorruptRecordError:
    return CorruptRecordError(
        f"Record batch at offset {offset} of the append is corrupt: {what}; the producer "
        "must send a well-formed batch"
    )


def _check_records(buffer: memoryview, start: int, end: int, header: BatchHeader) -> None:
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


def _scan_records(
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


def _check_size(size: int, max_message_bytes: int) -> None:
    if size > max_message_bytes:
        raise MessageTooLargeError(
            f"The record batch size in the append is {size} bytes which exceeds the maximum "
            f"configured value of {max_message_bytes} (max.message.bytes); raise the topic's "
            "max.message.bytes or send smaller batches"
        )


def _check_codec(header: BatchHeader) -> None:
    try:
        CompressionType.from_id(header[H_ATTRIBUTES] & COMPRESSION_CODEC_MASK)
    except CorruptRecordError as exc:
        raise CorruptRecordError(
            f"Record batch at base offset {header[H_BASE_OFFSET]} is corrupt: {exc}"
        ) from None


def _validate_client_batch(header: BatchHeader) -> None:
    count = header[H_RECORD_COUNT]
    if count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {count}")
    if header[H_LAST_OFFSET_DELTA] + 1 != count:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [{header[H_BASE_OFFSET]}, "
            f"{header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA]}] and count of records {count}"
        )
    if header[H_PRODUCER_ID] >= 0 and header[H_BASE_SEQUENCE] < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {header[H_BASE_SEQUENCE]} in record batch with producerId "
            f"{header[H_PRODUCER_ID]}"
        )
    if header[H_ATTRIBUTES] & CONTROL_MASK:
        raise InvalidRecordError("Clients are not allowed to write control records")


def _validate_timestamps(header: BatchHeader, offset: int, now: int, diff_max: int) -> None:
    for ts in (header[H_FIRST_TIMESTAMP], header[H_MAX_TIMESTAMP]):
        if ts != -1 and abs(ts - now) > diff_max:
            raise InvalidTimestampError(
                f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp "
                f"should be within [{now - diff_max}, {now + diff_max}] "
                "(message.timestamp.difference.max.ms)"
            )


def _recompress(
    data: memoryview,
    info: LogAppendInfo,
    config: LogConfig,
    leader_epoch: int,
    log_append_time: int | None,
) -> memoryview:
    """Rebuild each batch with the topic's codec (offsets already assigned), as Kafka does
    when compression.type names a codec other than the producer's."""
    out = bytearray()
    pos = 0
    end = len(data)
    while pos < end:
        batch = RecordBatch(data, pos)
        builder = RecordBatchBuilder(
            compression=info.target_codec,
            timestamp_type=TimestampType.LOG_APPEND_TIME
            if log_append_time is not None
            else TimestampType.CREATE_TIME,
            base_offset=batch.base_offset,
            partition_leader_epoch=leader_epoch,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            log_append_time=log_append_time,
        )
        for record in batch.records():
            builder.append(
                record.timestamp, record.key, record.value, record.headers, offset=record.offset
            )
        built = builder.build()
        _check_size(len(built), config.max_message_bytes)
        out += built
        pos += batch.size_in_bytes
    return memoryview(out)
