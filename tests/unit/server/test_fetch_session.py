"""Fetch sessions (KIP-227): the cache's rules, the contexts, and Fetch requests encoded
and answered by KafkaApis."""

from __future__ import annotations

from typing import Any

from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.fetch import FetchMetadata
from kafpy.records.builder import build_batch
from kafpy.server.delayed_fetch import PartitionFetchInfo
from kafpy.server.fetch_session import (
    FetchManager,
    FetchSessionCache,
    FullFetchContext,
    IncrementalFetchContext,
    SessionErrorContext,
    SessionlessFetchContext,
)
from tests.unit.server.fixtures import Broker
from tests.unit.server.test_kafka_apis import apis_for, call, produce_body

EVICTION_MS = 120_000
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def parts(n: int, topic: str = "t") -> dict[TopicPartition, PartitionFetchInfo]:
    return {TopicPartition(topic, p): PartitionFetchInfo(0, 1024) for p in range(n)}


def answer(p: int, hw: int = 0, error: int = 0, records: bytes = b"") -> dict[str, Any]:
    return {"partition_index": p, "error_code": error, "high_watermark": hw,
            "last_stable_offset": hw, "log_start_offset": 0, "aborted_transactions": None,
            "preferred_read_replica": -1, "records": records}  # fmt: skip


def open_session(
    manager: FetchManager, data: dict[TopicPartition, PartitionFetchInfo], follower: bool = False
) -> int:
    context = manager.new_context(FetchMetadata(0, 0), data, [], follower)
    assert isinstance(context, FullFetchContext)
    return context.update_and_generate_response_data(
        {tp: answer(tp.partition) for tp in data}
    ).session_id


# -- the cache --------------------------------------------------------------------------------


def test_a_full_fetch_with_epoch_0_opens_a_session_at_epoch_1() -> None:
    time = MockTime()
    manager = FetchManager(time, FetchSessionCache(10))
    session_id = open_session(manager, parts(3))
    assert session_id > 0
    session = manager.cache.get(session_id)
    assert session is not None and session.epoch == 1 and not session.privileged
    assert (manager.cache.size, manager.cache.total_partitions) == (1, 3)


def test_epoch_minus_1_is_sessionless_and_closes_the_named_session() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(10))
    session_id = open_session(manager, parts(2))
    context = manager.new_context(FetchMetadata(session_id, -1), parts(2), [], False)
    assert isinstance(context, SessionlessFetchContext)
    assert manager.cache.size == 0 and manager.cache.total_partitions == 0
    response = context.update_and_generate_response_data({T0: answer(0)})
    assert response.session_id == 0 and list(response.partitions) == [T0]


def test_no_room_answers_without_a_session() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(0))
    assert open_session(manager, parts(2)) == 0


def test_unknown_session_and_wrong_epoch_are_session_errors() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(10))
    session_id = open_session(manager, parts(2))
    unknown = manager.new_context(FetchMetadata(session_id + 1, 1), {}, [], False)
    assert isinstance(unknown, SessionErrorContext)
    assert unknown.error == Errors.FETCH_SESSION_ID_NOT_FOUND
    stale = manager.new_context(FetchMetadata(session_id, 5), {}, [], False)
    assert isinstance(stale, SessionErrorContext)
    assert stale.error == Errors.INVALID_FETCH_SESSION_EPOCH
    response = stale.update_and_generate_response_data({T0: answer(0)})
    assert (response.error, response.session_id, response.partitions) == (71, 0, {})
    # the errors left the session as it was
    assert manager.new_context(FetchMetadata(session_id, 1), {}, [], False).error == Errors.NONE


def test_incremental_fetches_add_update_and_forget_partitions() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(10))
    session_id = open_session(manager, parts(2))
    t2 = TopicPartition("t", 2)
    context = manager.new_context(
        FetchMetadata(session_id, 1), {T1: PartitionFetchInfo(7, 1024), t2: PartitionFetchInfo(0, 9)},
        [T0], False,
    )  # fmt: skip
    assert isinstance(context, IncrementalFetchContext)
    assert [(tp, i.fetch_offset) for tp, i in context.partitions()] == [(T1, 7), (t2, 0)]
    session = manager.cache.get(session_id)
    assert session is not None and session.epoch == 2 and manager.cache.total_partitions == 2
    # forgetting every partition closes the session; the request is answered sessionless
    last = manager.new_context(FetchMetadata(session_id, 2), {}, [T1, t2], False)
    assert isinstance(last, SessionlessFetchContext) and manager.cache.get(session_id) is None


def test_incremental_answers_leave_out_unchanged_partitions() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(10))
    session_id = open_session(manager, parts(4))  # every high watermark 0
    context = manager.new_context(FetchMetadata(session_id, 1), {}, [], False)
    updates = {
        TopicPartition("t", 0): answer(0),  # unchanged
        TopicPartition("t", 1): answer(1, hw=5),  # high watermark moved
        TopicPartition("t", 2): answer(2, records=b"x" * 70),  # records
        TopicPartition("t", 3): answer(3, error=Errors.NOT_LEADER_OR_FOLLOWER),
    }
    response = context.update_and_generate_response_data(updates)
    assert (response.error, response.session_id) == (0, session_id)
    assert [tp.partition for tp in response.partitions] == [1, 2, 3]
    # answered partitions moved to the back of the session's order
    session = manager.cache.get(session_id)
    assert session is not None and [tp.partition for tp in session.partitions] == [0, 1, 2, 3]
    # next time: the moved high watermark is known; the error goes out again, and its
    # partition once more when the error clears (its cached high watermark was reset)
    context = manager.new_context(FetchMetadata(session_id, 2), {}, [], False)
    response = context.update_and_generate_response_data(
        {
            TopicPartition("t", p): answer(
                p, hw=5 if p == 1 else 0, error=Errors.NOT_LEADER_OR_FOLLOWER if p == 3 else 0
            )
            for p in range(4)
        }  # fmt: skip
    )
    assert [tp.partition for tp in response.partitions] == [3]
    context = manager.new_context(FetchMetadata(session_id, 3), {}, [], False)
    response = context.update_and_generate_response_data(
        {TopicPartition("t", p): answer(p, hw=5 if p == 1 else 0) for p in range(4)}
    )
    assert [tp.partition for tp in response.partitions] == [3]


def test_a_duplicate_request_is_answered_invalid_epoch_when_it_completes() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(10))
    session_id = open_session(manager, parts(1))
    first = manager.new_context(FetchMetadata(session_id, 1), {}, [], False)
    # the session moved on while the first fetch waited in the purgatory
    assert manager.new_context(FetchMetadata(session_id, 2), {}, [], False).error == 0
    response = first.update_and_generate_response_data({T0: answer(0, hw=3)})
    assert (response.error, response.session_id) == (71, session_id)


def test_eviction_rules() -> None:
    time = MockTime()
    manager = FetchManager(time, FetchSessionCache(2, EVICTION_MS))
    small = open_session(manager, parts(2))
    time.sleep(10)
    big = open_session(manager, parts(5))
    assert manager.cache.size == 2
    # a young session is not evicted by a consumer's, however big
    assert open_session(manager, parts(50)) == 0
    # a follower's session evicts the smallest consumer session at once
    follower = open_session(manager, parts(1), follower=True)
    assert follower > 0 and manager.cache.get(small) is None and manager.cache.evictions == 1
    # once older than the eviction time (and touched), a session is evictable by a bigger one
    time.sleep(EVICTION_MS + 5)
    assert manager.new_context(FetchMetadata(big, 1), {}, [], False).error == 0  # touch
    assert manager.new_context(FetchMetadata(follower, 1), {}, [], True).error == 0
    time.sleep(10)
    assert open_session(manager, parts(5)) == 0  # same size: not more valuable
    bigger = open_session(manager, parts(6))
    assert bigger > 0 and manager.cache.get(big) is None
    # a follower's session is evicted by a consumer's only when stale
    assert open_session(manager, parts(100)) == 0
    time.sleep(EVICTION_MS + 1)
    assert manager.new_context(FetchMetadata(bigger, 1), {}, [], False).error == 0
    # the follower's session is the least recently used and stale: it goes first
    assert open_session(manager, parts(1)) > 0
    assert manager.cache.get(follower) is None and manager.cache.evictions == 3
    assert manager.cache.total_partitions == 6 + 1


# -- through KafkaApis, with encoded requests -----------------------------------------------------


def fetch_body(
    session_id: int, epoch: int, partitions: list[tuple[str, int, int]],
    forgotten: list[tuple[str, int]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:  # fmt: skip
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, p, offset in partitions:
        topics.setdefault(topic, []).append(
            {
                "partition": p,
                "fetch_offset": offset,
                "partition_max_bytes": 1 << 20,
                "current_leader_epoch": -1,
                "log_start_offset": -1,
            }  # fmt: skip
        )
    gone: dict[str, list[int]] = {}
    for topic, p in forgotten:
        gone.setdefault(topic, []).append(p)
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": ps} for t, ps in gone.items()],
            "rack_id": ""}  # fmt: skip


def answered(resp: dict[str, Any]) -> list[tuple[str, int]]:
    return [(t["topic"], p["partition_index"]) for t in resp["responses"] for p in t["partitions"]]


def test_fetch_requests_in_a_session(broker: Broker) -> None:
    broker.lead("t", partitions=3)
    apis = apis_for(broker)
    resp = call(
        apis,
        ApiKey.FETCH,
        11,
        fetch_body(0, 0, [("t", 0, 0), ("t", 1, 0), ("t", 2, 0), ("gone", 0, 0)]),
    )
    assert resp is not None and resp["error_code"] == 0
    session_id = resp["session_id"]
    assert session_id > 0 and len(answered(resp)) == 4
    assert apis.ctx.fetch_manager.cache.total_partitions == 4
    # idle: only the partition in error is answered
    resp = call(apis, ApiKey.FETCH, 11, fetch_body(session_id, 1, []))
    assert resp is not None and (resp["error_code"], resp["session_id"]) == (0, session_id)
    [gone] = resp["responses"]
    assert (
        gone["topic"] == "gone"
        and gone["partitions"][0]["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    # new records on t-1: it alone (and the error) comes back; forgetting "gone" drops it
    assert call(apis, ApiKey.PRODUCE, 8, {**produce_body(build_batch([b"a", b"b"])),
                "topic_data": [{"name": "t", "partition_data": [{"index": 1, "records": build_batch([b"a", b"b"])}]}]})  # fmt: skip
    resp = call(apis, ApiKey.FETCH, 11, fetch_body(session_id, 2, [], forgotten=[("gone", 0)]))
    assert resp is not None and answered(resp) == [("t", 1)]
    assert resp["responses"][0]["partitions"][0]["high_watermark"] == 2
    # the consumer moves its offset on t-1: the new high watermark was told, nothing new
    resp = call(apis, ApiKey.FETCH, 11, fetch_body(session_id, 3, [("t", 1, 2)]))
    assert resp is not None and answered(resp) == []
    assert apis.ctx.fetch_manager.cache.total_partitions == 3
    # a stale epoch and an unknown session: the top-level error, nothing else
    for body, error in ((fetch_body(session_id, 3, []), Errors.INVALID_FETCH_SESSION_EPOCH),
                        (fetch_body(session_id + 1, 1, []), Errors.FETCH_SESSION_ID_NOT_FOUND)):  # fmt: skip
        resp = call(apis, ApiKey.FETCH, 11, body)
        assert resp is not None
        assert (resp["error_code"], resp["session_id"], resp["responses"]) == (error, 0, [])
    # the session survived both
    resp = call(apis, ApiKey.FETCH, 11, fetch_body(session_id, 4, []))
    assert resp is not None and (resp["error_code"], answered(resp)) == (0, [])


def test_fetch_before_v7_never_opens_a_session(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker, **{"max.incremental.fetch.session.cache.slots": "5"})
    assert apis.ctx.fetch_manager.cache.max_entries == 5
    resp = call(apis, ApiKey.FETCH, 6, fetch_body(0, 0, [("t", 0, 0)]))
    assert resp is not None and answered(resp) == [("t", 0)]
    assert apis.ctx.fetch_manager.cache.size == 0
