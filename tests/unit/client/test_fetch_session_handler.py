"""FetchSessionHandler: what each request carries and when it falls back to a full fetch."""

from __future__ import annotations

from typing import Any

from kafpy.client.fetch_session_handler import FetchSessionHandler
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def data(offset: int) -> dict[str, int]:
    return {"fetch_offset": offset, "partition_max_bytes": 100, "log_start_offset": -1,
            "current_leader_epoch": -1}  # fmt: skip


def response(session_id: int, *tps: TopicPartition, error: int = 0) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp in tps:
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "error_code": 0})
    return {"error_code": error, "session_id": session_id, "throttle_time_ms": 0,
            "responses": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}  # fmt: skip


def build(handler: FetchSessionHandler, **wanted: int) -> Any:
    builder = handler.new_builder()
    for name, offset in wanted.items():
        builder.add({"a": A, "b": B, "c": C}[name], data(offset))
    return builder.build()


def test_full_then_incremental_requests() -> None:
    h = FetchSessionHandler(1)
    first = build(h, a=0, b=0)
    assert (first.metadata.session_id, first.metadata.epoch) == (0, 0)
    assert list(first.to_send) == [A, B] and first.to_forget == []
    assert h.handle_response(response(42, A, B))
    # unchanged b is left out, a moved, c is new; then b is dropped
    second = build(h, a=5, b=0, c=0)
    assert (second.metadata.session_id, second.metadata.epoch) == (42, 1)
    assert second.to_send == {A: data(5), C: data(0)} and second.to_forget == []
    fields = second.request_fields()
    assert fields["topics"] == [
        {"topic": "t", "partitions": [{"partition": 0, **data(5)}]},
        {"topic": "u", "partitions": [{"partition": 0, **data(0)}]},
    ]
    assert h.handle_response(response(42, A))
    third = build(h, a=5, c=0)
    assert third.metadata.epoch == 2 and third.to_send == {} and third.to_forget == [B]
    assert third.request_fields()["forgotten_topics_data"] == [{"topic": "t", "partitions": [1]}]
    assert list(third.session_partitions) == [A, C]


def test_a_sessionless_answer_keeps_full_fetches() -> None:
    h = FetchSessionHandler(1)
    build(h, a=0)
    assert h.handle_response(response(0, A))
    assert build(h, a=0).metadata.epoch == 0


def test_session_errors_and_bad_answers_fall_back_to_a_full_fetch() -> None:
    h = FetchSessionHandler(1)
    build(h, a=0, b=0)
    assert h.handle_response(response(42, A, B))
    build(h, a=1, b=0)
    # an incremental answer naming a partition outside the session: close, start again
    assert not h.handle_response(response(42, C))
    full = build(h, a=1, b=0)
    assert (full.metadata.session_id, full.metadata.epoch) == (42, 0) and len(full.to_send) == 2
    # a full answer that omits a partition is not used
    assert not h.handle_response(response(43, A))
    assert build(h, a=1, b=0).metadata.session_id == 0
    assert h.handle_response(response(44, A, B))
    build(h, a=1, b=0)
    assert not h.handle_response(response(0, error=Errors.INVALID_FETCH_SESSION_EPOCH))
    assert (h.next_metadata.session_id, h.next_metadata.epoch) == (44, 0)
    build(h, a=1, b=0)
    assert h.handle_response(response(45, A, B))
    build(h, a=1, b=0)
    assert not h.handle_response(response(0, error=Errors.FETCH_SESSION_ID_NOT_FOUND))
    assert (h.next_metadata.session_id, h.next_metadata.epoch) == (0, 0)
    build(h, a=1, b=0)
    assert h.handle_response(response(46, A, B))
    h.handle_error(ConnectionError("lost"))
    assert (h.next_metadata.session_id, h.next_metadata.epoch) == (46, 0)
