"""Building v2 record batches: what producers, tools, compaction and tests write.

The broker itself never rebuilds a batch on the produce path (it patches headers in
place); it builds batches when compacting, when a topic's `compression.type` differs
from the producer's, and for control records.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from crc32c import crc32c

from kafpy.common.time import SYSTEM_TIME
from kafpy.records.compression import CompressionType, compress
from kafpy.records.record import Header
from kafpy.records.record_batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    CRC_OFFSET,
    HEADER,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    TimestampType,
)
from kafpy.records.varint import encode_varint, encode_varlong

_UINT32 = struct.Struct(">I")
_INT32_MAX = (1 << 31) - 1
_NULL = b"\x01"  # the zigzag varint of -1: a null key, value or header value
_BYTES_TYPES = (bytes, bytearray, memoryview)


def _bytes_field(name: str, data: bytes | bytearray | memoryview | None) -> bytes:
    if data is None:
        return _NULL
    if not isinstance(data, _BYTES_TYPES):
        raise TypeError(f"record {name} must be bytes or None, not {type(data).__name__}")
    return encode_varint(len(data)) + bytes(data)


class RecordBatchBuilder:
    """Accumulates records and writes them as one magic 2 batch.

    Parameters mirror the batch header: `compression` (CompressionType), `timestamp_type`
    (CREATE_TIME, or LOG_APPEND_TIME with maxTimestamp = `log_append_time`, default the
    largest record timestamp), `base_offset`, `partition_leader_epoch`, `producer_id`,
    `producer_epoch`, `base_sequence`, `is_transactional`, `is_control`.

    Records get consecutive offsets from `base_offset` unless `append(..., offset=o)`
    names one (compaction keeps the offsets of the records it retains). The batch is
    always compressed with the chosen codec, as Kafka's Java producer does, even when
    compression does not make it smaller. `build()` may be called more than once.
    """

    def __init__(
        self,
        compression: CompressionType | int = CompressionType.NONE,
        timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        log_append_time: int | None = None,
    ) -> None:
        self.compression = CompressionType(compression)
        self.timestamp_type = TimestampType(timestamp_type)
        if self.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
            raise ValueError(
                "a magic 2 batch needs a timestamp type: CREATE_TIME or LOG_APPEND_TIME"
            )
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.log_append_time = log_append_time
        self._body = bytearray()
        self._count = 0
        self._last_offset_delta = -1
        self._first_timestamp: int | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._built: bytes | None = None

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets by default."""
        return self.base_offset + self._last_offset_delta + 1

    @property
    def uncompressed_size_in_bytes(self) -> int:
        """Header plus records as they stand, before compression."""
        return RECORD_BATCH_OVERHEAD + len(self._body)

    def append(
        self,
        timestamp: int,
        key: bytes | bytearray | memoryview | None,
        value: bytes | bytearray | memoryview | None,
        headers: Iterable[Header] = (),
        *,
        offset: int | None = None,
    ) -> None:
        """Add one record. `headers` are (str key, bytes-or-None value) pairs."""
        if offset is None:
            offset_delta = self._last_offset_delta + 1
        else:
            offset_delta = offset - self.base_offset
            if offset_delta <= self._last_offset_delta:
                raise ValueError(
                    f"offset {offset} must be greater than the last appended offset "
                    f"{self.base_offset + self._last_offset_delta} and not below the base "
                    f"offset {self.base_offset}"
                )
        if offset_delta > _INT32_MAX:
            raise ValueError(
                f"offset delta {offset_delta} does not fit in a batch (int32 at most); "
                "start a new batch"
            )
        if not isinstance(timestamp, int):
            raise TypeError(f"record timestamp must be an int (ms), not {type(timestamp).__name__}")
        first_timestamp = timestamp if self._first_timestamp is None else self._first_timestamp
        # Nothing changes until the record is fully encoded, so a bad argument leaves
        # the builder as it was.
        record = bytearray(b"\x00")  # record attributes: always 0
        record += encode_varlong(timestamp - first_timestamp)
        record += encode_varint(offset_delta)
        record += _bytes_field("key", key)
        record += _bytes_field("value", value)
        headers = headers if isinstance(headers, Sequence) else tuple(headers)
        record += encode_varint(len(headers))
        for name, header_value in headers:
            if not isinstance(name, str):
                raise TypeError(f"record header keys must be str, not {type(name).__name__}")
            encoded = name.encode("utf-8", "surrogateescape")
            record += encode_varint(len(encoded))
            record += encoded
            record += _bytes_field("header value", header_value)
        self._body += encode_varint(len(record))
        self._body += record
        self._count += 1
        self._last_offset_delta = offset_delta
        if self._first_timestamp is None:
            self._first_timestamp = self._max_timestamp = timestamp
        elif timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._built = None

    def _attributes(self) -> int:
        attributes = int(self.compression)
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if self.is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if self.is_control:
            attributes |= CONTROL_MASK
        return attributes

    def build(self) -> bytes:
        """The finished batch: header, (compressed) records, CRC-32C."""
        if self._built is not None:
            return self._built
        if self._count:
            first_timestamp = self._first_timestamp
            max_timestamp = self._max_timestamp
        else:
            first_timestamp = max_timestamp = NO_TIMESTAMP
        if (
            self.timestamp_type is TimestampType.LOG_APPEND_TIME
            and self.log_append_time is not None
        ):
            max_timestamp = self.log_append_time
        if self.compression is CompressionType.NONE:
            payload: bytes | bytearray = self._body
        else:
            payload = compress(self.compression, self._body)
        batch = bytearray(RECORD_BATCH_OVERHEAD)
        batch += payload
        HEADER.pack_into(
            batch,
            0,
            self.base_offset,
            len(batch) - LOG_OVERHEAD,
            self.partition_leader_epoch,
            MAGIC_V2,
            0,  # CRC, computed below over the finished bytes
            self._attributes(),
            max(self._last_offset_delta, 0),
            first_timestamp,
            max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self._count,
        )
        _UINT32.pack_into(batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
        self._built = bytes(batch)
        return self._built


KeyValue = tuple[bytes | None, bytes | None]
KeyValueHeaders = tuple[bytes | None, bytes | None, Sequence[Header]]


def build_batch(
    values_or_kv_pairs: Iterable[bytes | None | KeyValue | KeyValueHeaders],
    *,
    compression: CompressionType | int = CompressionType.NONE,
    base_offset: int = 0,
    timestamp: int | None = None,
    timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    log_append_time: int | None = None,
) -> bytes:
    """One batch from values, (key, value) pairs or (key, value, headers) triples.

    Every record gets `timestamp` (default: now, in ms) and consecutive offsets from
    `base_offset`.
    """
    builder = RecordBatchBuilder(
        compression=compression,
        timestamp_type=timestamp_type,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
        is_control=is_control,
        log_append_time=log_append_time,
    )
    ts = SYSTEM_TIME.milliseconds() if timestamp is None else timestamp
    for item in values_or_kv_pairs:
        if isinstance(item, tuple):
            if len(item) == 2:
                builder.append(ts, item[0], item[1])
            else:
                builder.append(ts, item[0], item[1], item[2])
        else:
            builder.append(ts, None, item)
    return builder.build()
