"""Produce and Fetch, the hot paths, against literal bytes."""

from __future__ import annotations

from kafpy.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE
from kafpy.protocol.messages.produce import PRODUCE_REQUEST, PRODUCE_RESPONSE
from tests.unit.protocol.messages.test_inter_broker import NO_TAGS, arr, carr, cs, i16, i32, i64, s


def test_produce_request_v3() -> None:
    value = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1500,
        "topic_data": [{"name": "t", "partition_data": [{"index": 2, "records": b"BATCH"}]}],
    }
    expected = i16(-1) + i16(-1) + i32(1500) + arr(s("t") + arr(i32(2) + i32(5) + b"BATCH"))
    assert PRODUCE_REQUEST.encode(3, value) == expected
    decoded = PRODUCE_REQUEST.decode(3, expected)
    assert bytes(decoded["topic_data"][0]["partition_data"][0]["records"]) == b"BATCH"


def test_produce_request_v9_flexible() -> None:
    value = {
        "transactional_id": "x",
        "acks": 1,
        "timeout_ms": 1,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": None}]}],
    }
    expected = (
        cs("x")
        + i16(1)
        + i32(1)
        + carr(cs("t") + carr(i32(0) + b"\x00" + NO_TAGS) + NO_TAGS)
        + NO_TAGS
    )
    assert PRODUCE_REQUEST.encode(9, value) == expected


def test_produce_response_v8() -> None:
    value = {
        "responses": [
            {
                "name": "t",
                "partition_responses": [
                    {
                        "index": 0,
                        "error_code": 0,
                        "base_offset": 10,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                        "record_errors": [],
                        "error_message": None,
                    }
                ],
            }
        ],
        "throttle_time_ms": 0,
    }
    expected = arr(
        s("t") + arr(i32(0) + i16(0) + i64(10) + i64(-1) + i64(0) + arr() + i16(-1))
    ) + i32(0)
    assert PRODUCE_RESPONSE.encode(8, value) == expected
    assert PRODUCE_RESPONSE.decode(8, expected) == value


def test_fetch_request_v11_defaults() -> None:
    value = {
        "max_wait_ms": 500,
        "min_bytes": 1,
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "fetch_offset": 7, "partition_max_bytes": 1024}],
            }
        ],
    }
    expected = (
        i32(-1)
        + i32(500)
        + i32(1)
        + i32(0x7FFFFFFF)
        + b"\x00"
        + i32(0)
        + i32(-1)
        + arr(s("t") + arr(i32(0) + i32(-1) + i64(7) + i64(-1) + i32(1024)))
        + arr()
        + s("")
    )
    assert FETCH_REQUEST.encode(11, value) == expected


def test_fetch_response_v4_with_aborted_transactions() -> None:
    value = {
        "throttle_time_ms": 0,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 5,
                        "last_stable_offset": 5,
                        "aborted_transactions": [{"producer_id": 9, "first_offset": 1}],
                        "records": b"R",
                    }
                ],
            }
        ],
    }
    expected = i32(0) + arr(
        s("t") + arr(i32(0) + i16(0) + i64(5) + i64(5) + arr(i64(9) + i64(1)) + i32(1) + b"R")
    )
    assert FETCH_RESPONSE.encode(4, value) == expected
