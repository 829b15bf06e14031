"""Message format v0/v1 against kafka-python's LegacyRecordBatch(Builder) and Kafka's layout."""

from __future__ import annotations

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from kafpy.common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaError,
    UnsupportedForMessageFormatError,
)
from kafpy.records.builder import RecordBatchBuilder, build_batch
from kafpy.records.compression import (
    CompressionType,
    compress,
    decompress,
    lz4_frame_from_legacy,
)
from kafpy.records.legacy_record import (
    build_message_set,
    down_convert,
    first_magic,
    iter_legacy_records,
    to_message_set,
    up_convert,
)
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import TimestampType

LIMIT = 10 * 1024 * 1024
CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]
ITEMS = [(0, 1_700_000_000_000, b"k0", b"v0"), (1, 1_700_000_000_001, None, b"v1" * 50),
         (2, 1_700_000_000_002, b"k2", None)]  # fmt: skip


def _kafka_python_set(magic: int, codec: CompressionType) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, int(codec), 1 << 20)
    for offset, ts, key, value in ITEMS:
        builder.append(offset, ts if magic else None, key, value)
    return bytes(builder.build())


def _kafka_python_read(
    data: bytes, magic: int
) -> list[tuple[int, int | None, bytes | None, bytes | None]]:
    out = []
    pos = 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        batch = LegacyRecordBatch(data[pos : pos + 12 + size], magic)
        assert batch.validate_crc()
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
        pos += 12 + size
    return out


def test_literal_bytes_of_a_magic_0_message() -> None:
    # offset 5, null key, value "a": size 15 = crc 4 + magic 1 + attributes 1 + key 4 + value 4+1
    body = bytes([0, 0]) + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x01a"
    expected = struct.pack(">qiI", 5, 15, zlib.crc32(body)) + body
    assert build_message_set(0, [(5, -1, None, b"a")]) == expected
    [record] = iter_legacy_records(expected, LIMIT)
    assert (record.offset, record.magic, record.timestamp, record.key, record.value) == (
        5, 0, -1, None, b"a"
    )  # fmt: skip
    assert first_magic(expected) == 0


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_reads_what_kafka_python_writes(magic: int, codec: CompressionType) -> None:
    data = _kafka_python_set(magic, codec)
    records = list(iter_legacy_records(data, LIMIT))
    assert [(r.key, r.value) for r in records] == [(k, v) for _o, _t, k, v in ITEMS]
    assert [r.timestamp for r in records] == ([t for _o, t, _k, _v in ITEMS] if magic else [-1] * 3)
    assert all(r.compression is codec for r in records)
    if codec is CompressionType.NONE or magic == 0:
        assert [r.offset for r in records] == [0, 1, 2]
    else:  # relative inner offsets against kafka-python's wrapper offset 0
        assert [r.offset for r in records] == [-2, -1, 0]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_kafpy_writes(magic: int, codec: CompressionType) -> None:
    items = [(o + 100, t, k, v) for o, t, k, v in ITEMS]
    data = build_message_set(magic, items, codec)
    got = _kafka_python_read(data, magic)
    assert [(o, k, v) for o, _t, k, v in got] == [(o, k, v) for o, _t, k, v in items]
    if magic == 1:
        assert [t for _o, t, _k, _v in got] == [t for _o, t, _k, _v in items]


def test_corrupt_crc_is_refused() -> None:
    data = bytearray(build_message_set(1, ITEMS))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="is corrupt"):
        list(iter_legacy_records(data, LIMIT))


def test_a_partial_trailing_message_is_dropped() -> None:
    data = build_message_set(1, ITEMS)
    assert len(list(iter_legacy_records(data[:-3], LIMIT))) == 2


def test_nested_compression_and_bad_sizes_are_refused() -> None:
    inner = build_message_set(1, ITEMS[:1], CompressionType.GZIP)  # already a wrapper
    payload = compress(CompressionType.GZIP, inner)
    body = bytearray(struct.pack(">bbq", 1, 1, 1)) + b"\xff\xff\xff\xff"
    body += struct.pack(">i", len(payload)) + payload
    data = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(InvalidRecordError, match="holds another compressed message"):
        list(iter_legacy_records(data, LIMIT))
    with pytest.raises(CorruptRecordError, match="below the minimum"):
        list(iter_legacy_records(struct.pack(">qi", 0, 3) + b"\x00" * 3, LIMIT))


@pytest.mark.parametrize("codec", CODECS)
def test_up_convert_keeps_keys_values_and_timestamps(codec: CompressionType) -> None:
    batch = MemoryRecords(up_convert(_kafka_python_set(1, codec), LIMIT))
    [b] = list(batch.batches())
    b.ensure_valid()
    assert b.magic == 2 and b.compression_type is codec
    assert [(r.offset, r.timestamp, r.key, r.value) for r in b.records()] == [
        (i, t, k, v) for i, (_o, t, k, v) in enumerate(ITEMS)
    ]
    # magic 0 has no timestamps: the v2 records carry none (-1)
    v0 = next(iter(MemoryRecords(up_convert(_kafka_python_set(0, codec), LIMIT)).batches()))
    assert [r.timestamp for r in v0.records()] == [-1, -1, -1]
    # the topic's compression.type replaces the producer's codec
    recompressed = up_convert(_kafka_python_set(1, codec), LIMIT, CompressionType.ZSTD)
    assert (
        next(iter(MemoryRecords(recompressed).batches())).compression_type is CompressionType.ZSTD
    )


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_down_convert_as_kafka_python_reads_it(magic: int, codec: CompressionType) -> None:
    stored = build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=10, timestamp=1000,
                         compression=codec)  # fmt: skip
    stored += build_batch([(b"c", b"3")], base_offset=12, timestamp=2000, compression=codec)
    control = RecordBatchBuilder(base_offset=13, is_control=True, producer_id=1)
    control.append(3000, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")
    stored += control.build()
    data, zstd = down_convert(stored, magic, first_offset=11)
    assert not zstd
    got = _kafka_python_read(data, magic)
    assert [(o, k, v) for o, _t, k, v in got] == [(11, b"b", b"2"), (12, b"c", b"3")]
    if magic == 1:
        assert [t for _o, t, _k, _v in got] == [1000, 2000]
    assert first_magic(data) == magic


def test_down_convert_log_append_time_and_zstd() -> None:
    lat = build_batch([b"x"], base_offset=0, timestamp=5, timestamp_type=TimestampType.LOG_APPEND_TIME,
                      log_append_time=777, compression=CompressionType.GZIP)  # fmt: skip
    data, _ = down_convert(lat, 1, 0)
    [r] = list(iter_legacy_records(data, LIMIT))
    assert (r.timestamp, r.timestamp_type) == (777, TimestampType.LOG_APPEND_TIME)
    zstd = build_batch([b"y"], base_offset=1, compression=CompressionType.ZSTD)
    data, flagged = down_convert(lat + zstd, 1, 0)
    assert flagged and len(list(iter_legacy_records(data, LIMIT))) == 1


# -- to_message_set: what a log of format v0/v1 stores, against kafka-python's builder ----------


def _v2_batch(base_offset: int, codec: CompressionType = CompressionType.NONE) -> bytes:
    pairs = [(k, v) for _o, _t, k, v in ITEMS]
    builder = RecordBatchBuilder(compression=codec, base_offset=base_offset)
    for (key, value), (_o, ts, _k, _v) in zip(pairs, ITEMS, strict=True):
        builder.append(ts, key, value)
    return builder.build()


def _kafka_python_builder_set(magic: int, codec: CompressionType, base: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, int(codec), 1 << 20)
    for offset, ts, key, value in ITEMS:
        builder.append(base + offset, ts if magic else None, key, value)
    return bytes(builder.build())


def _wrapper(data: bytes) -> tuple[int, int, int, int, bytes]:
    """(offset, magic, attributes, timestamp, decompressed inner set) of one wrapper message."""
    offset, _size, _crc, magic, attributes = struct.unpack_from(">qiIbb", data, 0)
    pos = 18
    ts = -1
    if magic == 1:
        (ts,) = struct.unpack_from(">q", data, pos)
        pos += 8
    pos += 4  # null key
    (length,) = struct.unpack_from(">i", data, pos)
    payload = data[pos + 4 : pos + 4 + length]
    codec = CompressionType.from_id(attributes & 7)
    if codec is CompressionType.LZ4 and magic == 0:
        payload = lz4_frame_from_legacy(payload)
    return offset, magic, attributes, ts, decompress(codec, payload)


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_conversion_is_byte_for_byte_kafka_pythons(magic: int) -> None:
    converted = to_message_set(_v2_batch(100), magic, CompressionType.NONE, None)
    assert converted.data == _kafka_python_builder_set(magic, CompressionType.NONE, 100)
    if magic == 1:  # the record with the largest timestamp, as MemoryRecordsBuilder.info()
        assert (converted.max_timestamp, converted.offset_of_max_timestamp) == (
            1_700_000_000_002, 102
        )  # fmt: skip
    else:
        assert (converted.max_timestamp, converted.offset_of_max_timestamp) == (-1, 102)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS[1:])
@pytest.mark.parametrize("source", [CompressionType.NONE, CompressionType.SNAPPY])
def test_compressed_conversion_holds_kafka_pythons_inner_messages(
    magic: int, codec: CompressionType, source: CompressionType
) -> None:
    converted = to_message_set(_v2_batch(100, source), magic, codec, None)
    offset, got_magic, attributes, ts, inner = _wrapper(converted.data)
    # v1 inner offsets are relative (0..n-1, what a producer writes), v0 ones absolute
    kp_offset, _m, kp_attributes, _ts, kp_inner = _wrapper(
        _kafka_python_builder_set(magic, codec, 100 if magic == 0 else 0)
    )
    # inner messages are byte-equal ...
    assert inner == kp_inner
    # ... and the wrapper is as the broker writes it: the last inner offset (the producer
    # leaves 0 there) and, in v1, the largest inner timestamp
    assert (offset, got_magic, attributes) == (102, magic, kp_attributes)
    assert kp_offset == 0
    assert ts == (1_700_000_000_002 if magic == 1 else -1)
    assert (converted.max_timestamp, converted.offset_of_max_timestamp) == (
        (1_700_000_000_002 if magic == 1 else -1), 102
    )  # fmt: skip
    records = list(iter_legacy_records(converted.data, LIMIT))
    assert [(r.offset, r.key, r.value) for r in records] == [
        (100 + o, k, v) for o, _t, k, v in ITEMS
    ]


def test_producer_codec_is_kept_when_the_topic_says_producer() -> None:
    converted = to_message_set(_v2_batch(0, CompressionType.LZ4), 1, None, None)
    assert _wrapper(converted.data)[2] == int(CompressionType.LZ4)


def test_log_append_time_stamps_every_v1_message() -> None:
    plain = to_message_set(_v2_batch(7), 1, CompressionType.NONE, 555)
    records = list(iter_legacy_records(plain.data, LIMIT))
    assert {(r.timestamp, r.timestamp_type) for r in records} == {
        (555, TimestampType.LOG_APPEND_TIME)
    }
    # uncompressed: the first offset, as MemoryRecordsBuilder.info() for LogAppendTime
    assert (plain.max_timestamp, plain.offset_of_max_timestamp) == (555, 7)
    wrapped = to_message_set(_v2_batch(7), 1, CompressionType.GZIP, 555)
    offset, _magic, attributes, ts, inner = _wrapper(wrapped.data)
    assert (offset, attributes, ts) == (9, 0x08 | 1, 555)
    # inner messages carry the LogAppendTime bit and the time too (Kafka's appendLegacyRecord)
    assert {struct.unpack_from(">bbq", inner, 16 + 12 * 0)[1]} == {0x08}
    assert (wrapped.max_timestamp, wrapped.offset_of_max_timestamp) == (555, 9)


def test_what_message_format_v0_v1_cannot_hold_is_refused() -> None:
    idempotent = RecordBatchBuilder(producer_id=5, producer_epoch=0, base_sequence=0)
    idempotent.append(1, b"k", b"v")
    with pytest.raises(
        UnsupportedForMessageFormatError,
        match="^Idempotent records cannot be used with magic version 1$",
    ):
        to_message_set(idempotent.build(), 1, CompressionType.NONE, None)
    txn = RecordBatchBuilder(
        producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    txn.append(1, b"k", b"v")
    with pytest.raises(
        UnsupportedForMessageFormatError,
        match="^Transactional records cannot be used with magic version 0$",
    ):
        to_message_set(txn.build(), 0, CompressionType.NONE, None)
    headers = RecordBatchBuilder()
    headers.append(1, b"k", b"v", (("h", b"1"),))
    with pytest.raises(KafkaError, match="^Magic v1 does not support record headers") as info:
        to_message_set(headers.build(), 1, CompressionType.NONE, None)
    assert (
        info.value.code == -1
    )  # UNKNOWN_SERVER_ERROR: Kafka's builder throws IllegalArgumentException
    with pytest.raises(KafkaError, match="^ZStandard compression is not supported for magic 1$"):
        to_message_set(_v2_batch(0), 1, CompressionType.ZSTD, None)


def test_stored_v0_v1_messages_go_to_old_fetches_as_they_are_or_as_v0() -> None:
    v1 = build_message_set(1, [(o + 20, t, k, v) for o, t, k, v in ITEMS], CompressionType.GZIP)
    v0 = build_message_set(0, [(23, -1, b"z", b"0")])
    v2 = build_batch([(b"y", b"2")], base_offset=24, timestamp=9)
    data, _ = down_convert(v1 + v0 + v2, 1, 0)
    assert data[: len(v1) + len(v0)] == v1 + v0  # magic <= the fetch's: the stored bytes
    data, _ = down_convert(v1 + v0 + v2, 0, 21)
    got = _kafka_python_read(data, 0)
    assert [(o, t, k, v) for o, t, k, v in got] == [
        (21, None, None, b"v1" * 50), (22, None, b"k2", None), (23, None, b"z", b"0"),
        (24, None, b"y", b"2"),
    ]  # fmt: skip


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_converted_sets_know_their_largest_message_and_move_whole(
    magic: int, codec: CompressionType
) -> None:
    data = build_batch([(b"k", b"x" * 10), (None, b"y" * 300), (b"kk", None)], base_offset=5,
                       timestamp=7)  # fmt: skip
    data += build_batch([(b"z", b"w" * 50)], base_offset=8, timestamp=9)
    converted = to_message_set(data, magic, codec, None)
    sizes = [b.size_in_bytes for b in MemoryRecords(converted.data).batches()]
    assert converted.largest_entry == max(sizes)
    assert converted.first_offset == 5
    if converted.can_move():
        moved = converted.moved_to(1000)
        got = [(r.offset, r.key) for r in MemoryRecords(moved.data).records()]
        assert got == [(1000, b"k"), (1001, None), (1002, b"kk"), (1003, b"z")]
        assert moved.largest_entry == converted.largest_entry
    else:
        assert magic == 0 and codec is CompressionType.GZIP
