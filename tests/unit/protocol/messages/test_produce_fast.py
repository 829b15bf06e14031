"""The Produce fast codec against the generic one: the same values and bytes, over every
Produce version kafpy serves, and the generic codec for every other shape."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.messages.produce import (
    PRODUCE_REQUEST,
    PRODUCE_RESPONSE,
    decode_single_partition_request,
    encode_single_partition_response,
)

LOW, HIGH = SUPPORTED_VERSIONS[ApiKey.PRODUCE]
VERSIONS = range(LOW, HIGH + 1)

names = st.one_of(st.sampled_from(["t", "", "topic-1", "ü-topic", "x" * 300]), st.text(max_size=20))
records = st.one_of(st.none(), st.binary(max_size=300))


def request(name: str, records: bytes | None, txn: str | None = None, acks: int = 1,
            partitions: int = 1, topics: int = 1) -> dict[str, Any]:  # fmt: skip
    return {
        "transactional_id": txn,
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [
            {"name": f"{name}{t or ''}",
             "partition_data": [{"index": p, "records": records} for p in range(partitions)]}
            for t in range(topics)
        ],
    }  # fmt: skip


def generic_decode(version: int, buf: bytes) -> tuple[dict[str, Any], int] | None:
    try:
        value, end = PRODUCE_REQUEST.compiled(version).decode(memoryview(buf), 0)
    except Exception:
        return None
    return value, end


def plain(value: Any) -> Any:
    """Memoryviews as bytes, so decoded values compare."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return bytes(value) if isinstance(value, memoryview) else value


def check_request(version: int, buf: bytes) -> bool:
    """The fast decoder answers like the generic one, or not at all; whether it answered."""
    fast = decode_single_partition_request(version, memoryview(buf), 0)
    if fast is None:
        return False
    generic = generic_decode(version, buf)
    assert generic is not None, "the fast decoder accepted what the generic one refuses"
    assert plain(fast[0]) == plain(generic[0]) and fast[1] == generic[1]
    assert list(fast[0]) == list(generic[0])  # the same keys, in the same order
    return True


@pytest.mark.parametrize("version", VERSIONS)
def test_the_common_request_takes_the_fast_path_with_the_generic_values(version: int) -> None:
    for name in ("t", "", "ü-topic", "x" * 200):
        for data in (b"", b"BATCH", b"r" * 127, b"r" * 128, b"r" * 20000):
            buf = PRODUCE_REQUEST.encode(version, request(name, data))
            assert check_request(version, buf) == (version >= 3)
            # what the socket server calls: the fast path where it answers
            decoded = PRODUCE_REQUEST.decode(version, buf)
            assert plain(decoded) == plain(generic_decode(version, buf)[0])  # type: ignore[index]


@pytest.mark.parametrize("version", VERSIONS)
def test_other_requests_fall_back_to_the_generic_decoder(version: int) -> None:
    others = [request("t", None), request("t", b"B", partitions=2), request("t", b"B", topics=2),
              request("t", b"B", partitions=0), request("t", b"B", topics=0)]  # fmt: skip
    if version >= 3:
        others.append(request("t", b"B", txn="my-txn"))
    for value in others:
        buf = PRODUCE_REQUEST.encode(version, value)
        assert not check_request(version, buf)
        assert plain(PRODUCE_REQUEST.decode(version, buf)) == plain(generic_decode(version, buf)[0])  # type: ignore[index]


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_or_padded_requests_decode_as_the_generic_decoder_says(version: int) -> None:
    buf = PRODUCE_REQUEST.encode(version, request("topic", b"0123456789" * 20))
    for cut in range(len(buf)):
        check_request(version, buf[:cut])  # answers nothing the generic decoder refuses
    check_request(version, buf + b"\x00\x01trailing")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), names, records, st.one_of(st.none(), st.text(max_size=5)),
       st.integers(-32768, 32767), st.binary(max_size=40), st.integers(0, 80))  # fmt: skip
def test_fast_decoder_agrees_with_the_generic_one(
    version: int, name: str, data: bytes | None, txn: str | None, acks: int, noise: bytes,
    at: int,
) -> None:  # fmt: skip
    buf = PRODUCE_REQUEST.encode(version, request(name, data, txn if version >= 3 else None, acks))
    check_request(version, buf)
    at = min(at, len(buf))
    check_request(version, buf[:at] + noise + buf[at + len(noise) :])  # corrupted in place


def response(name: str, **partition: Any) -> dict[str, Any]:
    p = {"index": 0, "error_code": 0, "base_offset": 41, "log_append_time_ms": -1,
         "log_start_offset": 0, "record_errors": [], "error_message": None}  # fmt: skip
    p.update(partition)
    return {"responses": [{"name": name, "partition_responses": [p]}], "throttle_time_ms": 0}


def generic_encode(version: int, value: dict[str, Any]) -> bytes | None:
    out: list[Any] = []
    try:
        PRODUCE_RESPONSE.compiled(version).encode(value, out)
    except Exception:
        return None
    return b"".join(out)


def check_response(version: int, value: dict[str, Any]) -> bool:
    fast = encode_single_partition_response(version, value)
    if fast is None:
        return False
    assert b"".join(fast) == generic_encode(version, value)
    return True


@pytest.mark.parametrize("version", VERSIONS)
def test_the_common_response_takes_the_fast_path_with_the_generic_bytes(version: int) -> None:
    for name in ("t", "", "ü-topic", "x" * 200):
        for fields in ({}, {"error_code": 6, "base_offset": -1}, {"index": 7, "log_append_time_ms": 123},
                       {"log_start_offset": 2**40}):  # fmt: skip
            value = response(name, **fields)
            for throttle in (0, 250):
                value["throttle_time_ms"] = throttle
                assert check_response(version, value)
                assert PRODUCE_RESPONSE.encode(version, value) == generic_encode(version, value)
    # missing keys take the schema's defaults in both
    bare = {"responses": [{"name": "t", "partition_responses": [{"index": 3}]}]}
    assert check_response(version, bare)


@pytest.mark.parametrize("version", VERSIONS)
def test_other_responses_fall_back_to_the_generic_encoder(version: int) -> None:
    two = response("t")
    two["responses"][0]["partition_responses"].append(
        dict(two["responses"][0]["partition_responses"][0])
    )
    errors = response("t", record_errors=[{"batch_index": 0, "batch_index_error_message": "bad"}],
                      error_message="bad record")  # fmt: skip
    message = response("t", error_message="not leader")
    tagged = response("t")
    tagged["_unknown_tagged_fields"] = {5: b"x"}
    for value in (two, errors, message, tagged, {"responses": [], "throttle_time_ms": 0}):
        assert not check_response(version, value)
        assert PRODUCE_RESPONSE.encode(version, value) == generic_encode(version, value)
    # what the generic encoder refuses, the fast one leaves to it
    for bad in (response("t", base_offset=2**63), response("t", error_code=None), response(None)):  # type: ignore[arg-type]
        assert not check_response(version, bad)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), names, st.integers(-(2**31), 2**31 - 1), st.integers(-32768, 32767),
       st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**31 - 1))  # fmt: skip
def test_fast_encoder_agrees_with_the_generic_one(
    version: int, name: str, index: int, error: int, offset: int, start: int, throttle: int
) -> None:
    value = response(
        name, index=index, error_code=error, base_offset=offset, log_start_offset=start
    )
    value["throttle_time_ms"] = throttle
    check_response(version, value)
