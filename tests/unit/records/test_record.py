"""Record: an immutable value with Kafka's defaults for headers and sequence."""

from __future__ import annotations

import dataclasses

import pytest

from kafpy.records.record import Record


def test_defaults_and_equality() -> None:
    record = Record(5, 1000, None, b"v")
    assert (record.headers, record.sequence) == ((), -1)
    assert record == Record(5, 1000, None, b"v", (), -1)
    assert record != Record(5, 1000, b"", b"v")
    assert hash(record) == hash(Record(5, 1000, None, b"v"))


def test_is_frozen() -> None:
    record = Record(0, 0, None, None, (("h", None),), 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.offset = 1  # type: ignore[misc]
