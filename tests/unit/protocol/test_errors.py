"""Mapping exceptions to the error code a response carries."""

from __future__ import annotations

from kafpy.common.errors import KafkaError, OffsetOutOfRangeError, UnknownLeaderEpochError
from kafpy.protocol.errors import Errors, error_code_of


def test_error_code_of() -> None:
    assert error_code_of(OffsetOutOfRangeError("offset 5 out of range")) == 1
    assert error_code_of(UnknownLeaderEpochError("epoch 7 is newer")) == Errors.UNKNOWN_LEADER_EPOCH
    assert error_code_of(KafkaError("boom")) == -1
    assert error_code_of(ValueError("x")) == -1
