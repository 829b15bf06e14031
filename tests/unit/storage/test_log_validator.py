"""LogValidator: the leader's batch checks and in-place offset assignment."""

from __future__ import annotations

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafpy.common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
)
from kafpy.records import (
    CompressionType,
    MemoryRecords,
    RecordBatch,
    RecordBatchBuilder,
    TimestampType,
    build_batch,
)
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_validator import LogValidator, RecordValidationError, analyze_and_validate
from tests.fixtures.forged_batches import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    lying_batches,
    with_body,
    with_count,
    zstd_bomb,
)

from .segment_fixtures import T0, batch

NOW = T0 + 10


def validate(
    data: bytes | bytearray, config: LogConfig | None = None, next_offset: int = 100, epoch: int = 7
):
    buf = memoryview(bytearray(data)) if isinstance(data, bytes) else memoryview(data)
    return LogValidator(config or LogConfig()).validate_and_assign_offsets(
        buf, next_offset, NOW, epoch
    )


def test_assigns_offsets_and_leader_epoch_in_place_keeping_the_crc() -> None:
    raw = bytearray(batch([b"a", b"b"]) + batch([b"c", b"d", b"e"], timestamp=T0 + 5))
    out, info = validate(raw)
    assert out.obj is raw  # patched in place, no copy
    batches = list(MemoryRecords(out).batches())
    assert [(b.base_offset, b.last_offset) for b in batches] == [(100, 101), (102, 104)]
    assert all(b.partition_leader_epoch == 7 and b.is_valid() for b in batches)
    assert [r.offset for r in MemoryRecords(out).records()] == list(range(100, 105))
    assert (info.first_offset, info.last_offset, info.num_messages, info.shallow_count) == (
        100,
        104,
        5,
        2,
    )
    assert (info.max_timestamp, info.offset_of_max_timestamp, info.log_append_time) == (
        T0 + 5,
        104,
        -1,
    )
    assert info.valid_bytes == len(raw) and info.last_offset_of_first_batch == 101


def test_read_only_buffer_is_copied_once() -> None:
    raw = batch([b"a"])
    out, info = validate(memoryview(raw).toreadonly())  # type: ignore[arg-type]
    assert RecordBatch(out).base_offset == 100 and info.last_offset == 100
    assert RecordBatch(raw).base_offset == 0


def test_producer_base_offset_is_overwritten() -> None:
    out, info = validate(batch([b"a", b"b"], base_offset=5000))
    assert RecordBatch(out).base_offset == 100 and info.last_offset == 101


def test_log_append_time_stamps_batches_and_rewrites_crc() -> None:
    config = LogConfig(message_timestamp_type="LogAppendTime")
    out, info = validate(batch([b"a", b"b"], timestamp=T0 - 99), config)
    rb = RecordBatch(out)
    assert rb.timestamp_type is TimestampType.LOG_APPEND_TIME and rb.max_timestamp == NOW
    assert rb.is_valid()
    assert [r.timestamp for r in rb.records()] == [NOW, NOW]
    assert (info.log_append_time, info.max_timestamp, info.offset_of_max_timestamp) == (
        NOW,
        NOW,
        101,
    )


def test_batch_larger_than_max_message_bytes() -> None:
    data = batch([b"x" * 500])
    with pytest.raises(MessageTooLargeError, match="max.message.bytes"):
        validate(data, LogConfig(max_message_bytes=len(data) - 1))
    validate(data, LogConfig(max_message_bytes=len(data)))


def test_crc_mismatch_and_bad_magic() -> None:
    raw = bytearray(batch([b"a"]))
    raw[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate(raw)
    raw = bytearray(batch([b"a"]))
    raw[16] = 1
    with pytest.raises(InvalidRecordError, match="magic"):
        validate(raw)


def test_length_field_too_small_is_corrupt() -> None:
    raw = bytearray(batch([b"a"]))
    raw[8:12] = (10).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="length"):
        validate(raw)


def test_trailing_partial_batch_is_left_out() -> None:
    whole = batch([b"a"])
    out, info = validate(whole + batch([b"b"])[:30])
    assert len(out) == len(whole) and info.shallow_count == 1 and info.valid_bytes == len(whole)
    out, info = validate(batch([b"b"])[:40])
    assert info.shallow_count == 0 and info.first_offset == -1


def test_client_batch_header_consistency() -> None:
    raw = bytearray(batch([b"a", b"b"]))
    raw[57:61] = (3).to_bytes(4, "big")  # record count disagrees with lastOffsetDelta
    raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")  # with a CRC that matches
    assert RecordBatch(raw).is_valid() and RecordBatch(raw).record_count == 3
    with pytest.raises(InvalidRecordError, match="Inconsistent"):
        validate(raw)
    with pytest.raises(InvalidRecordError, match="sequence"):
        validate(batch([b"a"], producer_id=5, producer_epoch=0, base_sequence=-1))
    with pytest.raises(InvalidRecordError, match="control"):
        validate(batch([b"a"], is_control=True))


def test_timestamp_difference_max_ms() -> None:
    config = LogConfig(message_timestamp_difference_max_ms=1000)
    validate(batch([b"a"], timestamp=NOW - 1000), config)
    with pytest.raises(InvalidTimestampError, match="out of range"):
        validate(batch([b"a"], timestamp=NOW - 1001), config)
    with pytest.raises(InvalidTimestampError, match="out of range"):
        validate(batch([b"a"], timestamp=NOW + 5000), config)


def test_producer_must_not_send_log_append_time() -> None:
    with pytest.raises(InvalidTimestampError, match="LogAppendTime"):
        validate(batch([b"a"], timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0))


def test_compressed_batches_keep_their_codec_with_compression_type_producer() -> None:
    data = batch([b"a" * 100, b"b" * 100], compression=CompressionType.GZIP)
    out, info = validate(data)
    assert bytes(out[61:]) == data[61:]
    assert info.source_codec == info.target_codec == CompressionType.GZIP


def test_topic_compression_type_recompresses() -> None:
    out, info = validate(batch([b"a" * 100, b"b" * 100]), LogConfig(compression_type="gzip"))
    rb = RecordBatch(out)
    assert rb.compression_type is CompressionType.GZIP and rb.is_valid()
    assert rb.partition_leader_epoch == 7
    assert [(r.offset, r.value) for r in rb.records()] == [(100, b"a" * 100), (101, b"b" * 100)]
    assert info.target_codec == CompressionType.GZIP


def test_analyze_for_followers_keeps_offsets_and_reports_order() -> None:
    data = memoryview(batch([b"a", b"b"], base_offset=10) + batch([b"c"], base_offset=12))
    info = analyze_and_validate(data, LogConfig(), False)
    assert (info.first_offset, info.last_offset, info.offsets_monotonic, info.shallow_count) == (
        10,
        12,
        True,
        2,
    )
    backwards = memoryview(batch([b"a"], base_offset=10) + batch([b"c"], base_offset=5))
    assert not analyze_and_validate(backwards, LogConfig(), False).offsets_monotonic


# --- records whose header and CRC are right but whose contents lie ------------------


@pytest.mark.parametrize("name", sorted(lying_batches(T0)))
def test_batch_with_a_correct_crc_but_lying_records_is_corrupt(name: str) -> None:
    forged = lying_batches(NOW)[name]
    assert RecordBatch(forged).is_valid()  # the header and CRC hold
    with pytest.raises(CorruptRecordError) as raised:
        validate(forged)
    assert raised.value.code == CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", list(CompressionType))
def test_well_formed_batches_of_every_codec_pass_the_record_walk(codec: CompressionType) -> None:
    data = build_batch([(b"k", b"v" * 300), (b"k2", None), (b"k3", b"")], compression=codec)
    out, info = validate(data, LogConfig(cleanup_policy=["compact"]))
    assert info.num_messages == 3 and RecordBatch(out).is_valid()


def test_record_length_must_tile_the_batch_even_with_a_two_byte_varint() -> None:
    data = batch([b"x" * 200, b"y" * 300])  # lengths over 63: two-byte varints
    validate(data)
    body = data[61:]
    assert body[0] >= 0x80
    lying = with_body(data, body[:2] + body[2:-1])  # the last record ends one byte early
    with pytest.raises(CorruptRecordError, match="record 1 claims"):
        validate(lying)


def test_keyless_records_on_a_compacted_topic_are_invalid_with_their_indexes() -> None:
    compacted = LogConfig(cleanup_policy=["compact"])
    data = build_batch([(b"k", b"1"), (None, b"2"), (b"k", b"3"), (None, b"4")], timestamp=NOW)
    with pytest.raises(RecordValidationError) as raised:
        validate(data, compacted)
    assert raised.value.code == INVALID_RECORD
    assert [i for i, _ in raised.value.record_errors] == [1, 3]
    assert all("without key" in m for _, m in raised.value.record_errors)
    validate(data)  # the same batch is fine on a topic that deletes


def test_record_timestamps_are_checked_one_by_one() -> None:
    config = LogConfig(message_timestamp_difference_max_ms=1000)
    builder = RecordBatchBuilder()
    builder.append(NOW, b"k", b"in range")
    builder.append(NOW - 5000, b"k", b"five seconds old")  # first and max stay at NOW
    data = builder.build()
    assert RecordBatch(data).max_timestamp == NOW
    with pytest.raises(RecordValidationError) as raised:
        validate(data, config)
    assert raised.value.code == INVALID_TIMESTAMP
    assert [i for i, _ in raised.value.record_errors] == [1]
    validate(data)  # no bound configured: accepted


def test_a_zstd_bomb_is_refused_as_too_large_without_expanding() -> None:
    bomb = zstd_bomb(NOW)
    assert len(bomb) < 64 * 1024
    with pytest.raises(MessageTooLargeError, match="decompresses to more than"):
        validate(bomb)


def test_the_walk_hands_the_producer_check_the_batches_with_a_producer_id() -> None:
    plain = batch([b"a"])
    idempotent = batch([b"b", b"c"], producer_id=42, producer_epoch=1, base_sequence=0)
    out, info = validate(plain + idempotent)
    assert info.producer_batches is not None
    [(position, header)] = info.producer_batches
    assert position == len(plain)
    assert header == RecordBatch(out, position)._header  # the assigned offsets, not the client's
    assert header[0] == 101 and header[9] == 42


def test_runs_of_equal_records_are_checked_as_a_whole() -> None:
    # one key for all: the record size changes only where offset deltas reach 64
    data = build_batch([(b"k", b"v" * 40)] * 300, timestamp=NOW)
    out, info = validate(data)
    assert info.num_messages == 300
    for lie in (299, 301):
        with pytest.raises(CorruptRecordError, match="records"):
            validate(with_count(data, lie))
    # one record in the middle of a run claims one byte more: the lengths no longer tile
    body = bytearray(data[61:])
    stride = 1 + (body[0] >> 1)
    assert body[0] < 0x80 and body[10 * stride] == body[0]
    body[10 * stride] += 2  # zigzag: +1 byte
    with pytest.raises(CorruptRecordError):
        validate(with_body(data, bytes(body)))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(
        st.one_of(st.sampled_from([0, 7, 40, 200]), st.integers(0, 300)), min_size=1, max_size=200
    ),
    lie=st.integers(-3, 3),
)
def test_record_lengths_tile_any_uncompressed_batch(sizes: list[int], lie: int) -> None:
    data = build_batch([(b"k", b"x" * s) for s in sizes], timestamp=NOW)
    validate(data)
    if lie and len(sizes) + lie > 0:
        with pytest.raises(CorruptRecordError):
            validate(with_count(data, len(sizes) + lie))


# --- every record field by field: the run check against a plain reader ---------------


def _varint(data: bytes, pos: int, max_size: int) -> tuple[int, int]:
    raw = shift = 0
    for i in range(max_size):
        b = data[pos + i]  # IndexError: cut short
        raw |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos + i + 1
    raise ValueError("varint too long")


def reads_as_kafka(section: bytes, count: int) -> bool:
    """Whether a plain reader, one record and one field at a time, accepts `section` as
    `count` records: Kafka's DefaultRecord.readFrom, with negative lengths other than -1
    refused as kafpy refuses them."""
    pos = 0
    try:
        for _ in range(count):
            length, pos = _varint(section, pos, 5)
            end = pos + length
            if length < 6 or end > len(section):
                return False
            _, p = _varint(section, pos + 1, 10)  # attributes, then timestampDelta
            delta, p = _varint(section, p, 5)
            if not 0 <= delta < count:
                return False
            for _field in ("key", "value"):
                n, p = _varint(section, p, 5)
                if n < -1:
                    return False
                p += max(n, 0)
                if p >= end:
                    return False
            headers, p = _varint(section, p, 5)
            if headers < 0:
                return False
            for _ in range(headers):
                n, p = _varint(section, p, 5)
                if n < 0 or p + n >= end:
                    return False
                n2, p = _varint(section, p + n, 5)
                if n2 < -1:
                    return False
                p += max(n2, 0)
                if p > end:
                    return False
            if p != end:
                return False
            pos = end
    except (IndexError, ValueError):
        return False
    return pos == len(section)


def accepted(data: bytes) -> bool:
    try:
        validate(data)
    except CorruptRecordError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(
    count=st.one_of(st.integers(1, 200), st.sampled_from([6, 66, 140, 200])),
    key=st.one_of(st.none(), st.binary(max_size=3)),
    value_size=st.sampled_from([0, 1, 60, 100, 200]),
    headers=st.lists(
        st.tuples(st.text(max_size=2), st.one_of(st.none(), st.binary(max_size=2))), max_size=2
    ),
    ts_step=st.sampled_from([0, 1, 3]),
    odd_one=st.integers(0, 199),
    edits=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(-6, 7), st.integers(0, 255)),
        min_size=1,
        max_size=3,
    ),
)
def test_the_record_walk_agrees_with_a_plain_reader(
    count: int,
    key: bytes | None,
    value_size: int,
    headers: list[tuple[str, bytes | None]],
    ts_step: int,
    odd_one: int,
    edits: list[tuple[float, int, int]],
) -> None:
    """Edits land near a record's ends, where its lengths and deltas are."""
    builder = RecordBatchBuilder()
    for i in range(count):
        value = b"v" * (value_size + (i == odd_one))
        builder.append(NOW + i * ts_step, key, value, headers)
    data = bytes(builder.build())
    assert accepted(data)
    section = bytearray(data[61:])
    ends = record_ends(bytes(section))
    for where, at, byte in edits:
        record = int(where * count)
        start = ends[record - 1] if record else 0
        section[min((start if at >= 0 else ends[record]) + at, len(section) - 1)] = byte
    forged = with_body(data, bytes(section))
    assert accepted(forged) == reads_as_kafka(bytes(section), count)


def record_ends(section: bytes) -> list[int]:
    ends, pos = [], 0
    while pos < len(section):
        length, pos = _varint(section, pos, 5)
        pos += length
        ends.append(pos)
    return ends


@pytest.mark.parametrize("count", [63, 64, 65, 8191, 8192, 8193, 9000])
def test_a_lie_deep_in_a_run_is_found(count: int) -> None:
    builder = RecordBatchBuilder()
    for i in range(count):
        builder.append(NOW + 1000 * (i > 0), None, b"x" * 100)
    data = bytes(builder.build())
    assert accepted(data)
    section = bytes(data[61:])
    ends = record_ends(section)
    # a record after the first: length (2 bytes), attributes, timestampDelta (1000: 2
    # bytes), offsetDelta, key length (1 byte), value length (2 bytes), the value, header
    # count (1 byte); edits at an offset from the record's start (>= 0) or end (< 0)
    lies = {
        "timestamp-delta-ends-early": (3, "xor", 0x80, False),
        "timestamp-delta-runs-on": (4, "or", 0x80, False),
        "offset-delta-negative": (5, "xor", 0x01, False),
        "offset-delta-another-in-range": (5, "xor", 0x02, True),  # as Kafka: read as it is
        "key-length--2": (-104, "set", 0x03, False),
        "value-length--5": (-103, "set", 0x89, False),  # 0x89 0x00: -5 in two bytes
        "value-length-101": (-103, "xor", 0x02, False),
        "header-count-1": (-1, "set", 0x02, False),
        "length-one-more": (0, "xor", 0x02, False),
    }
    for index in sorted({count - 1, count // 2, count - 5}):
        start = ends[index - 1] if index else 0
        for name, (at, how, bits, fine) in lies.items():
            if fine and index == count - 1:
                continue  # one more than the last offset delta is past the batch
            forged = bytearray(section)
            at += start if at >= 0 else ends[index]
            if name == "value-length--5":
                forged[at + 1] = 0
            forged[at] = (
                bits if how == "set" else forged[at] | bits if how == "or" else forged[at] ^ bits
            )
            assert reads_as_kafka(bytes(forged), count) == fine, name
            if fine:
                assert accepted(with_body(data, bytes(forged))), name
            else:
                with pytest.raises(CorruptRecordError, match=f"record {index} "):
                    validate(with_body(data, bytes(forged)))
