"""RecordBatchBuilder against kafka-python's DefaultRecordBatchBuilder / DefaultRecordBatch,
both directions, every codec; plus property tests build → parse."""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafpy.records.builder import RecordBatchBuilder, build_batch
from kafpy.records.compression import CompressionType, decompress
from kafpy.records.record import Record
from kafpy.records.record_batch import RecordBatch, TimestampType

Input = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

CASES: dict[str, list[Input]] = {
    "nulls-and-empties": [
        (1000, None, None, []),
        (1001, b"", b"", []),
        (1002, None, b"value", []),
        (1003, b"key", None, []),
    ],
    "headers": [
        (5, b"k", b"v", [("trace", b"abc"), ("null", None), ("", b""), ("ünï", b"\x00\xff")]),
        (6, None, b"v2", [("only-null", None)]),
    ],
    "negative-timestamp-deltas": [
        (1_700_000_000_000, b"a", b"1", []),
        (1_699_999_000_000, b"b", b"2", []),
        (1_700_000_000_500, b"c", b"3", []),
        (0, b"d", b"4", []),
        (-5, b"e", b"5", []),
    ],
    "many-records": [
        (2000 + i % 17, b"key-%d" % (i % 10), b"value %d " % i * (i % 40), [("n", b"%d" % i)])
        for i in range(600)
    ],
    "large-values": [
        (1, b"k" * 200, b"compressible " * 6000, []),
        (2, b"k2", bytes(range(256)) * 300, [("h" * 300, b"x" * 1000)]),
    ],
}
PRODUCERS = {
    "plain": dict(producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=False),
    "idempotent": dict(
        producer_id=123456789012, producer_epoch=7, base_sequence=2000, transactional=False
    ),
    "transactional": dict(
        producer_id=42, producer_epoch=0, base_sequence=(1 << 31) - 3, transactional=True
    ),
}
CODECS = list(CompressionType)


def kafka_python_build(codec: int, inputs: list[Input], producer: dict) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=producer["transactional"],
        producer_id=producer["producer_id"],
        producer_epoch=producer["producer_epoch"],
        base_sequence=producer["base_sequence"],
        batch_size=1 << 30,
    )
    for offset, (ts, key, value, headers) in enumerate(inputs):
        assert builder.append(offset, ts, key, value, headers) is not None
    return bytes(builder.build())


def kafpy_build(codec: int, inputs: list[Input], producer: dict, **kwargs: object) -> bytes:
    builder = RecordBatchBuilder(
        compression=codec,
        partition_leader_epoch=0,  # kafka-python writes 0 there
        producer_id=producer["producer_id"],
        producer_epoch=producer["producer_epoch"],
        base_sequence=producer["base_sequence"],
        is_transactional=producer["transactional"],
        **kwargs,
    )
    for ts, key, value, headers in inputs:
        builder.append(ts, key, value, headers)
    return builder.build()


def expected(inputs: list[Input], base_sequence: int = -1, base_offset: int = 0) -> list[Record]:
    out = []
    for i, (ts, key, value, headers) in enumerate(inputs):
        seq = -1 if base_sequence == -1 else (base_sequence + i) % (1 << 31)
        out.append(Record(base_offset + i, ts, key, value, tuple(headers), seq))
    return out


def as_kafka_python_view(data: bytes) -> list[tuple]:
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]


def plain(records: list[Record]) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


def header_and_payload(data: bytes) -> tuple[tuple, bytes]:
    """Header fields except length, CRC and codec bits; and the uncompressed records section."""
    fields = list(struct.unpack_from(">qiibIhiqqqhii", data))
    codec = fields[5] & 7
    fields[1] = fields[4] = None
    fields[5] &= ~7
    return tuple(fields), decompress(codec, data[61:])


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("producer", PRODUCERS, ids=list(PRODUCERS))
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("codec", CODECS, ids=[c.kafka_name for c in CODECS])
def test_round_trips_with_kafka_python(codec: CompressionType, case: str, producer: str) -> None:
    inputs, prod = CASES[case], PRODUCERS[producer]
    theirs = kafka_python_build(codec, inputs, prod)
    ours = kafpy_build(codec, inputs, prod)
    want = expected(inputs, prod["base_sequence"])

    # we decode theirs, they decode ours
    their_batch = RecordBatch(theirs)
    their_batch.ensure_valid()
    assert list(their_batch.records()) == want
    assert as_kafka_python_view(ours) == plain(want)

    our_batch = RecordBatch(ours)
    assert our_batch.compression_type is codec  # always compressed, as Java's producer does
    assert our_batch.is_transactional is prod["transactional"]
    their_codec = their_batch.compression_type
    if codec is CompressionType.NONE or (codec is CompressionType.SNAPPY and their_codec is codec):
        # deterministic codecs (kafka-python frames snappy itself): byte for byte
        assert ours == theirs
    else:
        # gzip carries a timestamp, lz4/zstd frames differ in options: compare what is inside
        assert header_and_payload(ours) == header_and_payload(theirs)


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("codec", CODECS[1:], ids=[c.kafka_name for c in CODECS[1:]])
def test_compressible_batches_are_compressed_by_both(codec: CompressionType) -> None:
    inputs = CASES["many-records"]
    theirs = kafka_python_build(codec, inputs, PRODUCERS["plain"])
    ours = kafpy_build(codec, inputs, PRODUCERS["plain"])
    assert RecordBatch(theirs).compression_type is codec
    assert len(ours) < len(kafka_python_build(0, inputs, PRODUCERS["plain"])) / 2


def test_control_batch_is_read_by_kafka_python_as_a_commit_marker() -> None:
    # key: version int16 0, type int16 1 (commit); value: version 0, coordinator epoch int32
    data = build_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")],
        timestamp=99,
        base_offset=30,
        producer_id=4,
        producer_epoch=1,
        is_transactional=True,
        is_control=True,
    )
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc() and theirs.is_control_batch and theirs.is_transactional
    (marker,) = list(theirs)
    assert marker.commit and marker.version == 0 and marker.offset == 30


def test_log_append_time_batch() -> None:
    builder = RecordBatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=777)
    builder.append(5, None, b"a")
    builder.append(9, None, b"b")
    batch = RecordBatch(builder.build())
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert (batch.first_timestamp, batch.max_timestamp) == (5, 777)
    assert [r.timestamp for r in batch.records()] == [777, 777]
    assert [r.timestamp for r in DefaultRecordBatch(builder.build())] == [777, 777]


def test_explicit_offsets_leave_gaps_like_a_compacted_batch() -> None:
    builder = RecordBatchBuilder(base_offset=100)
    builder.append(1, b"a", b"1", offset=100)
    builder.append(2, b"b", b"2", offset=104)
    assert builder.next_offset == 105
    builder.append(3, b"c", b"3")
    batch = RecordBatch(builder.build())
    assert [r.offset for r in batch.records()] == [100, 104, 105]
    assert (batch.last_offset_delta, batch.record_count) == (5, 3)
    assert [r.offset for r in DefaultRecordBatch(builder.build())] == [100, 104, 105]
    with pytest.raises(
        ValueError, match="offset 105 must be greater than the last appended offset 105"
    ):
        builder.append(4, None, b"x", offset=105)
    with pytest.raises(ValueError, match="does not fit in a batch"):
        builder.append(4, None, b"x", offset=100 + (1 << 31))


def test_empty_batch() -> None:
    data = RecordBatchBuilder(base_offset=10, producer_id=3, producer_epoch=0).build()
    batch = RecordBatch(data)
    assert batch.is_valid() and batch.size_in_bytes == 61
    assert (batch.record_count, batch.last_offset_delta) == (0, 0)
    assert (batch.first_timestamp, batch.max_timestamp) == (-1, -1)
    assert list(batch.records()) == []
    assert list(DefaultRecordBatch(data)) == []


def test_build_is_repeatable_and_append_after_build_extends() -> None:
    builder = RecordBatchBuilder()
    builder.append(1, None, b"a")
    first = builder.build()
    assert builder.build() is first
    builder.append(2, None, b"b")
    assert RecordBatch(builder.build()).record_count == 2
    assert builder.record_count == 2
    assert builder.uncompressed_size_in_bytes == len(builder.build())


def test_type_errors_name_the_field() -> None:
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError, match="record key must be bytes or None, not str"):
        builder.append(1, "text", b"v")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record header value must be bytes or None, not int"):
        builder.append(1, None, b"v", [("h", 5)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="record header keys must be str, not bytes"):
        builder.append(1, None, b"v", [(b"h", b"v")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="timestamp must be an int"):
        builder.append(1.5, None, b"v")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a timestamp type"):
        RecordBatchBuilder(timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)


def test_build_batch_accepts_values_pairs_and_triples() -> None:
    before = int(time.time() * 1000)
    data = build_batch(
        [b"v", None, (b"k", b"v2"), (None, b"v3", [("h", None)])],
        compression=CompressionType.LZ4,
        base_offset=5,
    )
    batch = RecordBatch(data)
    records = list(batch.records())
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (5, None, b"v", ()),
        (6, None, None, ()),
        (7, b"k", b"v2", ()),
        (8, None, b"v3", (("h", None),)),
    ]
    assert records[0].timestamp >= before
    assert len({r.timestamp for r in records}) == 1
    assert batch.compression_type is CompressionType.LZ4


# --- properties ------------------------------------------------------------------

headers_strategy = st.lists(
    st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3
)
record_strategy = st.tuples(
    st.integers(-(1 << 40), 1 << 42),
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=200),
    headers_strategy,
)
producer_strategy = st.sampled_from(list(PRODUCERS.values()))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(record_strategy, min_size=1, max_size=25),
    st.sampled_from(CODECS),
    producer_strategy,
    st.integers(0, 1 << 50),
)
def test_build_then_parse_gives_back_the_records(
    inputs: list[Input], codec: CompressionType, producer: dict, base_offset: int
) -> None:
    data = kafpy_build(codec, inputs, producer, base_offset=base_offset)
    batch = RecordBatch(data)
    batch.ensure_valid()
    batch.ensure_offsets_match_count()
    assert batch.base_offset == base_offset and batch.record_count == len(inputs)
    assert batch.first_timestamp == inputs[0][0]
    assert batch.max_timestamp == max(ts for ts, *_ in inputs)
    assert list(batch.records()) == expected(inputs, producer["base_sequence"], base_offset)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(record_strategy, min_size=1, max_size=25), st.sampled_from(CODECS), producer_strategy
)
def test_kafka_python_agrees_on_random_batches(
    kafka_python_codecs: None, inputs: list[Input], codec: CompressionType, producer: dict
) -> None:
    theirs = kafka_python_build(codec, inputs, producer)
    ours = kafpy_build(codec, inputs, producer)
    if codec is CompressionType.NONE:
        assert ours == theirs
    else:
        assert header_and_payload(ours) == header_and_payload(theirs)
    want = expected(inputs, producer["base_sequence"])
    assert list(RecordBatch(theirs).records()) == want
    assert as_kafka_python_view(ours) == plain(want)


def test_a_refused_record_leaves_the_builder_unchanged() -> None:
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError):
        builder.append(1, None, b"v", [("h", 5)])  # type: ignore[list-item]
    builder.append(500, None, b"ok")
    batch = RecordBatch(builder.build())
    assert (batch.record_count, batch.first_timestamp, batch.max_timestamp) == (1, 500, 500)
    assert [r.timestamp for r in batch.records()] == [500]
