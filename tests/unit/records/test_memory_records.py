"""MemoryRecords: walking concatenated batches, torn tails, and kafka-python interop."""

from __future__ import annotations

import struct

import pytest
from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords
from kafka.record.memory_records import MemoryRecordsBuilder as KafkaPythonMemoryRecordsBuilder

from kafpy.common.errors import CorruptRecordError
from kafpy.records.builder import build_batch
from kafpy.records.compression import CompressionType
from kafpy.records.memory_records import MemoryRecords


def three_batches() -> list[bytes]:
    return [
        build_batch([b"a", b"b"], base_offset=0, timestamp=10),
        build_batch([(b"k", b"c")], base_offset=2, timestamp=11, compression=CompressionType.GZIP),
        build_batch(
            [b"d", b"e", b"f"], base_offset=3, timestamp=12, compression=CompressionType.ZSTD
        ),
    ]


def test_walks_batches_and_records() -> None:
    parts = three_batches()
    records = MemoryRecords(b"".join(parts))
    assert records.size_in_bytes == len(records) == sum(map(len, parts))
    batches = list(records.batches())
    assert [b.base_offset for b in batches] == [0, 2, 3]
    assert [b.position for b in batches] == [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    assert [bytes(b.buffer()) for b in batches] == parts
    assert all(b.is_valid() for b in batches)
    assert [(r.offset, r.value) for r in records.records()] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
        (3, b"d"),
        (4, b"e"),
        (5, b"f"),
    ]
    assert [b.base_offset for b in records] == [0, 2, 3]  # iterating = batches()
    assert records.valid_bytes() == records.size_in_bytes


def test_empty() -> None:
    empty = MemoryRecords.empty()
    assert empty.size_in_bytes == 0
    assert list(empty.batches()) == [] and list(empty.batches_allow_partial()) == []
    assert list(empty.records()) == []


@pytest.mark.parametrize("cut", [1, 11, 12, 40, 61, -1])
def test_torn_trailing_batch(cut: int) -> None:
    parts = three_batches()
    whole = b"".join(parts[:2])
    torn = whole + parts[2][:cut]
    records = MemoryRecords(torn)
    seen = []
    with pytest.raises(CorruptRecordError, match="is truncated: needs"):
        for batch in records.batches():
            seen.append(batch.base_offset)
    assert seen == [0, 2]
    assert [b.base_offset for b in records.batches_allow_partial()] == [0, 2]
    assert records.valid_bytes() == len(whole)


def test_a_malformed_complete_batch_is_not_taken_for_a_partial_one() -> None:
    parts = three_batches()
    bad = bytearray(parts[1])
    struct.pack_into(">i", bad, 8, 2)  # a length too small to hold the magic byte
    buf = parts[0] + bytes(bad) + parts[2]
    with pytest.raises(
        CorruptRecordError, match="base offset 2 .* too few to hold even the magic byte"
    ):
        list(MemoryRecords(buf).batches_allow_partial())


def test_offsets_assigned_in_place_through_the_batches() -> None:
    buf = bytearray(b"".join(three_batches()))
    next_offset = 1000
    for batch in MemoryRecords(buf).batches():
        batch.set_last_offset(next_offset + batch.last_offset_delta)
        batch.set_partition_leader_epoch(4)
        next_offset = batch.next_offset
    again = list(MemoryRecords(buf).batches())
    assert [b.base_offset for b in again] == [1000, 1002, 1003]
    assert all(b.is_valid() and b.partition_leader_epoch == 4 for b in again)
    assert [r.offset for r in MemoryRecords(buf).records()] == list(range(1000, 1006))


@pytest.mark.usefixtures("kafka_python_codecs")
def test_kafka_python_reads_ours() -> None:
    parts = [
        build_batch(
            [b"v%d" % i for i in range(5)], base_offset=i * 5, timestamp=i, compression=codec
        )
        for i, codec in enumerate(CompressionType)
    ]
    theirs = KafkaPythonMemoryRecords(b"".join(parts))
    seen = []
    while theirs.has_next():
        batch = theirs.next_batch()
        assert batch.validate_crc()
        seen.extend((r.offset, r.value) for r in batch)
    assert seen == [(i * 5 + j, b"v%d" % j) for i in range(5) for j in range(5)]


def test_we_read_kafka_pythons_memory_records_builder() -> None:
    builder = KafkaPythonMemoryRecordsBuilder(magic=2, compression_type=1, batch_size=1 << 20)
    for i in range(50):
        builder.append(
            timestamp=100 + i, key=None, value=b"value %d" % i * 20, headers=[("i", b"%d" % i)]
        )
    builder.close()
    ours = MemoryRecords(bytes(builder.buffer()))
    (batch,) = list(ours.batches())
    batch.ensure_valid()
    assert batch.compression_type is CompressionType.GZIP
    assert [(r.offset, r.timestamp, r.value, r.headers) for r in ours.records()] == [
        (i, 100 + i, b"value %d" % i * 20, (("i", b"%d" % i),)) for i in range(50)
    ]
