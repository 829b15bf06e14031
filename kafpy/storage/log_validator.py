"""LogValidator: checks the batches of an append and assigns their offsets (Kafka's LogValidator).

The leader path works on batch headers only, in place: for each batch it checks the
size against `max.message.bytes`, the magic byte, the CRC-32C and (for producers) the
header's own consistency, then patches baseOffset and partitionLeaderEpoch, which the
CRC does not cover. With `message.timestamp.type=LogAppendTime` it also stamps the
broker time into maxTimestamp and rewrites the CRC. Records are decoded only when the
topic's `compression.type` asks for a codec other than the producer's (re-compression).

Differences from Kafka, on purpose: Kafka decodes every record of a batch on the leader
to check record timestamps and, for compressed batches, inner offsets; kafpy checks the
batch's first and max timestamps against `message.timestamp.difference.max.ms` and
trusts the CRC for the rest, so the produce path never touches single records. The
offset of the max timestamp is the last offset of the batch holding it (as Kafka
reports it for compressed batches).
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from kafpy.common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
)
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.compression import CompressionType
from kafpy.records.record_batch import (
    HEADER,
    LOG_OVERHEAD,
    MAGIC_V2,
    RecordBatch,
    TimestampType,
)
from kafpy.storage.file_records import MIN_BATCH_LENGTH
from kafpy.storage.log_append_info import LogAppendInfo
from kafpy.storage.log_config import LogConfig

LONG_MAX = 2**63 - 1
_CRC_START = 21
_HEADER_SIZE = HEADER.size
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_CONTROL_MASK = 0x20
# The first 16 bytes of a batch: baseOffset, batchLength, partitionLeaderEpoch (none in the CRC).
HEADER_PATCH = struct.Struct(">qii")


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
    while end - pos >= LOG_OVERHEAD:
        header = _header_at(buffer, pos, end)
        if header is None:
            break
        size = header[1] + LOG_OVERHEAD
        _check_size(size, max_message_bytes)
        _check_magic_and_crc(buffer, pos, size, header)
        base = header[0]
        last = base + header[6]
        if first_offset < 0 and count == 0:
            first_offset = base
            last_offset_of_first_batch = last
        if last_offset >= last:
            monotonic = False
        last_offset = last
        if header[8] > max_timestamp:
            max_timestamp = header[8]
            offset_of_max_timestamp = last
        if header[5] & _CODEC_MASK:
            source_codec = header[5] & _CODEC_MASK
        count += 1
        num_messages += header[12]
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
    """

    __slots__ = (
        "config",
        "max_message_bytes",
        "log_append_time",
        "check_timestamps",
        "diff_max",
        "producer_codec",
    )

    def __init__(self, config: LogConfig) -> None:
        self.config = config
        self.max_message_bytes = config.max_message_bytes
        self.log_append_time = config.message_timestamp_type == "LogAppendTime"
        self.diff_max = config.message_timestamp_difference_max_ms
        self.check_timestamps = self.diff_max < LONG_MAX and not self.log_append_time
        self.producer_codec = config.compression_type == "producer"

    def validate_and_assign_offsets(
        self,
        buffer: memoryview,
        next_offset: int,
        now: int,
        leader_epoch: int,
        is_from_client: bool = True,
    ) -> tuple[memoryview, LogAppendInfo]:
        """Validate the batches of a leader append and give them offsets from `next_offset`.

        Returns the bytes to write (the same buffer, patched in place, unless it was
        read-only or had to be re-compressed) and the append info. Raises
        MessageTooLargeError, CorruptRecordError, InvalidRecordError or
        InvalidTimestampError naming the batch. A trailing partial batch is left out.
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
        while end - pos >= 12:  # LOG_OVERHEAD
            if end - pos < 61:  # RECORD_BATCH_OVERHEAD
                _header_at(buffer, pos, end)  # raises for a bad length, else it is partial
                break
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
            ) = unpack_header(buffer, pos)
            if length < MIN_BATCH_LENGTH:
                raise _too_small(length, pos)
            size = length + 12
            if pos + size > end:
                break
            if size > max_message_bytes:
                _check_size(size, max_message_bytes)
            if magic != 2 or crc(buffer[pos + 21 : pos + size]) != stored_crc:
                _check_magic_and_crc(buffer, pos, size, unpack_header(buffer, pos))
            if is_from_client and (
                records_in_batch <= 0
                or last_delta + 1 != records_in_batch
                or (producer_id >= 0 and base_sequence < 0)
                or attributes & _CONTROL_MASK
            ):
                _validate_client_batch(unpack_header(buffer, pos))
            if attributes & 0x0F:  # a codec or the LogAppendTime bit
                if attributes & _TIMESTAMP_TYPE_MASK:
                    raise InvalidTimestampError(
                        f"Invalid timestamp type in the batch at offset {offset}: producers must "
                        "not set the timestamp type to LogAppendTime"
                    )
                source_codec = attributes & _CODEC_MASK
            if check_timestamps:
                _validate_timestamps(unpack_header(buffer, pos), offset, now, self.diff_max)
            if patched is None:
                patched = memoryview(bytearray(buffer)) if buffer.readonly else buffer
            last = offset + last_delta
            patch_header(patched, pos, offset, length, leader_epoch)
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
        codec = source_codec if self.producer_codec else target_codec(self.config, source_codec)
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
            codec,
        )
        if log_append_time and count:
            info.max_timestamp = now
            info.offset_of_max_timestamp = offset - 1
            info.log_append_time = now
        if codec != source_codec and count:
            rebuilt = _recompress(
                patched[:pos], info, self.config, leader_epoch, now if log_append_time else None
            )
            return rebuilt, info
        return (patched if pos == end else patched[:pos]), info


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


def _header_at(buffer: memoryview, pos: int, end: int) -> tuple[int, ...] | None:
    """The header at `pos`, or None if the batch there is incomplete."""
    if end - pos < _HEADER_SIZE:
        length = int.from_bytes(buffer[pos + 8 : pos + 12], "big", signed=True)
        if length < MIN_BATCH_LENGTH:
            raise _too_small(length, pos)
        return None
    header = HEADER.unpack_from(buffer, pos)
    if header[1] < MIN_BATCH_LENGTH:
        raise _too_small(header[1], pos)
    if pos + header[1] + LOG_OVERHEAD > end:
        return None
    return header


def _too_small(length: int, pos: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"Record batch at position {pos} of the append is corrupt: its length field says "
        f"{length} bytes, fewer than the {MIN_BATCH_LENGTH} a batch header takes"
    )


def _check_size(size: int, max_message_bytes: int) -> None:
    if size > max_message_bytes:
        raise MessageTooLargeError(
            f"The record batch size in the append is {size} bytes which exceeds the maximum "
            f"configured value of {max_message_bytes} (max.message.bytes); raise the topic's "
            "max.message.bytes or send smaller batches"
        )


def _check_magic_and_crc(buffer: memoryview, pos: int, size: int, header: tuple[int, ...]) -> None:
    if header[3] != MAGIC_V2:
        raise InvalidRecordError(
            f"Record batch magic byte {header[3]} is not supported; kafpy stores only magic 2 "
            "(Kafka 0.11 and later clients)"
        )
    computed = crc32c(buffer[pos + _CRC_START : pos + size])
    if computed != header[4]:
        raise CorruptRecordError(
            f"Record batch at base offset {header[0]} is corrupt: stored CRC-32C "
            f"{header[4]:#010x} does not match {computed:#010x} computed over its {size} bytes"
        )


def _validate_client_batch(header: tuple[int, ...]) -> None:
    count = header[12]
    if count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {count}")
    if header[6] + 1 != count:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [{header[0]}, {header[0] + header[6]}] and "
            f"count of records {count}"
        )
    if header[9] >= 0 and header[11] < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {header[11]} in record batch with producerId {header[9]}"
        )
    if header[5] & _CONTROL_MASK:
        raise InvalidRecordError("Clients are not allowed to write control records")


def _validate_timestamps(header: tuple[int, ...], offset: int, now: int, diff_max: int) -> None:
    for ts in (header[7], header[8]):
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
