"""Kafka's per-record rules for a client batch: runs of equal records and record by record
agree, and a record that lies about its structure makes the batch corrupt."""

from __future__ import annotations

import pytest

from kafpy.common.errors import CorruptRecordError
from kafpy.records.builder import build_batch
from kafpy.records.record_batch import HEADER, RECORD_BATCH_OVERHEAD
from kafpy.records.record_validation import check_records, scan_records


def _section(batch: bytes) -> tuple[memoryview, tuple[int, ...]]:
    return memoryview(batch), HEADER.unpack_from(batch, 0)


@pytest.mark.parametrize("n", [1, 5, 70, 9000])  # runs across the 64 and 8192 delta steps
def test_a_well_formed_batch_passes_both_walks(n: int) -> None:
    batch = build_batch([(b"k", b"v" * 20)] * n, timestamp=1000)
    buffer, header = _section(batch)
    check_records(buffer, RECORD_BATCH_OVERHEAD, len(batch), header)
    keyless, bad = scan_records(batch[RECORD_BATCH_OVERHEAD:], header, 0, True, 1000, 1000)
    assert (keyless, bad) == ([], [])


def test_scan_reports_keyless_records_and_timestamps_out_of_bounds() -> None:
    batch = build_batch([(None, b"a"), (b"k", b"b")], timestamp=1000)
    _, header = _section(batch)
    keyless, bad = scan_records(batch[RECORD_BATCH_OVERHEAD:], header, 7, True, 0, 999)
    assert keyless == [0]
    assert [i for i, _ in bad] == [0, 1]


def test_a_record_count_that_lies_is_corrupt() -> None:
    batch = bytearray(build_batch([b"a", b"b", b"c"]))
    count_at = RECORD_BATCH_OVERHEAD - 4
    batch[count_at:RECORD_BATCH_OVERHEAD] = (2).to_bytes(4, "big")
    buffer, header = _section(bytes(batch))
    with pytest.raises(CorruptRecordError, match="more than the 2 records"):
        check_records(buffer, RECORD_BATCH_OVERHEAD, len(batch), header)
