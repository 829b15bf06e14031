"""Fetch sessions (KIP-227): the cache's rules, the contexts, and Fetch requests encoded
and answered by KafkaApis."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import decode_response
from kafpy.protocol.messages.fetch import FetchMetadata
from kafpy.records.builder import build_batch
from kafpy.server.broker_metrics import BrokerTopicStats
from kafpy.server.delayed_fetch import FetchParams, PartitionFetchInfo
from kafpy.server.fetch_session import (
    FetchManager,
    FetchSession,
    FetchSessionCache,
    FullFetchContext,
    IncrementalFetchContext,
    SessionErrorContext,
    SessionlessFetchContext,
)
from kafpy.server.replica_selector import RackAwareReplicaSelector
from kafpy.server.write_txn_markers import TxnMarkerWriter
from tests.unit.server.fixtures import (
    Broker,
    leader_and_isr,
    partition_state,
    txn_batch,
    txn_marker,
    update_metadata,
)
from tests.unit.server.test_kafka_apis import apis_for, call, make_request, produce_body

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
    leader_epoch: int = -1,
) -> dict[str, Any]:  # fmt: skip
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, p, offset in partitions:
        topics.setdefault(topic, []).append(
            {
                "partition": p,
                "fetch_offset": offset,
                "partition_max_bytes": 1 << 20,
                "current_leader_epoch": leader_epoch,
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


# -- an incremental fetch reads only what changed since the last one --------------------------


def fetch(
    apis: Any, session_id: int, epoch: int, partitions: list[tuple[str, int, int]] = [],  # noqa: B006
    **kw: Any,
) -> dict[str, Any]:  # fmt: skip
    body = fetch_body(session_id, epoch, partitions, leader_epoch=0)
    resp = call(apis, ApiKey.FETCH, 11, {**body, **kw})
    assert resp is not None and resp["error_code"] == 0, resp
    return resp


def by_partition(resp: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(t["topic"], p["partition_index"]): p for t in resp["responses"] for p in t["partitions"]}  # fmt: skip


def append(broker: Broker, tp: TopicPartition, *values: bytes) -> None:
    stamp = broker.time.milliseconds()
    data = memoryview(bytearray(build_batch(list(values), timestamp=stamp)))
    answer = asyncio.run(broker.replica_manager.append_records(1000, 1, {tp: data}))[tp]
    assert answer["error_code"] == 0, answer


def follower_fetch(broker: Broker, tp: TopicPartition, offset: int) -> None:
    params = FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    asyncio.run(broker.replica_manager.fetch_messages(params, [(tp, PartitionFetchInfo(offset, 1 << 20))]))  # fmt: skip


def dirty(apis: Any, session_id: int) -> set[tuple[str, int]]:
    """The partitions the session's next fetch reads."""
    session = apis.ctx.fetch_manager.cache.get(session_id)
    assert session is not None
    return {(tp.topic, tp.partition) for tp in session.dirty}


def two_replica_topic(broker: Broker, topic: str, partitions: int) -> None:
    """`topic` led here, each partition also on broker 1 (which fetches only when the test
    says): an append moves the high watermark only once broker 1 fetched past it."""
    states = [partition_state(topic, p, 0, replicas=[0, 1]) for p in range(partitions)]
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1]))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))


def test_each_kind_of_change_goes_out_in_the_next_incremental_response(broker: Broker) -> None:
    two_replica_topic(broker, "t", 6)
    tps = [TopicPartition("t", p) for p in range(6)]
    for tp in tps:
        append(broker, tp, b"a", b"b")  # log end 2, high watermark 0
    for tp in tps[2:]:
        follower_fetch(broker, tp, 2)  # high watermark 2
    apis = apis_for(broker)
    # t-0 at 0 (nothing below the high watermark), t-1 at 2 (ahead of it), the rest at 2
    resp = fetch(apis, 0, 0, [("t", 0, 0), ("t", 1, 2)] + [("t", p, 2) for p in range(2, 6)])
    session_id = resp["session_id"]
    assert session_id > 0 and len(answered(resp)) == 6
    # every partition idle: the next fetch reads none of them and answers nothing
    assert dirty(apis, session_id) == set()
    assert answered(fetch(apis, session_id, 1)) == []
    # an append the consumer cannot read yet (the high watermark stays): read, not answered
    append(broker, tps[0], b"c")
    assert dirty(apis, session_id) == {("t", 0)}
    assert answered(fetch(apis, session_id, 2)) == []
    assert dirty(apis, session_id) == set()
    # the high watermark alone moves (broker 1 fetched): t-1 goes out, without records
    follower_fetch(broker, tps[1], 2)
    resp = fetch(apis, session_id, 3)
    assert answered(resp) == [("t", 1)]
    [p1] = by_partition(resp).values()
    assert p1["high_watermark"] == 2 and not p1["records"]
    assert answered(fetch(apis, session_id, 4)) == []
    # the log start offset alone moves (DeleteRecords on the leader)
    partition = broker.replica_manager.get_partition(tps[2])
    assert partition is not None
    partition.delete_records_on_leader(1, lambda _: True)
    resp = fetch(apis, session_id, 5)
    assert answered(resp) == [("t", 2)]
    assert by_partition(resp)[("t", 2)]["log_start_offset"] == 1
    assert not by_partition(resp)[("t", 2)]["records"]
    assert answered(fetch(apis, session_id, 6)) == []
    # records become readable: they go out at every fetch until the consumer moves on
    follower_fetch(broker, tps[0], 3)
    for epoch in (7, 8):
        resp = fetch(apis, session_id, epoch)
        assert answered(resp) == [("t", 0)] and by_partition(resp)[("t", 0)]["records"]
    assert answered(fetch(apis, session_id, 9, [("t", 0, 3)])) == []
    # the leadership moves (epoch 1): the consumer's epoch 0 is fenced, at every fetch
    partition = broker.replica_manager.get_partition(tps[3])
    assert partition is not None
    partition.make_follower(partition_state("t", 3, 1, leader_epoch=1, replicas=[0, 1]))
    for epoch in (10, 11):
        resp = fetch(apis, session_id, epoch)
        assert answered(resp) == [("t", 3)]
        assert by_partition(resp)[("t", 3)]["error_code"] == Errors.FENCED_LEADER_EPOCH
    # the partition is deleted here (StopReplica): it goes out with its error
    broker.replica_manager.stop_replica(tps[4], delete=True)
    resp = fetch(apis, session_id, 12)
    assert answered(resp) == [("t", 4), ("t", 3)]  # the session's order: t-3 went to its back
    assert by_partition(resp)[("t", 4)]["error_code"] == Errors.NOT_LEADER_OR_FOLLOWER
    # t-5 was never touched: never answered, never read
    assert ("t", 5) not in dirty(apis, session_id)


def test_a_log_start_offset_moved_by_retention_on_another_thread_goes_out(broker: Broker) -> None:
    broker.lead("t", partitions=2)
    tp = TopicPartition("t", 0)
    append(broker, tp, b"a", b"b")
    apis = apis_for(broker)

    async def scenario() -> list[dict[str, Any]]:
        rm = broker.replica_manager
        rm.startup()  # on the loop: changes made elsewhere reach the sessions through it
        try:
            resps = [await apis_fetch(apis, 0, 0, [("t", 0, 2), ("t", 1, 0)])]
            session_id = resps[0]["session_id"]
            log = broker.log_manager.get_log(tp)
            assert log is not None
            mover = threading.Thread(target=log.maybe_increment_log_start_offset, args=(1,))
            mover.start()
            mover.join()
            await asyncio.sleep(0)
            resps.append(await apis_fetch(apis, session_id, 1))
            resps.append(await apis_fetch(apis, session_id, 2))
            return resps
        finally:
            await rm.shutdown_fetchers()

    _, moved, idle = asyncio.run(scenario())
    assert answered(moved) == [("t", 0)] and by_partition(moved)[("t", 0)]["log_start_offset"] == 1
    assert answered(idle) == []


async def apis_fetch(
    apis: Any, session_id: int, epoch: int, partitions: list[tuple[str, int, int]] = [],  # noqa: B006
    **kw: Any,
) -> dict[str, Any]:  # fmt: skip
    request = make_request(ApiKey.FETCH, 11, {**fetch_body(session_id, epoch, partitions), **kw})
    parts = await apis.handle(request)
    assert parts is not None
    _, resp = decode_response(ApiKey.FETCH, 11, b"".join(bytes(p) for p in parts)[4:])
    return resp


def test_a_long_poll_on_an_idle_session_wakes_for_new_records_only(broker: Broker) -> None:
    two_replica_topic(broker, "t", 3)
    tps = [TopicPartition("t", p) for p in range(3)]
    apis = apis_for(broker)
    rm = broker.replica_manager

    async def scenario() -> dict[str, Any]:
        opened = await apis_fetch(apis, 0, 0, [("t", p, 0) for p in range(3)])
        session_id = opened["session_id"]
        poll = asyncio.ensure_future(apis_fetch(apis, session_id, 1, max_wait_ms=30_000))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not poll.done()
        # parked once, under the session, not under each of its partitions
        assert rm.delayed_fetch_purgatory.delayed == 1
        assert [rm.delayed_fetch_purgatory.watched(tp) for tp in tps] == [0, 0, 0]
        assert rm.delayed_fetch_purgatory.watched(("FetchSession", session_id)) == 1
        # an append below no high watermark gives the consumer nothing: it keeps waiting
        await rm.append_records(1000, 1, {tps[1]: memoryview(bytearray(build_batch([b"x"])))})
        for _ in range(3):
            await asyncio.sleep(0)
        assert not poll.done()
        # broker 1 fetches it: the high watermark moves, the record is readable
        await rm.fetch_messages(
            FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20),
            [(tps[1], PartitionFetchInfo(1, 1 << 20))],
        )
        return await asyncio.wait_for(poll, 10)

    resp = asyncio.run(scenario())
    assert answered(resp) == [("t", 1)]
    assert by_partition(resp)[("t", 1)]["high_watermark"] == 1
    assert by_partition(resp)[("t", 1)]["records"]
    assert rm.delayed_fetch_purgatory.delayed == 0


def test_a_read_committed_session_gets_the_records_once_their_transaction_commits(
    broker: Broker,
) -> None:
    broker.lead("t")
    tp = TopicPartition("t", 0)
    apis = apis_for(broker)
    rm = broker.replica_manager
    session_id = fetch(apis, 0, 0, [("t", 0, 0)], isolation_level=1)["session_id"]
    answer = asyncio.run(rm.append_records(1000, 1, {tp: txn_batch(b"a", pid=7000)}))[tp]
    assert answer["error_code"] == 0
    # the high watermark moved, the last stable offset not: told, nothing to read
    resp = fetch(apis, session_id, 1, isolation_level=1)
    assert answered(resp) == [("t", 0)]
    p0 = by_partition(resp)[("t", 0)]
    assert (p0["high_watermark"], p0["last_stable_offset"]) == (1, 0) and not p0["records"]
    assert answered(fetch(apis, session_id, 2, isolation_level=1)) == []
    writer = TxnMarkerWriter(rm, None, broker.time)
    asyncio.run(writer.write_txn_markers({"markers": [txn_marker(7000, True, {"t": [0]})]}))
    resp = fetch(apis, session_id, 3, isolation_level=1)
    assert answered(resp) == [("t", 0)]
    p0 = by_partition(resp)[("t", 0)]
    assert (p0["high_watermark"], p0["last_stable_offset"]) == (2, 2) and p0["records"]


def test_idle_partitions_still_count_as_partition_reads_in_the_metrics(broker: Broker) -> None:
    # TotalFetchRequestsPerSec counts each partition of a session at each fetch, as Kafka,
    # which reads them all, does
    broker.lead("t", partitions=3)
    broker.lead("u", partitions=2)
    stats = broker.replica_manager.broker_topic_stats = BrokerTopicStats()
    apis = apis_for(broker)
    session_id = fetch(apis, 0, 0, [("t", p, 0) for p in range(3)] + [("u", 0, 0), ("u", 1, 0)])[
        "session_id"
    ]
    append(broker, TopicPartition("t", 1), b"a")  # read again; the others idle
    fetch(apis, session_id, 1)
    fetch(apis, session_id, 2)
    assert stats.topic_stats("t").total_fetch_requests == 3 * 3
    assert stats.topic_stats("u").total_fetch_requests == 2 * 3
    assert stats.all_topics.total_fetch_requests == 5 * 3
    assert stats.topic_stats("t").bytes_out > 0 and stats.topic_stats("u").bytes_out == 0


def test_a_session_that_may_be_sent_to_a_preferred_replica_reads_every_partition(
    broker: Broker,
) -> None:
    # the choice of a preferred read replica (KIP-392) depends on more than the partition
    # (here: broker 1 coming alive); such a consumer's session reads every partition
    states = [partition_state("t", p, 0, replicas=[0, 1]) for p in range(2)]
    broker.metadata_cache.update_metadata(update_metadata(states, [0], racks={0: "a"}))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    broker.replica_manager.replica_selector = RackAwareReplicaSelector()
    tp = TopicPartition("t", 0)
    append(broker, tp, b"a", b"b")
    follower_fetch(broker, tp, 2)
    apis = apis_for(broker)
    parts = [("t", 0, 2), ("t", 1, 0)]
    session_id = fetch(apis, 0, 0, parts, rack_id="b")["session_id"]
    assert answered(fetch(apis, session_id, 1, rack_id="b")) == []
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1], racks={0: "a", 1: "b"}))
    resp = fetch(apis, session_id, 2, rack_id="b")
    assert answered(resp) == [("t", 0)]
    assert by_partition(resp)[("t", 0)]["preferred_read_replica"] == 1


def test_a_fetch_with_other_read_rules_than_the_sessions_last_reads_every_partition(
    broker: Broker,
) -> None:
    # idle under read_committed (at the last stable offset) is not idle under
    # read_uncommitted (below the high watermark): a session changing its isolation
    # level mid-way (no client does; sessions outlive connections) reads everything
    broker.lead("t", partitions=2)
    tp = TopicPartition("t", 0)
    apis = apis_for(broker)
    rm = broker.replica_manager
    session_id = fetch(apis, 0, 0, [("t", 0, 0), ("t", 1, 0)], isolation_level=1)["session_id"]
    asyncio.run(rm.append_records(1000, 1, {tp: txn_batch(b"open", pid=7000)}))
    assert answered(fetch(apis, session_id, 1, isolation_level=1)) == [("t", 0)]  # hw 1
    assert answered(fetch(apis, session_id, 2, isolation_level=1)) == []
    resp = fetch(apis, session_id, 3, isolation_level=0)
    assert answered(resp) == [("t", 0)] and by_partition(resp)[("t", 0)]["records"]


def test_a_long_poll_whose_session_is_evicted_meanwhile_is_still_woken_by_new_records(
    broker: Broker,
) -> None:
    broker.lead("t", partitions=2)
    tp = TopicPartition("t", 1)
    apis = apis_for(broker, **{"max.incremental.fetch.session.cache.slots": "1"})
    cache = apis.ctx.fetch_manager.cache

    async def scenario() -> tuple[dict[str, Any], FetchSession]:
        opened = await apis_fetch(apis, 0, 0, [("t", 0, 0), ("t", 1, 0)])
        session_id = opened["session_id"]
        session = cache.get(session_id)
        assert session is not None
        poll = asyncio.ensure_future(apis_fetch(apis, session_id, 1, max_wait_ms=30_000))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not poll.done()
        # a follower's new session evicts the consumer's at once
        await apis_fetch(apis, 0, 0, [("t", 0, 0)], replica_id=1)
        assert cache.get(session_id) is None and cache.evictions == 1
        await broker.replica_manager.append_records(
            1000, 1, {tp: memoryview(bytearray(build_batch([b"x"])))}
        )
        return await asyncio.wait_for(poll, 10), session

    resp, evicted = asyncio.run(scenario())
    assert answered(resp) == [("t", 1)] and by_partition(resp)[("t", 1)]["records"]
    # answered: the evicted session no longer hears of its partitions
    marks = evicted.marks
    cache.partition_changed(tp)
    assert evicted.marks == marks
