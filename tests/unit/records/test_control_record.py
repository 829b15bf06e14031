"""Control records: end-transaction markers as kafka-python reads them, and parse errors."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafpy.common.errors import InvalidRecordError
from kafpy.records.builder import build_batch
from kafpy.records.control_record import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
    control_record_type,
)
from kafpy.records.record import Record
from kafpy.records.record_batch import RecordBatch


@pytest.mark.parametrize("control_type", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_marker_batch_round_trip(control_type: ControlRecordType) -> None:
    marker = EndTransactionMarker(control_type, coordinator_epoch=12)
    data = build_end_transaction_marker(
        marker,
        producer_id=400,
        producer_epoch=3,
        timestamp=5000,
        base_offset=77,
        partition_leader_epoch=2,
    )
    batch = RecordBatch(data)
    batch.ensure_valid()
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (400, 3, -1)
    assert (batch.base_offset, batch.partition_leader_epoch) == (77, 2)
    assert control_record_type(batch) is control_type
    (record,) = list(batch.records())
    assert record.key == b"\x00\x00\x00" + bytes([control_type])
    assert record.value == b"\x00\x00\x00\x00\x00\x0c"
    assert EndTransactionMarker.from_record(record) == marker

    (theirs,) = list(DefaultRecordBatch(data))
    assert theirs.commit is (control_type is ControlRecordType.COMMIT)
    assert theirs.abort is (control_type is ControlRecordType.ABORT)


def test_unknown_types_and_bad_keys() -> None:
    assert ControlRecordType.parse(b"\x00\x00\x00\x07") is ControlRecordType.UNKNOWN
    with pytest.raises(InvalidRecordError, match="at least 4 bytes .* but has 2"):
        ControlRecordType.parse(b"\x00\x00")
    with pytest.raises(InvalidRecordError, match="negative version"):
        ControlRecordType.parse(b"\xff\xff\x00\x01")
    with pytest.raises(
        ValueError, match="UNKNOWN is not a control record type that can be written"
    ):
        ControlRecordType.UNKNOWN.record_key()


def test_marker_value_too_short() -> None:
    record = Record(9, 0, ControlRecordType.COMMIT.record_key(), b"\x00\x00")
    with pytest.raises(InvalidRecordError, match="offset 9 must hold at least 6 bytes"):
        EndTransactionMarker.from_record(record)
    unknown = Record(9, 0, b"\x00\x00\x00\x05", b"\x00" * 6)
    with pytest.raises(InvalidRecordError, match="not a commit or abort marker"):
        EndTransactionMarker.from_record(unknown)


def test_control_record_type_of_a_data_batch_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="base offset 4 is not a control batch"):
        control_record_type(RecordBatch(build_batch([b"x"], base_offset=4, timestamp=0)))
    empty_control = build_batch([], timestamp=0, is_control=True, base_offset=6)
    with pytest.raises(InvalidRecordError, match="base offset 6 holds no control record"):
        control_record_type(RecordBatch(empty_control))


def test_the_raw_type_of_an_unknown_control_record() -> None:
    assert ControlRecordType.type_id(b"\x00\x00\x00\x07") == 7
    assert ControlRecordType.type_id(ControlRecordType.COMMIT.record_key()) == 1
