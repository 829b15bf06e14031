"""The error table against kafka-python's, and mapping exceptions to codes."""

from __future__ import annotations

import inspect

import kafka.errors

from kafpy.common.errors import KafkaError, OffsetOutOfRangeError
from kafpy.protocol.errors import Errors, error_code_of

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


def test_error_code_of() -> None:
    assert error_code_of(OffsetOutOfRangeError("offset 5 out of range")) == 1
    assert error_code_of(KafkaError("boom")) == -1
    assert error_code_of(ValueError("x")) == -1
