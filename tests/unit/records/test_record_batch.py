"""RecordBatch: header parsing, validation errors, in-place patches, record decoding."""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafpy.common.errors import CorruptRecordError, InvalidRecordError
from kafpy.records.builder import RecordBatchBuilder, build_batch
from kafpy.records.compression import CompressionType
from kafpy.records.record_batch import (
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    TimestampType,
)
from kafpy.records.varint import encode_varint, encode_varlong

HEADER = struct.Struct(">qiibIhiqqqhii")


def raw_batch(
    body: bytes,
    count: int,
    *,
    base_offset: int = 0,
    attributes: int = 0,
    last_offset_delta: int = 0,
    first_timestamp: int = 1000,
    max_timestamp: int = 1000,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    magic: int = 2,
) -> bytearray:
    """A batch written field by field (independently of the builder), with a valid CRC."""
    out = bytearray(61) + body
    HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - 12,
        partition_leader_epoch,
        magic,
        0,
        attributes,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return out


def raw_record(
    offset_delta: int,
    timestamp_delta: int = 0,
    key: bytes | None = None,
    value: bytes | None = b"v",
    headers: list[tuple[bytes, bytes | None]] | None = None,
    length_adjust: int = 0,
) -> bytes:
    body = b"\x00" + encode_varlong(timestamp_delta) + encode_varint(offset_delta)
    for field in (key, value):
        body += b"\x01" if field is None else encode_varint(len(field)) + field
    headers = headers or []
    body += encode_varint(len(headers))
    for name, hv in headers:
        body += encode_varint(len(name)) + name
        body += b"\x01" if hv is None else encode_varint(len(hv)) + hv
    return encode_varint(len(body) + length_adjust) + body


def kafka_python_batch(**kwargs: object) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=kwargs.get("transactional", False),
        producer_id=kwargs.get("producer_id", -1),
        producer_epoch=kwargs.get("producer_epoch", -1),
        base_sequence=kwargs.get("base_sequence", -1),
        batch_size=1 << 20,
    )
    for i in range(3):
        builder.append(i, 5000 + i, b"k%d" % i, b"v%d" % i, [])
    return bytes(builder.build())


# --- header --------------------------------------------------------------------


def test_header_fields_of_a_batch_kafka_python_wrote() -> None:
    data = kafka_python_batch(
        transactional=True, producer_id=77, producer_epoch=3, base_sequence=10
    )
    batch = RecordBatch(data)
    assert batch.base_offset == 0
    assert batch.batch_length == len(data) - LOG_OVERHEAD
    assert batch.size_in_bytes == len(data)
    assert batch.partition_leader_epoch == 0
    assert batch.magic == MAGIC_V2
    assert batch.crc == struct.unpack_from(">I", data, 17)[0]
    assert batch.attributes == 0x10
    assert batch.compression_type is CompressionType.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert batch.is_transactional and not batch.is_control
    assert batch.last_offset_delta == 2
    assert (batch.first_timestamp, batch.max_timestamp) == (5000, 5002)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 10)
    assert batch.has_producer_id and batch.last_sequence == 12
    assert batch.record_count == 3
    assert (batch.last_offset, batch.next_offset) == (2, 3)
    assert batch.is_valid()
    batch.ensure_valid()
    assert "base_offset=0" in repr(batch) and "count=3" in repr(batch)


def test_constants() -> None:
    assert (LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, MAGIC_V2) == (12, 61, 2)
    assert [int(t) for t in TimestampType] == [-1, 0, 1]
    assert TimestampType.from_name("LogAppendTime") is TimestampType.LOG_APPEND_TIME
    with pytest.raises(ValueError, match="CreateTime or LogAppendTime"):
        TimestampType.from_name("Wallclock")


def test_batch_at_a_position_and_buffer_is_a_view(tmp_path: Path) -> None:
    first = build_batch([b"a"], base_offset=0, timestamp=1)
    second = build_batch([b"b", b"c"], base_offset=1, timestamp=2)
    buf = bytearray(first + second)
    batch = RecordBatch(buf, len(first))
    assert batch.position == len(first)
    assert batch.base_offset == 1 and batch.record_count == 2
    assert bytes(batch.buffer()) == second
    buf[len(first) + 30] ^= 1
    assert batch.buffer()[30] == second[30] ^ 1  # the view shares the buffer's memory
    assert not batch.is_valid()
    # also over an mmap and a read-only memoryview
    path = tmp_path / "batch"
    path.write_bytes(first + second)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        mapped = RecordBatch(mm, len(first))
        assert mapped.is_valid()
        assert [r.value for r in mapped.records()] == [b"b", b"c"]
        del mapped
    assert RecordBatch(memoryview(first)).is_valid()


def test_position_outside_the_buffer_is_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        RecordBatch(b"", 5)


# --- torn and malformed batches -----------------------------------------------


@pytest.mark.parametrize("cut", [0, 5, 11])
def test_torn_before_the_length_field(cut: int) -> None:
    data = build_batch([b"x"], timestamp=0)
    with pytest.raises(
        CorruptRecordError, match=rf"at position 0 is truncated: needs 12 bytes .* has {cut}"
    ):
        RecordBatch(data[:cut])


@pytest.mark.parametrize("cut", [12, 20, 60, 61, -1])
def test_torn_batch_names_base_offset_and_sizes(cut: int) -> None:
    data = build_batch([b"x" * 10], base_offset=42, timestamp=0)
    torn = data[:cut]
    with pytest.raises(
        CorruptRecordError,
        match=rf"at base offset 42 \(position 0\) is truncated: needs {len(data)} bytes, has {len(torn)}",
    ):
        RecordBatch(torn)


def test_length_too_small_for_magic_or_for_the_v2_header() -> None:
    data = bytearray(build_batch([b"x"], base_offset=7, timestamp=0))
    struct.pack_into(">i", data, 8, 3)
    with pytest.raises(CorruptRecordError, match="base offset 7 .* says 3 bytes, too few"):
        RecordBatch(data)
    struct.pack_into(">i", data, 8, 30)
    with pytest.raises(CorruptRecordError, match="says 30 bytes, fewer than the 49"):
        RecordBatch(data)


def test_bad_magic_is_an_invalid_record() -> None:
    data = bytearray(build_batch([b"x"], base_offset=9, timestamp=0))
    data[16] = 1
    batch = RecordBatch(data)
    assert batch.magic == 1
    assert not batch.is_valid()
    with pytest.raises(
        InvalidRecordError,
        match=r"^Record batch magic byte 1 is not supported here: a record batch must be magic 2.*base offset 9",
    ):
        batch.ensure_valid()
    # read as the v1 message its magic says it is, it fails its CRC-32
    assert not batch.is_entry_valid()
    with pytest.raises(CorruptRecordError, match="CRC-32"):
        batch.ensure_entry_valid()
    with pytest.raises(CorruptRecordError, match="^Record batch at offset 9 .*format v1"):
        list(batch.records())


def test_legacy_message_set_shorter_than_a_v2_header() -> None:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1024)
    builder.append(0, timestamp=1, key=None, value=b"")
    data = bytes(builder.build())
    assert len(data) < RECORD_BATCH_OVERHEAD
    batch = RecordBatch(data)
    assert batch.magic == 1 and batch.size_in_bytes == len(data)
    assert not batch.is_valid()
    with pytest.raises(InvalidRecordError, match="magic byte 1"):
        batch.ensure_valid()
    # as a message of a log of format v1 it is whole and valid
    assert batch.is_entry_valid() and batch.is_legacy
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == [(0, 1, None, b"")]


def test_crc_mismatch_names_stored_and_computed_crc() -> None:
    data = bytearray(build_batch([b"hello"], base_offset=100, timestamp=0))
    stored = struct.unpack_from(">I", data, 17)[0]
    data[-1] ^= 0xFF
    batch = RecordBatch(data)
    assert not batch.is_valid()
    computed = crc32c.crc32c(bytes(data[21:]))
    with pytest.raises(
        CorruptRecordError,
        match=rf"base offset 100 is corrupt: stored CRC-32C {stored:#010x} does not match {computed:#010x}",
    ):
        batch.ensure_valid()


@pytest.mark.parametrize("position", [21, 30, 60])
def test_crc_covers_attributes_to_end(position: int) -> None:
    data = bytearray(build_batch([b"hello"], timestamp=0))
    data[position] ^= 0x40
    assert not RecordBatch(data).is_valid()


@pytest.mark.parametrize("position", [0, 7, 12, 15])
def test_crc_does_not_cover_base_offset_or_leader_epoch(position: int) -> None:
    data = bytearray(build_batch([b"hello"], timestamp=0))
    data[position] ^= 0x40
    assert RecordBatch(data).is_valid()


def test_unknown_codec_id_is_corrupt() -> None:
    batch = RecordBatch(raw_batch(b"", 0, attributes=6))
    with pytest.raises(
        CorruptRecordError, match="base offset 0 is corrupt: Unknown compression codec id 6"
    ):
        _ = batch.compression_type
    with pytest.raises(CorruptRecordError, match="codec id 6"):
        batch.records()


def test_offsets_must_match_count() -> None:
    RecordBatch(build_batch([b"a", b"b"], timestamp=0)).ensure_offsets_match_count()
    with pytest.raises(InvalidRecordError, match="base offset 5 declares 0 records"):
        RecordBatch(raw_batch(b"", 0, base_offset=5)).ensure_offsets_match_count()
    body = raw_record(0) + raw_record(1)
    bad = RecordBatch(raw_batch(body, 2, base_offset=5, last_offset_delta=4))
    with pytest.raises(
        InvalidRecordError, match="lastOffsetDelta 4 implies 5 records but the record count is 2"
    ):
        bad.ensure_offsets_match_count()


# --- in-place patches ----------------------------------------------------------


def test_set_base_offset_last_offset_and_leader_epoch_keep_crc_valid() -> None:
    data = bytearray(build_batch([b"a", b"b", b"c"], timestamp=10))
    crc_before = bytes(data[17:21])
    batch = RecordBatch(data)
    batch.set_base_offset(1000)
    assert (batch.base_offset, batch.last_offset) == (1000, 1002)
    batch.set_last_offset(2002)
    assert batch.base_offset == 2000
    batch.set_partition_leader_epoch(17)
    assert batch.partition_leader_epoch == 17
    assert bytes(data[17:21]) == crc_before
    assert batch.is_valid()
    fresh = RecordBatch(data)
    assert (fresh.base_offset, fresh.partition_leader_epoch) == (2000, 17)
    assert [r.offset for r in fresh.records()] == [2000, 2001, 2002]
    theirs = DefaultRecordBatch(bytes(data))
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch) == (2000, 17)


@pytest.mark.parametrize("codec", list(CompressionType))
def test_set_max_timestamp_stamps_log_append_time_and_rewrites_crc(codec: CompressionType) -> None:
    builder = RecordBatchBuilder(
        compression=codec, producer_id=5, producer_epoch=1, base_sequence=0, is_transactional=True
    )
    builder.append(100, None, b"a")
    builder.append(90, b"k", b"b")
    data = bytearray(builder.build())
    batch = RecordBatch(data)
    batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, 123456)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 123456
    assert batch.compression_type is codec and batch.is_transactional
    assert batch.is_valid()
    assert [r.timestamp for r in batch.records()] == [123456, 123456]
    if codec is CompressionType.NONE:
        theirs = DefaultRecordBatch(bytes(data))
        assert theirs.validate_crc()
        assert [r.timestamp for r in theirs] == [123456, 123456]
    batch.set_max_timestamp(TimestampType.CREATE_TIME, 100)
    assert batch.timestamp_type is TimestampType.CREATE_TIME and batch.is_valid()
    assert [r.timestamp for r in RecordBatch(data).records()] == [100, 90]


def test_set_max_timestamp_is_a_no_op_when_unchanged_and_refuses_no_type() -> None:
    data = build_batch([b"a"], timestamp=50)
    batch = RecordBatch(data)  # read-only bytes: a no-op must not try to write
    batch.set_max_timestamp(TimestampType.CREATE_TIME, 50)
    with pytest.raises(ValueError, match="needs a timestamp type"):
        batch.set_max_timestamp(TimestampType.NO_TIMESTAMP_TYPE, 50)


def test_patching_a_read_only_buffer_explains_the_fix() -> None:
    batch = RecordBatch(build_batch([b"a"], base_offset=3, timestamp=0))
    with pytest.raises(
        TypeError, match="base offset 3 lives in a read-only buffer; copy it into a bytearray"
    ):
        batch.set_base_offset(10)


# --- records -------------------------------------------------------------------


def test_records_of_a_hand_written_batch() -> None:
    body = (
        raw_record(0, 0, None, b"first")
        + raw_record(1, -300, b"", b"", [(b"h", None), (b"\xc3\xa9", b"x")])
        + raw_record(5, 70000, b"key", None)
    )
    batch = RecordBatch(
        raw_batch(body, 3, base_offset=50, last_offset_delta=5, first_timestamp=10_000)
    )
    records = list(batch.records())
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [
        (50, 10_000, None, b"first"),
        (51, 9_700, b"", b""),
        (55, 80_000, b"key", None),
    ]
    assert records[1].headers == (("h", None), ("é", b"x"))
    assert all(r.sequence == -1 for r in records)
    assert list(batch) == records


def test_sequences_wrap_at_int32_max() -> None:
    top = (1 << 31) - 1
    data = build_batch(
        [b"a", b"b", b"c"], timestamp=0, producer_id=1, producer_epoch=0, base_sequence=top - 1
    )
    batch = RecordBatch(data)
    assert [r.sequence for r in batch.records()] == [top - 1, top, 0]
    assert batch.last_sequence == 0


def test_non_utf8_header_key_survives_a_rebuild() -> None:
    body = raw_record(0, headers=[(b"\xff\xfe", b"v")])
    (record,) = RecordBatch(raw_batch(body, 1)).records()
    builder = RecordBatchBuilder()
    builder.append(1000, record.key, record.value, record.headers)
    assert builder.build()[61:] == body


@pytest.mark.parametrize(
    ("body", "count", "message"),
    [
        (
            raw_record(0) + encode_varint(100) + b"\x00\x00",
            2,
            "record 1 claims 100 bytes but only 2 remain in the batch",
        ),
        (
            raw_record(0) + raw_record(1),
            3,
            "the header declares 3 records but the batch holds only 2",
        ),
        (
            raw_record(0) + raw_record(1),
            1,
            r"\d+ bytes remain after the 1 records the header declares",
        ),
        (
            raw_record(0, length_adjust=2) + b"\x00\x00",
            1,
            "record 0 declares .* bytes but its fields take",
        ),
        (
            encode_varint(7) + b"\x00\x00\x00\x01" + encode_varint(5) + b"v\x00",
            1,
            "record 0 has a value of 5 bytes that runs past it",
        ),
        (
            encode_varint(5) + b"\x00\x00\x00" + encode_varint(3) + b"a",
            1,
            "record 0 has a key of 3 bytes that runs past it",
        ),
        (encode_varint(6) + b"\x00\x00\x00\x01\x01\x01", 1, "record 0 declares -1 headers"),
        (
            encode_varint(8) + b"\x00\x00\x00\x01\x01\x02" + encode_varint(9) + b"h",
            1,
            "record 0 has a header key of length 9",
        ),
        (
            encode_varint(9) + b"\x00\x00\x00\x01\x01\x02\x02h" + encode_varint(3),
            1,
            "record 0 has a header value of 3 bytes that runs past it",
        ),
        (encode_varint(3) + b"\x00\x80\x80", 1, "record 0 is malformed"),
    ],
    ids=[
        "length-past-batch",
        "too-few-records",
        "too-many-bytes",
        "fields-shorter",
        "value-past-record",
        "key-past-record",
        "negative-headers",
        "header-key-past-record",
        "header-value-past-record",
        "torn-varint",
    ],
)
def test_malformed_records_are_corrupt(body: bytes, count: int, message: str) -> None:
    batch = RecordBatch(raw_batch(body, count, base_offset=77))
    assert batch.is_valid()  # the CRC is fine: the damage was done before it was computed
    with pytest.raises(
        CorruptRecordError, match=r"^Record batch at base offset 77 is corrupt: " + message
    ):
        list(batch.records())


def test_negative_record_count_is_corrupt() -> None:
    batch = RecordBatch(raw_batch(b"", -1, base_offset=3))
    with pytest.raises(CorruptRecordError, match="base offset 3 declares a negative record count"):
        batch.records()


def test_damaged_compressed_stream_names_the_batch() -> None:
    batch = RecordBatch(raw_batch(b"\x1f\x8bnot really gzip", 1, base_offset=8, attributes=1))
    with pytest.raises(CorruptRecordError, match="base offset 8 is corrupt: gzip data of 17 bytes"):
        batch.records()


def test_control_batch_flags() -> None:
    data = build_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")],
        timestamp=0,
        producer_id=9,
        producer_epoch=2,
        is_transactional=True,
        is_control=True,
    )
    batch = RecordBatch(data)
    assert batch.is_control and batch.is_transactional and batch.attributes == 0x30


# --- robustness ----------------------------------------------------------------

FUZZ_SEEDS = [
    build_batch(
        [(b"k%d" % i, b"value %d" % i * 3, [("h", b"x"), ("n", None)]) for i in range(8)],
        timestamp=1_000_000,
        compression=codec,
        producer_id=1,
        producer_epoch=0,
        base_sequence=0,
    )
    for codec in CompressionType
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(FUZZ_SEEDS),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000),
)
def test_damaged_batches_fail_only_with_kafka_errors(
    seed: bytes, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(seed)
    for where, byte in flips:
        data[where % len(data)] = byte
    if cut % 3 == 0:
        data = data[: cut % (len(data) + 1)]
    try:
        batch = RecordBatch(data)
        batch.is_valid()
        list(batch.records())
    except (CorruptRecordError, InvalidRecordError) as exc:
        assert str(exc).startswith("Record batch ")


# --- the one header layout and its iterators ------------------------------------------


def test_layout_constants_match_kafka_default_record_batch() -> None:
    from kafpy.records import record_batch as rb

    offsets = [rb.BASE_OFFSET_OFFSET, rb.LENGTH_OFFSET, rb.PARTITION_LEADER_EPOCH_OFFSET,
               rb.MAGIC_OFFSET, rb.CRC_OFFSET, rb.ATTRIBUTES_OFFSET, rb.LAST_OFFSET_DELTA_OFFSET,
               rb.FIRST_TIMESTAMP_OFFSET, rb.MAX_TIMESTAMP_OFFSET, rb.PRODUCER_ID_OFFSET,
               rb.PRODUCER_EPOCH_OFFSET, rb.BASE_SEQUENCE_OFFSET, rb.RECORDS_COUNT_OFFSET,
               rb.RECORDS_OFFSET]  # fmt: skip
    # each field starts where the previous one (as HEADER packs it) ends
    sizes = [struct.calcsize(">" + c) for c in "qiibIhiqqqhii"]
    assert offsets == [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    assert rb.RECORDS_OFFSET == rb.RECORD_BATCH_OVERHEAD == rb.HEADER.size == 61
    assert rb.MIN_BATCH_LENGTH == 49
    masks = [rb.COMPRESSION_CODEC_MASK, rb.TIMESTAMP_TYPE_MASK, rb.TRANSACTIONAL_MASK,
             rb.CONTROL_MASK]  # fmt: skip
    assert masks == [0x07, 0x08, 0x10, 0x20]
    raw = build_batch([b"a", b"b"], producer_id=9, producer_epoch=0, base_sequence=0,
                      is_transactional=True)  # fmt: skip
    header = rb.HEADER.unpack_from(raw)
    assert header[rb.H_RECORD_COUNT] == 2 and header[rb.H_LAST_OFFSET_DELTA] == 1
    assert header[rb.H_PRODUCER_ID] == 9 and header[rb.H_ATTRIBUTES] & rb.TRANSACTIONAL_MASK


def test_header_iterators_over_a_buffer_and_a_file_agree(tmp_path: Path) -> None:
    from kafpy.records.record_batch import iter_file_batches, iter_file_headers, iter_headers

    batches = [build_batch([b"x" * n], base_offset=i * 10) for i, n in enumerate((1, 300, 5000))]
    data = b"".join(batches) + batches[0][:40]  # and a torn trailing batch
    expected = [(sum(map(len, batches[:i])), i * 10) for i in range(3)]
    assert [(p, h[0]) for p, h in iter_headers(data)] == expected
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert [(p, h[0]) for p, h in iter_file_headers(fd, 0, len(data))] == expected
        for chunk in (64, 1 << 20):  # batches larger than a chunk are read alone
            got = list(iter_file_batches(fd, 0, len(data), chunk))
            assert [(p, h[0]) for p, h, _ in got] == expected
            assert [bytes(b) for _, _, b in got] == batches
    finally:
        os.close(fd)


def test_header_iterators_refuse_a_length_too_small_for_a_header() -> None:
    from kafpy.records.record_batch import iter_headers

    data = bytearray(build_batch([b"a"]))
    data[8:12] = (48).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match=r"minimum batch overhead \(49\)"):
        list(iter_headers(data, where=" of the test"))
