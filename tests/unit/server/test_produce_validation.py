"""The checks of a v3+ Produce payload before the append: exactly one v2 batch."""

from __future__ import annotations

from kafpy.common.errors import InvalidRecordError
from kafpy.records.builder import build_batch
from kafpy.server.produce_validation import validate_produce_records


def test_one_v2_batch_passes() -> None:
    assert validate_produce_records(build_batch([b"a", b"b"])) is None


def test_no_records_or_two_batches_are_refused() -> None:
    assert isinstance(validate_produce_records(None), InvalidRecordError)
    batch = build_batch([b"a"])
    error = validate_produce_records(batch + batch)
    assert isinstance(error, InvalidRecordError) and "exactly one record batch" in str(error)


def test_another_magic_is_refused_with_its_number() -> None:
    batch = bytearray(build_batch([b"a"]))
    batch[16] = 1  # the magic byte of the batch header
    error = validate_produce_records(bytes(batch))
    assert isinstance(error, InvalidRecordError)
    assert str(error).endswith("with magic version 2, got 1")


def test_a_partial_header_is_no_batch() -> None:
    error = validate_produce_records(build_batch([b"a"])[:20])
    assert isinstance(error, InvalidRecordError) and "must have exactly one" in str(error)
