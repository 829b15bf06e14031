"""record_scan: key-only scanning agrees with full decoding; filtered batches splice records."""

from __future__ import annotations

import pytest

from kafpy.common.errors import CorruptRecordError, MessageTooLargeError
from kafpy.records import CompressionType, RecordBatch, RecordBatchBuilder, TimestampType
from kafpy.storage.cleaner.record_scan import filter_batch, records_section, scan_records
from tests.fixtures.forged_batches import zstd_bomb

T = 1_700_000_000_000


def sample(
    codec: CompressionType, ts_type: TimestampType = TimestampType.CREATE_TIME
) -> RecordBatch:
    b = RecordBatchBuilder(compression=codec, timestamp_type=ts_type, base_offset=100,
                           producer_id=3, producer_epoch=1, base_sequence=10, log_append_time=T + 99)  # fmt: skip
    b.append(T + 5, b"a", b"1", [("h", b"x")])
    b.append(T, None, b"keyless")
    b.append(T + 9, b"b", None)
    b.append(T + 2, b"c" * 300, b"v" * 1000, [("h1", None), ("h2", b"yy")])
    return RecordBatch(b.build())


@pytest.mark.parametrize("codec", list(CompressionType))
def test_scan_matches_full_decoding(codec: CompressionType) -> None:
    batch = sample(codec)
    scanned = scan_records(batch, records_section(batch))
    full = list(batch.records())
    assert [(r.offset, r.timestamp, r.key, r.null_value) for r in scanned] == [
        (r.offset, r.timestamp, r.key, r.value is None) for r in full
    ]


@pytest.mark.parametrize("codec", list(CompressionType))
def test_filter_keeps_records_byte_exact_and_the_header_fields(codec: CompressionType) -> None:
    batch = sample(codec)
    section = records_section(batch)
    scanned = scan_records(batch, section)
    out = RecordBatch(filter_batch(batch, section, [scanned[0], scanned[3]]))
    out.ensure_valid()
    assert (out.base_offset, out.last_offset, out.record_count) == (100, 103, 2)
    assert (out.producer_id, out.producer_epoch, out.base_sequence) == (3, 1, 10)
    assert out.compression_type is codec
    full = list(batch.records())
    assert list(out.records()) == [full[0], full[3]]
    assert out.max_timestamp == T + 5


def test_log_append_time_batches_keep_their_time_and_empty_batches_are_valid() -> None:
    batch = sample(CompressionType.NONE, TimestampType.LOG_APPEND_TIME)
    section = records_section(batch)
    kept = scan_records(batch, section)[2:3]
    out = RecordBatch(filter_batch(batch, section, kept))
    assert out.max_timestamp == T + 99 and [r.timestamp for r in out.records()] == [T + 99]
    empty = RecordBatch(filter_batch(batch, section, []))
    empty.ensure_valid()
    assert empty.record_count == 0 and empty.last_offset == 103 and list(empty.records()) == []


def test_a_record_running_past_its_batch_is_corrupt() -> None:
    batch = sample(CompressionType.NONE)
    section = records_section(batch)
    with pytest.raises(CorruptRecordError, match="base offset 100"):
        scan_records(batch, section[:-5])


def test_records_section_is_bounded_as_on_produce() -> None:
    bomb = RecordBatch(zstd_bomb(T, value_size=8 << 20))  # one record of 8 MiB
    with pytest.raises(MessageTooLargeError, match="base offset 0"):
        records_section(bomb, max_message_bytes=1 << 20)
    assert len(records_section(bomb, max_message_bytes=16 << 20)) > 8 << 20
