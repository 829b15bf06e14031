"""LogValidator: checks the batches of an append and assigns their offsets (Kafka's LogValidator).

The leader path walks the batch headers once (one unpack per batch): for each batch it
checks the size against `max.message.bytes`, the magic byte, the CRC-32C and (for
producers) the header's own consistency, then the records, as Kafka does:

- uncompressed: every record field by field, on every topic (check_records, in records/record_validation.py): lengths
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

A log whose message.format.version is below 0.11.0 stores message format v0/v1: after
these checks the batches are rewritten in that format (`to_message_set`), and what it
cannot hold (producer ids, headers, zstd) is refused as Kafka refuses it.
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
from kafpy.records.legacy_record import ConvertedMessageSet, to_message_set
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
    ensure_entry_valid,
    header_at,
    iter_headers,
)
from kafpy.records.record_validation import check_records, scan_records
from kafpy.storage.log_append_info import LogAppendInfo
from kafpy.storage.log_config import LogConfig

LONG_MAX = 2**63 - 1
_WHERE = " of the append"
_MAX_CODEC_ID = max(CompressionType)
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
        ensure_entry_valid(buffer, pos, header)
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
        "record_version",
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
        self.record_version = config.record_version

    def validate_and_assign_offsets(
        self,
        buffer: memoryview,
        next_offset: int,
        now: int,
        leader_epoch: int,
        is_from_client: bool = True,
        records_validated: bool = False,
        converted: ConvertedMessageSet | None = None,
    ) -> tuple[memoryview, LogAppendInfo]:
        """Validate the batches of a leader append and give them offsets from `next_offset`.

        With `records_validated` (validate_records already passed for these bytes) only
        the headers are checked. `converted` is these bytes already written in the log's
        message format v0/v1 (off the event loop); when it was made for this log's
        format and codec it is only moved to its offsets.

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
                    check_records(buffer, pos + RECORD_BATCH_OVERHEAD, pos + size, header)
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
        if self.record_version < MAGIC_V2 and count:
            lat = now if log_append_time else None
            if converted is not None and pos == end:
                return self._to_message_set(patched[:pos], info, lat, converted)
            return self._to_message_set(patched[:pos], info, lat)
        if target != source_codec and count:
            rebuilt = _recompress(
                patched[:pos], info, self.config, leader_epoch, now if log_append_time else None
            )
            info.producer_batches = None  # positions moved: the producer check walks again
            return rebuilt, info
        return (patched if pos == end else patched[:pos]), info

    def _to_message_set(
        self,
        data: memoryview,
        info: LogAppendInfo,
        log_append_time: int | None,
        done: ConvertedMessageSet | None = None,
    ) -> tuple[memoryview, LogAppendInfo]:
        """The checked v2 batches as the message set of the log's format (v0/v1), as Kafka's
        LogValidator converts to an older message.format.version on the way in; `done`
        when that conversion was made ahead for this format and codec."""
        codec = None if self.producer_codec else CompressionType(info.target_codec)
        if done is not None and (done.magic, done.compression, done.log_append_time) == (
            self.record_version,
            codec,
            log_append_time,
        ):
            converted = done.moved_to(info.first_offset)
        else:
            converted = to_message_set(data, self.record_version, codec, log_append_time)
        info.max_timestamp = converted.max_timestamp
        info.offset_of_max_timestamp = converted.offset_of_max_timestamp
        info.valid_bytes = len(converted.data)
        info.producer_batches = []
        _check_size(converted.largest_entry, self.max_message_bytes)
        return memoryview(converted.data), info

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
        keyless, bad_timestamps = scan_records(
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
