"""Tests of kafpy.testing.faults: bad fault names fail at once (configuring faults needs
no running broker), and error answers have each API's real response shape."""

from __future__ import annotations

import pytest

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import decode_response, encode_response
from kafpy.testing import KafkaCluster
from kafpy.testing.faults import FAILABLE_ERRORS, error_response


def test_unknown_api_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match=r"Unknown API 'Produse'.*Fetch.*Produce"):
        KafkaCluster(1).faults.fail_next("Produse", "NOT_LEADER_OR_FOLLOWER")
    with pytest.raises(ValueError, match=r"Unknown API 'fetch'.*Fetch"):
        KafkaCluster(1).faults.delay("fetch", ms=10)


def test_unknown_error_lists_the_errors_of_that_api() -> None:
    with pytest.raises(ValueError, match=r"Unknown error 'NOT_LEADER'.*NOT_LEADER_OR_FOLLOWER"):
        KafkaCluster(1).faults.fail_next("Produce", "NOT_LEADER")


def test_an_error_kafka_never_returns_for_the_api_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Kafka does not answer Produce with NOT_COORDINATOR"):
        KafkaCluster(1).faults.fail_next("Produce", "NOT_COORDINATOR")


def test_an_api_without_error_answers_is_refused_for_fail_next() -> None:
    with pytest.raises(ValueError, match=r"Failing ApiVersions requests is not supported"):
        KafkaCluster(1).faults.fail_next("ApiVersions", "UNKNOWN_SERVER_ERROR")


def test_counts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="count 0 for fail_next"):
        KafkaCluster(1).faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=0)
    with pytest.raises(ValueError, match="ms -1 for delay"):
        KafkaCluster(1).faults.delay("Fetch", ms=-1)


def test_produce_error_answers_every_partition_of_the_request() -> None:
    request = {
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "a", "partition_data": [{"index": 0}, {"index": 2}]},
            {"name": "b", "partition_data": [{"index": 1}]},
        ],
    }
    code = Errors.NOT_LEADER_OR_FOLLOWER
    body = error_response(ApiKey.PRODUCE, request, code)
    for version in (3, 8):
        frame = b"".join(encode_response(ApiKey.PRODUCE, version, 7, body))
        correlation_id, decoded = decode_response(ApiKey.PRODUCE, version, frame[4:])
        assert correlation_id == 7
        got = [
            (t["name"], p["index"], p["error_code"])
            for t in decoded["responses"]
            for p in t["partition_responses"]
        ]
        assert got == [("a", 0, code), ("a", 2, code), ("b", 1, code)]


def test_fetch_error_answers_every_partition_of_the_request() -> None:
    request = {"topics": [{"topic": "a", "partitions": [{"partition": 0}, {"partition": 1}]}]}
    body = error_response(ApiKey.FETCH, request, Errors.NOT_LEADER_OR_FOLLOWER)
    for version in (4, 11):
        frame = b"".join(encode_response(ApiKey.FETCH, version, 1, body))
        _, decoded = decode_response(ApiKey.FETCH, version, frame[4:])
        parts = decoded["responses"][0]["partitions"]
        assert [(p["partition_index"], p["error_code"]) for p in parts] == [(0, 6), (1, 6)]


@pytest.mark.parametrize("key", sorted(FAILABLE_ERRORS))
def test_every_failable_api_encodes_its_error_answer(key: ApiKey) -> None:
    request = {
        "acks": 1,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0}]}],
        "topics": [
            {"topic": "t", "name": "t", "partitions": [{"partition": 0, "partition_index": 0}]}
        ],
        "member_id": "m",
        "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
    }
    code = FAILABLE_ERRORS[key][0]
    lo, hi = SUPPORTED_VERSIONS[key]
    for version in (lo, hi):
        frame = b"".join(encode_response(key, version, 3, error_response(key, request, code)))
        _, decoded = decode_response(key, version, frame[4:])
        assert code in _error_codes(decoded)


def _error_codes(value: object) -> set[int]:
    """Every error code anywhere in a decoded response (AddPartitionsToTxn names it
    partition_error_code)."""
    if isinstance(value, dict):
        found = {v for k, v in value.items() if k in ("error_code", "partition_error_code")}
        for v in value.values():
            found |= _error_codes(v)
        return found
    if isinstance(value, list):
        return set().union(*(_error_codes(v) for v in value)) if value else set()
    return set()
