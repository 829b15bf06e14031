"""A zero-copy view over one v2 record batch (magic 2), the unit Kafka stores and ships.

Layout (big-endian), as on the wire and in a segment file::

    0  baseOffset int64            \\ LOG_OVERHEAD (12 bytes): not covered by the CRC
    8  batchLength int32           /  batchLength counts the bytes after this field
    12 partitionLeaderEpoch int32     not covered by the CRC either
    16 magic int8
    17 crc uint32                     CRC-32C of everything from attributes to the end
    21 attributes int16               bits 0-2 codec, 3 timestamp type, 4 transactional,
                                      5 control
    23 lastOffsetDelta int32
    27 firstTimestamp int64
    35 maxTimestamp int64
    43 producerId int64
    51 producerEpoch int16
    53 baseSequence int32
    57 recordCount int32
    61 records (compressed as one stream when the codec is not none)

A log may also hold the message sets of formats v0 and v1 (a topic whose
message.format.version is below 0.11.0, now or earlier). Their entries share the first
17 bytes' meaning (offset, then a length counting the bytes after it, then the magic at
byte 16), so the walkers below read either: for a v0/v1 entry they hand out a header
synthesized from the message (`legacy_header`), whose offset is the entry's offset (the
last offset of a compressed wrapper) and whose lastOffsetDelta is 0, as Kafka's legacy
batches answer lastOffset without decompressing.

The broker's hot paths use only the header: `RecordBatch` parses it with one
`struct.unpack_from` on the caller's buffer, checks the CRC over a memoryview slice and
patches offsets in place. Records are decoded only when `records()` is called.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterator
from enum import IntEnum
from functools import partial

from crc32c import crc32c

from kafpy.common.errors import CorruptRecordError, InvalidRecordError
from kafpy.records.compression import CompressionType, decompress
from kafpy.records.record import Header, Record
from kafpy.records.varint import decode_varlong

__all__ = [
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "Record",
    "RecordBatch",
    "TimestampType",
]

LOG_OVERHEAD = 12
RECORD_BATCH_OVERHEAD = 61
MAGIC_V2 = 2

NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

# The whole header in one unpack; the tuple's indexes are the H_* names below.
HEADER = struct.Struct(">qiibIhiqqqhii")
# The first 16 bytes: baseOffset, batchLength, partitionLeaderEpoch (none covered by the CRC).
HEADER_PATCH = struct.Struct(">qii")
# What locating a batch by offset takes: baseOffset, batchLength, magic, lastOffsetDelta.
HEADER_LOCATION = struct.Struct(">qi4xb4x2xi")

# Field offsets from the start of a batch (Kafka's DefaultRecordBatch *_OFFSET constants).
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
FIRST_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = RECORD_BATCH_OVERHEAD

# Indexes into a HEADER tuple (a `BatchHeader`).
H_BASE_OFFSET = 0
H_LENGTH = 1
H_LEADER_EPOCH = 2
H_MAGIC = 3
H_CRC = 4
H_ATTRIBUTES = 5
H_LAST_OFFSET_DELTA = 6
H_FIRST_TIMESTAMP = 7
H_MAX_TIMESTAMP = 8
H_PRODUCER_ID = 9
H_PRODUCER_EPOCH = 10
H_BASE_SEQUENCE = 11
H_RECORD_COUNT = 12

BatchHeader = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int]

# Attribute bits.
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

# The smallest batchLength of a v2 batch: its header after the length field.
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
# The smallest batchLength that can hold the magic byte (the field that says how to read
# the rest).
_MIN_LENGTH_TO_MAGIC = MAGIC_OFFSET + 1 - LOG_OVERHEAD
_MIN_V2_LENGTH = MIN_BATCH_LENGTH

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_INT32_MAX = (1 << 31) - 1
# How far a stored v0/v1 wrapper may decompress when read back (it was checked on append).
_LEGACY_DECOMPRESSED_LIMIT = 1 << 31

Buffer = bytes | bytearray | memoryview


class TimestampType(IntEnum):
    """Whether record timestamps were set by the producer or by the broker on append."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        """The name Kafka's `message.timestamp.type` config uses."""
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[self.value]

    @classmethod
    def from_name(cls, name: str) -> TimestampType:
        """The type for a `message.timestamp.type` value ("CreateTime" / "LogAppendTime")."""
        for member in cls:
            if member.kafka_name == name:
                return member
        raise ValueError(f"Unknown timestamp type {name!r}; expected CreateTime or LogAppendTime")


def as_byte_view(buffer: object) -> memoryview:
    """A memoryview of unsigned bytes over any buffer (bytes, bytearray, mmap, memoryview)."""
    view = buffer if isinstance(buffer, memoryview) else memoryview(buffer)  # type: ignore[arg-type]
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


# Message format v0/v1: offset int64, size int32, crc uint32, magic int8, attributes int8.
_LEGACY_PREFIX = struct.Struct(">qiIbb")
# LegacyRecord.RECORD_OVERHEAD_V0 / _V1: the smallest message length of each magic.
LEGACY_MIN_LENGTH = (14, 22)
_LEGACY_TIMESTAMP_OFFSET = 18
_LEGACY_CODEC_AND_TIMESTAMP_TYPE = (
    COMPRESSION_CODEC_MASK,
    COMPRESSION_CODEC_MASK | TIMESTAMP_TYPE_MASK,
)


def legacy_header(buffer: Buffer, at: int) -> BatchHeader:
    """A v2-shaped header for the v0/v1 message at `at` (whose length was checked).

    baseOffset and lastOffset are both the message's offset (for a compressed wrapper,
    the offset of its last inner message), the record count is 1 (inner messages are
    counted only by decompressing), firstTimestamp and maxTimestamp are the message's
    timestamp (-1 in v0), and there is no producer id, epoch or sequence.
    """
    offset, length, crc, magic, attributes = _LEGACY_PREFIX.unpack_from(buffer, at)
    timestamp = NO_TIMESTAMP
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buffer, at + _LEGACY_TIMESTAMP_OFFSET)
    attributes &= _LEGACY_CODEC_AND_TIMESTAMP_TYPE[magic]
    return (
        offset,
        length,
        NO_PARTITION_LEADER_EPOCH,
        magic,
        crc,
        attributes,
        0,
        timestamp,
        timestamp,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        1,
    )


def legacy_too_small(length: int, magic: int, position: int, where: str) -> CorruptRecordError:
    """The error for a v0/v1 message whose length cannot hold its own fields."""
    return CorruptRecordError(
        f"Message at position {position}{where} is corrupt: its size field says {length} "
        f"bytes, fewer than the minimum of {LEGACY_MIN_LENGTH[magic]} for magic {magic}"
    )


def entry_header(buffer: Buffer, at: int, length: int, position: int, where: str) -> BatchHeader:
    """The header of the whole entry (v2 batch or v0/v1 message) at `at`, whose length
    field `length` was read and whose bytes are all in `buffer`; CorruptRecordError for a
    length its format cannot have."""
    if length < _MIN_LENGTH_TO_MAGIC:
        raise batch_too_small(length, position, where)
    magic = buffer[at + MAGIC_OFFSET]
    if magic < MAGIC_V2:
        if length < LEGACY_MIN_LENGTH[magic]:
            raise legacy_too_small(length, magic, position, where)
        return legacy_header(buffer, at)
    if length < MIN_BATCH_LENGTH:
        raise batch_too_small(length, position, where)
    header: BatchHeader = HEADER.unpack_from(buffer, at)
    return header


def batch_too_small(length: int, position: int, where: str) -> CorruptRecordError:
    """The error for a length field too small to hold a v2 batch header."""
    return CorruptRecordError(
        f"Record batch at position {position}{where} is corrupt: its length field says "
        f"{length} bytes, fewer than the minimum batch overhead ({MIN_BATCH_LENGTH}) its "
        "header takes"
    )


def header_at(
    buffer: Buffer, position: int, end: int, where: str = "", offset: int | None = None
) -> BatchHeader | None:
    """The header of the batch at `position`, or None if that batch does not end by `end`.

    `buffer` holds the bytes from `offset` (default: `position`, i.e. the whole buffer is
    the log): a file reader passes the 61 bytes it read. CorruptRecordError (naming
    `where`, e.g. " in file X") for a length field too small for its format. A v0/v1
    message gets the header `legacy_header` synthesizes.
    """
    if end - position < LOG_OVERHEAD:
        return None
    at = position if offset is None else offset
    available = len(buffer) - at
    if available > MAGIC_OFFSET and buffer[at + MAGIC_OFFSET] < MAGIC_V2:
        (length,) = _INT32.unpack_from(buffer, at + LENGTH_OFFSET)
        if position + LOG_OVERHEAD + length > end and length >= _MIN_LENGTH_TO_MAGIC:
            return None
        # The whole message ends by `end`, so a file reader's 61 bytes hold its fields.
        return entry_header(buffer, at, length, position, where)
    if available < RECORD_BATCH_OVERHEAD:
        if available >= LOG_OVERHEAD:
            (length,) = _INT32.unpack_from(buffer, at + LENGTH_OFFSET)
            if length < _MIN_LENGTH_TO_MAGIC:
                raise batch_too_small(length, position, where)
            if available > MAGIC_OFFSET and length < MIN_BATCH_LENGTH:
                raise batch_too_small(length, position, where)
        return None
    header: BatchHeader = HEADER.unpack_from(buffer, at)
    if header[H_LENGTH] < MIN_BATCH_LENGTH:
        raise batch_too_small(header[H_LENGTH], position, where)
    if position + LOG_OVERHEAD + header[H_LENGTH] > end:
        return None
    return header


def iter_headers(
    buffer: Buffer, start: int = 0, end: int | None = None, where: str = ""
) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each complete batch of `buffer` from `start`; stops at a
    partial one. One unpack per batch, no record touched."""
    end = len(buffer) if end is None else end
    pos = start
    while True:
        header = header_at(buffer, pos, end, where)
        if header is None:
            return
        yield pos, header
        pos += header[H_LENGTH] + LOG_OVERHEAD


def iter_file_headers(
    fd: int, start: int, end: int, where: str = ""
) -> Iterator[tuple[int, BatchHeader]]:
    """`iter_headers` over a file: one 61-byte `pread` per batch."""
    pos = start
    while end - pos >= LOG_OVERHEAD:
        header = header_at(os.pread(fd, RECORD_BATCH_OVERHEAD, pos), pos, end, where, 0)
        if header is None:
            return
        yield pos, header
        pos += header[H_LENGTH] + LOG_OVERHEAD


def iter_file_batches(
    fd: int,
    start: int,
    end: int,
    chunk_size: int,
    where: str = "",
    check: Callable[[], None] | None = None,
) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """(position, header, bytes) of each complete batch of a file, read `chunk_size`
    bytes at a time (a batch larger than a chunk is read alone). Stops at a partial
    trailing batch; `check` runs before each read, so a caller can abort between reads.
    """
    pos = start
    while end - pos >= LOG_OVERHEAD:
        if check is not None:
            check()
        chunk = memoryview(os.pread(fd, min(chunk_size, end - pos), pos))
        n = len(chunk)
        off = 0
        while n - off >= LOG_OVERHEAD:
            (length,) = _INT32.unpack_from(chunk, off + LENGTH_OFFSET)
            if length < _MIN_LENGTH_TO_MAGIC:
                raise batch_too_small(length, pos + off, where)
            size = length + LOG_OVERHEAD
            if off + size > n:
                break  # the batch runs past this chunk
            yield (
                pos + off,
                entry_header(chunk, off, length, pos + off, where),
                chunk[off : off + size],
            )
            off += size
        if off == 0:
            # The batch at `pos` is larger than a chunk, or torn at the end of the file.
            (length,) = _INT32.unpack_from(chunk, LENGTH_OFFSET)
            size = length + LOG_OVERHEAD
            if pos + size > end:
                return
            data = memoryview(os.pread(fd, size, pos))
            yield pos, entry_header(data, 0, length, pos, where), data
            off = size
        pos += off


def ensure_batch_valid(buffer: Buffer, position: int, header: tuple[int, ...]) -> None:
    """Check the batch of `header` at `position`: InvalidRecordError for a magic other
    than 2, CorruptRecordError when its bytes do not have its stored CRC-32C (Kafka's
    DefaultRecordBatch.ensureValid)."""
    _ensure_magic(header)
    size = header[H_LENGTH] + LOG_OVERHEAD
    computed = crc32c(buffer[position + ATTRIBUTES_OFFSET : position + size])
    if computed != header[H_CRC]:
        raise CorruptRecordError(
            f"Record batch at base offset {header[H_BASE_OFFSET]} is corrupt: stored CRC-32C "
            f"{header[H_CRC]:#010x} does not match {computed:#010x} computed over its {size} bytes"
        )


def ensure_entry_valid(buffer: Buffer, position: int, header: tuple[int, ...]) -> None:
    """`ensure_batch_valid` for stored data, which may also hold v0/v1 messages: those
    are checked against their CRC-32 (Kafka's LegacyRecord.ensureValid)."""
    magic = header[H_MAGIC]
    if magic >= MAGIC_V2:
        ensure_batch_valid(buffer, position, header)
        return
    size = header[H_LENGTH] + LOG_OVERHEAD
    computed = zlib.crc32(buffer[position + MAGIC_OFFSET : position + size])
    if computed != header[H_CRC]:
        raise CorruptRecordError(
            f"Message at offset {header[H_BASE_OFFSET]} is corrupt: stored CRC-32 "
            f"{header[H_CRC]:#010x} does not match {computed:#010x} computed over its "
            f"{size - MAGIC_OFFSET} bytes from the magic byte"
        )


def _ensure_magic(header: tuple[int, ...]) -> None:
    magic = header[H_MAGIC]
    if magic != MAGIC_V2:
        raise InvalidRecordError(
            f"Record batch magic byte {magic} is not supported here: a record batch must "
            f"be magic 2 (Kafka 0.11 and later). The batch at base offset "
            f"{header[H_BASE_OFFSET]} comes from an older client: upgrade it or configure "
            "it for broker version 0.11 or newer"
        )


class RecordBatch:
    """One record batch in a buffer: header fields, validation, in-place patches, records.

    `RecordBatch(buffer, position=0)` reads the batch starting at `position`. The
    constructor checks only that the whole batch is present (CorruptRecordError naming
    the needed and available byte counts otherwise); `is_valid()` / `ensure_valid()`
    check the magic byte and the CRC-32C. The header is parsed once; the `set_*`
    methods write through to the buffer (which must then be writable, e.g. a bytearray)
    and keep the parsed header in step. Another view writing the same bytes is not seen.

    The view holds a memoryview of the buffer, so an mmap under it cannot be closed
    while the batch is referenced.
    """

    __slots__ = ("_buf", "_pos", "_header")

    _header: tuple[int, ...]

    def __init__(self, buffer: Buffer, position: int = 0) -> None:
        buf = as_byte_view(buffer)
        available = len(buf) - position
        if position < 0 or available < 0:
            raise ValueError(f"position {position} is outside the {len(buf)}-byte buffer")
        if available < LOG_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch at position {position} is truncated: needs {LOG_OVERHEAD} "
                f"bytes to read its offset and length, has {available}"
            )
        base_offset, length = struct.unpack_from(">qi", buf, position)
        if length < _MIN_LENGTH_TO_MAGIC:
            raise CorruptRecordError(
                f"Record batch at base offset {base_offset} (position {position}) is "
                f"corrupt: its length field says {length} bytes, too few to hold even "
                "the magic byte"
            )
        needed = LOG_OVERHEAD + length
        if needed > available:
            raise CorruptRecordError(
                f"Record batch at base offset {base_offset} (position {position}) is "
                f"truncated: needs {needed} bytes, has {available}"
            )
        magic = buf[position + MAGIC_OFFSET]
        if magic == MAGIC_V2:
            if length < _MIN_V2_LENGTH:
                raise CorruptRecordError(
                    f"Record batch at base offset {base_offset} (position {position}) is "
                    f"corrupt: its length field says {length} bytes, fewer than the "
                    f"{_MIN_V2_LENGTH} its own header takes"
                )
            header = HEADER.unpack_from(buf, position)
        elif magic < MAGIC_V2:
            if length < LEGACY_MIN_LENGTH[magic]:
                raise legacy_too_small(length, magic, position, "")
            header = legacy_header(buf, position)
        else:
            # An unknown magic: parse the rest from a padded copy so that properties
            # work and ensure_valid() can say why the batch is refused.
            raw = bytes(buf[position : position + min(needed, RECORD_BATCH_OVERHEAD)])
            header = HEADER.unpack(raw.ljust(RECORD_BATCH_OVERHEAD, b"\x00"))
        self._buf = buf
        self._pos = position
        self._header = header

    # --- header fields -------------------------------------------------------

    @property
    def base_offset(self) -> int:
        return self._header[0]

    @property
    def batch_length(self) -> int:
        """The length field: bytes after it (size_in_bytes - LOG_OVERHEAD)."""
        return self._header[1]

    @property
    def size_in_bytes(self) -> int:
        return self._header[1] + LOG_OVERHEAD

    @property
    def partition_leader_epoch(self) -> int:
        return self._header[2]

    @property
    def magic(self) -> int:
        return self._header[3]

    @property
    def crc(self) -> int:
        """The stored CRC-32C (see compute_crc for the one the bytes have)."""
        return self._header[4]

    @property
    def attributes(self) -> int:
        return self._header[5]

    @property
    def compression_type(self) -> CompressionType:
        """The codec; CorruptRecordError for an id Kafka does not define (5-7)."""
        try:
            return CompressionType.from_id(self._header[5] & COMPRESSION_CODEC_MASK)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"Record batch at base offset {self._header[0]} is corrupt: {exc}"
            ) from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self._header[3] == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self._header[5] & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._header[5] & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._header[5] & CONTROL_MASK)

    @property
    def last_offset_delta(self) -> int:
        return self._header[6]

    @property
    def first_timestamp(self) -> int:
        return self._header[7]

    @property
    def max_timestamp(self) -> int:
        return self._header[8]

    @property
    def producer_id(self) -> int:
        return self._header[9]

    @property
    def producer_epoch(self) -> int:
        return self._header[10]

    @property
    def base_sequence(self) -> int:
        return self._header[11]

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record (wrapping at int32 max), or -1 if none."""
        return _sequence_at(self._header[11], self._header[6])

    @property
    def has_producer_id(self) -> bool:
        return self._header[9] > NO_PRODUCER_ID

    @property
    def record_count(self) -> int:
        return self._header[12]

    @property
    def last_offset(self) -> int:
        return self._header[0] + self._header[6]

    @property
    def next_offset(self) -> int:
        return self._header[0] + self._header[6] + 1

    @property
    def position(self) -> int:
        """Where the batch starts in the buffer it was read from."""
        return self._pos

    def buffer(self) -> memoryview:
        """Exactly this batch's bytes (a view, no copy)."""
        return self._buf[self._pos : self._pos + self._header[1] + LOG_OVERHEAD]

    # --- validation ----------------------------------------------------------

    def compute_crc(self) -> int:
        """The CRC-32C of the bytes from attributes to the end of the batch."""
        start = self._pos + ATTRIBUTES_OFFSET
        return crc32c(self._buf[start : self._pos + self._header[1] + LOG_OVERHEAD])

    def is_valid(self) -> bool:
        """True if the batch is magic 2 and its stored CRC matches its bytes."""
        return self._header[3] == MAGIC_V2 and self._header[4] == self.compute_crc()

    def is_entry_valid(self) -> bool:
        """`is_valid` that also accepts a v0/v1 message with a matching CRC-32 (what a
        log may hold)."""
        try:
            self.ensure_entry_valid()
        except (CorruptRecordError, InvalidRecordError):
            return False
        return True

    def ensure_valid(self) -> None:
        """Raise InvalidRecordError for a magic other than 2, CorruptRecordError for a bad CRC."""
        ensure_batch_valid(self._buf, self._pos, self._header)

    def ensure_entry_valid(self) -> None:
        """`ensure_valid` that also accepts a v0/v1 message with a matching CRC-32."""
        ensure_entry_valid(self._buf, self._pos, self._header)

    @property
    def is_legacy(self) -> bool:
        """True for a message of format v0/v1 (a wrapper, when compressed)."""
        return self._header[3] < MAGIC_V2

    def ensure_offsets_match_count(self) -> None:
        """Raise InvalidRecordError unless the batch has records and lastOffsetDelta + 1 of them.

        Kafka's LogValidator applies this to batches from producers (not replicas): the
        broker assigns offsets by the header alone, so the header must agree with itself.
        """
        count = self._header[12]
        if count <= 0:
            raise InvalidRecordError(
                f"Record batch at base offset {self._header[0]} declares {count} records; "
                "a produced batch must hold at least one"
            )
        if self._header[6] + 1 != count:
            raise InvalidRecordError(
                f"Record batch at base offset {self._header[0]} is inconsistent: "
                f"lastOffsetDelta {self._header[6]} implies {self._header[6] + 1} records "
                f"but the record count is {count}"
            )

    # --- in-place patches (CRC-neutral unless said otherwise) ----------------

    def _writable(self) -> memoryview:
        if self._buf.readonly:
            raise TypeError(
                f"Record batch at base offset {self._header[0]} lives in a read-only "
                "buffer; copy it into a bytearray before patching it"
            )
        return self._buf

    def _reparse(self) -> None:
        header = HEADER.unpack_from(self._buf, self._pos)
        if self._header[3] != MAGIC_V2:  # keep the padded fields of a non-v2 batch
            header = header[:3] + self._header[3:]
        self._header = header

    def set_base_offset(self, offset: int) -> None:
        """Write baseOffset (outside the CRC, so the CRC stays valid)."""
        _INT64.pack_into(self._writable(), self._pos + BASE_OFFSET_OFFSET, offset)
        self._header = (offset,) + self._header[1:]

    def set_last_offset(self, offset: int) -> None:
        """Move the batch so that its last record gets `offset`."""
        self.set_base_offset(offset - self._header[6])

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Write partitionLeaderEpoch (outside the CRC, so the CRC stays valid)."""
        _INT32.pack_into(self._writable(), self._pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)
        header = self._header
        self._header = header[:2] + (epoch,) + header[3:]

    def set_max_timestamp(self, timestamp_type: TimestampType | int, timestamp: int) -> None:
        """Set the timestamp type bit and maxTimestamp, then rewrite the CRC.

        This is how the broker stamps LogAppendTime onto a batch without touching its
        records. A no-op when both already hold the given values.
        """
        timestamp_type = TimestampType(timestamp_type)
        if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
            raise ValueError(
                "a magic 2 batch needs a timestamp type: CREATE_TIME or LOG_APPEND_TIME"
            )
        _ensure_magic(self._header)
        if self.timestamp_type is timestamp_type and self._header[8] == timestamp:
            return
        buf = self._writable()
        attributes = self._header[5] & ~TIMESTAMP_TYPE_MASK
        if timestamp_type is TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        _INT16.pack_into(buf, self._pos + ATTRIBUTES_OFFSET, attributes)
        _INT64.pack_into(buf, self._pos + MAX_TIMESTAMP_OFFSET, timestamp)
        _UINT32.pack_into(buf, self._pos + CRC_OFFSET, self.compute_crc())
        self._reparse()

    # --- records -------------------------------------------------------------

    def records(self) -> Iterator[Record]:
        """Decode (and decompress) the batch's records, in offset order.

        Does not check the CRC (call ensure_valid() for that); raises InvalidRecordError
        for a magic other than 2 and CorruptRecordError, naming the base offset, for a
        stream that does not decompress, a record whose length runs past the batch, or a
        record count that does not match the records present.
        """
        header = self._header
        if header[3] < MAGIC_V2:
            return self._legacy_records()
        _ensure_magic(header)
        base_offset = header[0]
        count = header[12]
        if count < 0:
            raise CorruptRecordError(
                f"Record batch at base offset {base_offset} declares a negative record "
                f"count ({count})"
            )
        start = self._pos + RECORD_BATCH_OVERHEAD
        payload = self._buf[start : self._pos + header[1] + LOG_OVERHEAD]
        codec = header[5] & COMPRESSION_CODEC_MASK
        if codec:
            try:
                data = decompress(codec, payload)
            except CorruptRecordError as exc:
                raise CorruptRecordError(
                    f"Record batch at base offset {base_offset} is corrupt: {exc}"
                ) from exc
        else:
            data = bytes(payload)
        log_append_time = header[8] if header[5] & TIMESTAMP_TYPE_MASK else None
        return _decode_records(data, count, base_offset, header[7], log_append_time, header[11])

    def _legacy_records(self) -> Iterator[Record]:
        # legacy_record builds on this module, so it is imported when first needed.
        from kafpy.records.legacy_record import iter_legacy_records

        try:
            for r in iter_legacy_records(self.buffer(), _LEGACY_DECOMPRESSED_LIMIT):
                yield Record(r.offset, r.timestamp, r.key, r.value)
        except (CorruptRecordError, InvalidRecordError) as exc:
            raise type(exc)(
                f"Record batch at offset {self._header[0]} (a message of format "
                f"v{self._header[3]}) is corrupt: {exc}"
            ) from exc

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def __repr__(self) -> str:
        if self._header[3] != MAGIC_V2:
            return f"RecordBatch(magic={self._header[3]}, size_in_bytes={self.size_in_bytes})"
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.record_count}, size_in_bytes={self.size_in_bytes}, "
            f"codec={(self.attributes & COMPRESSION_CODEC_MASK)}, "
            f"timestamp_type={self.timestamp_type.kafka_name}, "
            f"max_timestamp={self.max_timestamp}, producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, base_sequence={self.base_sequence}, "
            f"transactional={self.is_transactional}, control={self.is_control}, "
            f"partition_leader_epoch={self.partition_leader_epoch}, crc={self.crc:#010x})"
        )


def _sequence_at(base_sequence: int, delta: int) -> int:
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if base_sequence > _INT32_MAX - delta:
        return base_sequence + delta - _INT32_MAX - 1
    return base_sequence + delta


def _decode_records(
    data: bytes,
    count: int,
    base_offset: int,
    first_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
) -> Iterator[Record]:
    """Decode `count` records from the uncompressed records section `data`.

    This is the per-record loop of tools, compaction and the Spark reader, so the record
    fields' varints are decoded inline when they take one byte (values -64..63: nearly
    every offset delta, header count and short length), saving a call per field.
    """
    end = len(data)
    pos = 0
    index = 0

    varint = partial(decode_varlong, data)  # bound once: a call per field, no closure

    def corrupt(what: str) -> CorruptRecordError:
        return CorruptRecordError(f"Record batch at base offset {base_offset} is corrupt: {what}")

    try:
        for index in range(count):
            if pos >= end:
                raise corrupt(
                    f"the header declares {count} records but the batch holds only {index}"
                )
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = varint(pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise corrupt(
                    f"record {index} claims {length} bytes but only {end - pos} remain in the batch"
                )
            pos += 1  # record attributes: a single byte, unused by every Kafka version
            b = data[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = varint(pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = varint(pos)
            b = data[pos]
            if b < 0x80:
                key_len = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                key_len, pos = varint(pos)
            if key_len >= 0:
                if pos + key_len > record_end:
                    raise corrupt(f"record {index} has a key of {key_len} bytes that runs past it")
                key: bytes | None = data[pos : pos + key_len]
                pos += key_len
            else:
                key = None
            b = data[pos]
            if b < 0x80:
                value_len = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                value_len, pos = varint(pos)
            if value_len >= 0:
                if pos + value_len > record_end:
                    raise corrupt(
                        f"record {index} has a value of {value_len} bytes that runs past it"
                    )
                value: bytes | None = data[pos : pos + value_len]
                pos += value_len
            else:
                value = None
            b = data[pos]
            if b < 0x80:
                header_count = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                header_count, pos = varint(pos)
            if header_count < 0:
                raise corrupt(f"record {index} declares {header_count} headers")
            headers: list[Header] = []
            for _ in range(header_count):
                name_len, pos = varint(pos)
                if name_len < 0 or pos + name_len > record_end:
                    raise corrupt(f"record {index} has a header key of length {name_len}")
                # surrogateescape keeps a key that is not valid UTF-8 byte-exact when a
                # batch is rebuilt (compaction), instead of failing or altering it.
                name = data[pos : pos + name_len].decode("utf-8", "surrogateescape")
                pos += name_len
                header_len, pos = varint(pos)
                if header_len >= 0:
                    if pos + header_len > record_end:
                        raise corrupt(
                            f"record {index} has a header value of {header_len} bytes "
                            "that runs past it"
                        )
                    headers.append((name, data[pos : pos + header_len]))
                    pos += header_len
                else:
                    headers.append((name, None))
            if pos != record_end:
                raise corrupt(
                    f"record {index} declares {length} bytes but its fields take "
                    f"{length + pos - record_end}"
                )
            if base_sequence == NO_SEQUENCE:
                sequence = NO_SEQUENCE
            else:
                sequence = _sequence_at(base_sequence, offset_delta)
            yield Record(
                base_offset + offset_delta,
                first_timestamp + timestamp_delta if log_append_time is None else log_append_time,
                key,
                value,
                tuple(headers) if headers else (),
                sequence,
            )
    except (IndexError, ValueError) as exc:
        raise corrupt(f"record {index} is malformed ({exc})") from exc
    if pos != end:
        raise corrupt(f"{end - pos} bytes remain after the {count} records the header declares")
