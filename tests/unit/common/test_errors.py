"""The one error table: codes, names, retriable flags and messages against kafka-python's
table, and the exception class of each code."""

from __future__ import annotations

import inspect

import kafka.errors
import pytest

from kafpy.common import errors
from kafpy.common.errors import Errors, KafkaError, UnknownLeaderEpochError, for_code

# Kafka renamed these codes after kafka-python took their names.
KAFKA_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    6: "NOT_LEADER_OR_FOLLOWER",
    10: "MESSAGE_TOO_LARGE",
    17: "INVALID_TOPIC_EXCEPTION",
    39: "INVALID_REPLICA_ASSIGNMENT",
}


def _reference() -> dict[int, tuple[str, bool]]:
    table = {}
    for _, cls in inspect.getmembers(kafka.errors, inspect.isclass):
        if issubclass(cls, kafka.errors.BrokerResponseError) and cls.errno is not None:
            table[cls.errno] = (cls.message, cls.retriable)
    return table


def test_codes_and_names_match_kafka() -> None:
    ref = _reference()
    assert {int(e) for e in Errors} == set(ref)
    for code, (name, _) in ref.items():
        assert Errors(code).name == KAFKA_NAMES.get(code, name)


def test_retriable_codes() -> None:
    retriable = {int(e) for e in Errors if e.retriable}
    assert {2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 56, 74, 75} <= retriable
    assert not Errors.INVALID_RECORD.retriable
    assert not Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.retriable


def test_messages() -> None:
    assert Errors.UNSUPPORTED_VERSION.message == "The version of API is not supported."
    assert Errors.NONE.message == ""
    assert all(e.message for e in Errors if e is not Errors.NONE)


def test_for_code() -> None:
    assert Errors.for_code(87) is Errors.INVALID_RECORD
    assert Errors.for_code(31337) is Errors.UNKNOWN_SERVER_ERROR


def _declared_classes() -> list[type[KafkaError]]:
    return [
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, KafkaError) and "error" in vars(obj)
    ]


def test_each_declared_exception_is_the_class_of_its_code() -> None:
    declared = _declared_classes()
    assert len({cls.error for cls in declared}) == len(declared), "one class per code"
    for cls in declared:
        assert for_code(cls.code) is cls
        assert cls.code == int(cls.error)
        assert cls.retriable == cls.error.retriable, cls


def test_unknown_leader_epoch_has_kafkas_code() -> None:
    assert UnknownLeaderEpochError.code == 75 == Errors.UNKNOWN_LEADER_EPOCH
    assert UnknownLeaderEpochError.retriable
    assert for_code(76) is not UnknownLeaderEpochError


def test_for_code_has_a_class_for_every_code() -> None:
    for error in Errors:
        if error is Errors.NONE:
            continue
        cls = for_code(error)
        assert issubclass(cls, KafkaError)
        assert cls.code == error
        assert cls.retriable == error.retriable
        assert for_code(error) is cls  # made once
    assert for_code(Errors.GROUP_AUTHORIZATION_FAILED).__name__ == "GroupAuthorizationFailedError"
    assert for_code(-1) is KafkaError
    assert for_code(31337) is KafkaError


def test_for_code_refuses_none() -> None:
    with pytest.raises(ValueError, match="NONE"):
        for_code(0)
