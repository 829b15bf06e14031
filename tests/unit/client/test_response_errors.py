"""Response error codes turned into exceptions: the class, retriable flag and message."""

from __future__ import annotations

import pytest

from kafpy.client.response_errors import error_for_code, raise_for_code
from kafpy.common.errors import (
    KafkaError,
    TopicExistsError,
    UnknownLeaderEpochError,
)


def test_code_becomes_its_class() -> None:
    error = error_for_code(36, "Topic 'a' already exists.")
    assert isinstance(error, TopicExistsError)
    assert str(error) == "Topic 'a' already exists."


def test_unknown_leader_epoch_and_unsupported_compression_are_told_apart() -> None:
    assert isinstance(error_for_code(75), UnknownLeaderEpochError)
    unsupported = error_for_code(76)
    assert not isinstance(unsupported, UnknownLeaderEpochError)
    assert unsupported.code == 76
    assert not unsupported.retriable


def test_code_without_a_declared_class() -> None:
    error = error_for_code(30, None, "Joining group g")
    assert isinstance(error, KafkaError)
    assert error.code == 30
    assert not error.retriable
    assert str(error) == "Joining group g: Group authorization failed."
    assert error_for_code(14).retriable  # COORDINATOR_LOAD_IN_PROGRESS


def test_unknown_code() -> None:
    error = error_for_code(31337, None, "Fetching t-0")
    assert str(error) == "Fetching t-0: Unknown error code 31337."
    assert not error.retriable


def test_none_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="NONE"):
        error_for_code(0)
    raise_for_code(0, "ignored")
    with pytest.raises(TopicExistsError, match="Creating topic a: Topic with this name"):
        raise_for_code(36, None, "Creating topic a")
