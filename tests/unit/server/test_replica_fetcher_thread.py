"""ReplicaFetcherThread against a leader ReplicaManager in the same process (no sockets):
copying batches, taking the high watermark, truncation by OffsetForLeaderEpoch or to the
high watermark, OFFSET_OUT_OF_RANGE, and the leader's ISR expansion and shrinking."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kafpy.cluster.partition import Partition
from kafpy.common.errors import KafkaError
from kafpy.common.java_hash import java_string_hash
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import decode_response
from kafpy.records.builder import build_batch
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.kafka_apis import KafkaApis
from kafpy.server.replica_fetcher_manager import fetcher_id_for
from kafpy.server.replica_fetcher_thread import (
    BrokerEndPoint,
    ReplicaFetcherConfig,
    ReplicaFetcherThread,
)
from kafpy.server.replica_manager import FetchParams, PartitionFetchInfo
from kafpy.server.replica_selector import ClientMetadata
from tests.unit.server.fixtures import Broker, leader_and_isr, partition_state
from tests.unit.server.test_kafka_apis import apis_for, make_request

TP = TopicPartition("t", 0)


def batch(*values: bytes) -> memoryview:
    return memoryview(bytearray(build_batch(list(values), timestamp=1000)))


class LocalChannel:
    """Answers the fetcher's requests from a leader ReplicaManager directly."""

    def __init__(self, leader: Broker) -> None:
        self.leader = leader
        self.sent: list[int] = []

    async def connect(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def send(self, api_key: int, body: Mapping[str, Any], version: int | None = None,
                   *, timeout_ms: int | None = None) -> dict[str, Any]:  # fmt: skip
        self.sent.append(api_key)
        rm = self.leader.replica_manager
        if api_key == ApiKey.FETCH:
            infos = [
                (TopicPartition(t["topic"], p["partition"]),
                 PartitionFetchInfo(p["fetch_offset"], p["partition_max_bytes"], p["current_leader_epoch"],
                                    p.get("log_start_offset", -1)))
                for t in body["topics"] for p in t["partitions"]
            ]  # fmt: skip
            params = FetchParams(body["replica_id"], 0, body["min_bytes"], body["max_bytes"])
            results = await rm.fetch_messages(params, infos)
            return {"error_code": 0, "responses": [{"topic": tp.topic, "partitions": [{
                "partition_index": tp.partition, "error_code": r.error_code, "high_watermark": r.high_watermark,
                "log_start_offset": r.log_start_offset, "records": bytes(r.records or b""),
            }]} for tp, r in results]}  # fmt: skip
        if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            parts = []
            for t in body["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["topic"], p["partition"])
                    try:
                        epoch, end = rm.last_offset_for_leader_epoch(
                            tp, p["current_leader_epoch"], p["leader_epoch"]
                        )
                        parts.append(
                            {
                                "partition": tp.partition,
                                "error_code": 0,
                                "leader_epoch": epoch,
                                "end_offset": end,
                            }
                        )
                    except KafkaError as e:
                        parts.append(
                            {
                                "partition": tp.partition,
                                "error_code": e.code,
                                "leader_epoch": -1,
                                "end_offset": -1,
                            }
                        )
            return {"topics": [{"topic": TP.topic, "partitions": parts}]}
        if api_key == ApiKey.LIST_OFFSETS:
            t = body["topics"][0]
            p = t["partitions"][0]
            found = rm.fetch_offset_for_timestamp(
                TopicPartition(t["name"], p["partition_index"]), p["timestamp"], None, -1, True
            )
            return {"topics": [{"name": t["name"], "partitions": [{
                "partition_index": p["partition_index"], "error_code": 0,
                "offset": -1 if found is None else found.offset, "timestamp": -1}]}]}  # fmt: skip
        raise AssertionError(f"unexpected request {api_key}")


@pytest.fixture
def pair(tmp_path: Path) -> Any:
    leader, follower = Broker(tmp_path / "b0", 0), Broker(tmp_path / "b1", 1)
    try:
        yield leader, follower
    finally:
        leader.stop()
        follower.stop()


def make_leader(b: Broker, epoch: int, isr: list[int]) -> Partition:
    resp = b.replica_manager.become_leader_or_follower(
        leader_and_isr(
            [partition_state("t", 0, b.broker_id, leader_epoch=epoch, isr=isr, replicas=[0, 1])]
        )
    )
    assert resp["partition_errors"][0]["error_code"] == 0
    p = b.replica_manager.get_partition(TP)
    assert p is not None
    return p


def make_follower(b: Broker, leader: int, epoch: int) -> Partition:
    resp = b.replica_manager.become_leader_or_follower(
        leader_and_isr(
            [partition_state("t", 0, leader, leader_epoch=epoch, isr=[0, 1], replicas=[0, 1])]
        )
    )
    assert resp["partition_errors"][0]["error_code"] == 0
    p = b.replica_manager.get_partition(TP)
    assert p is not None
    return p


def append(p: Partition, *values: bytes) -> None:
    p.append_records_to_leader(MemoryRecords(batch(*values)), 1)


def fetcher(
    leader: Broker, follower: Broker, channels: list[LocalChannel] | None = None
) -> ReplicaFetcherThread:
    made = channels if channels is not None else []

    def connect(endpoint: BrokerEndPoint) -> LocalChannel:
        made.append(LocalChannel(leader))
        return made[-1]

    return ReplicaFetcherThread(
        "test-fetcher", 0, follower.broker_id, BrokerEndPoint(leader.broker_id, "localhost", 1),
        ReplicaFetcherConfig(fetch_wait_max_ms=0), follower.replica_manager.get_partition, connect,
    )  # fmt: skip


def segment_bytes(p: Partition) -> bytes:
    assert p.log is not None
    return b"".join(s.log.file.read_bytes()[: s.size] for s in p.log.log_segments())


def test_follower_copies_batches_and_takes_the_high_watermark_and_the_leader_expands_the_isr(
    pair: Any,
) -> None:
    leader, follower = pair
    lp = make_leader(leader, 0, isr=[0])
    append(lp, b"a", b"b")
    append(lp, b"c")
    fp = make_follower(follower, 0, 0)
    f = fetcher(leader, follower)

    async def go() -> None:
        f.add_partitions({TP: (0, 0)})
        await f.do_work()  # truncation (nothing to cut), then a fetch at 0
        await f.do_work()  # a fetch at 3: the leader learns the follower has everything
        await f.do_work()  # the follower learns the new high watermark

    asyncio.run(go())
    assert fp.log is not None and fp.log.log_end_offset == 3
    assert segment_bytes(fp) == segment_bytes(lp)
    assert lp.isr == [0, 1]
    assert lp.high_watermark == 3 and fp.high_watermark == 3
    assert fp.leader_epoch_cache is not None and fp.leader_epoch_cache.entries == [(0, 0)]


def test_diverging_follower_truncates_to_the_leaders_epoch_end(pair: Any) -> None:
    old, new = pair
    # broker 0 led epoch 0 and wrote 3 records, one of which never reached broker 1
    p0 = make_leader(old, 0, isr=[0])
    append(p0, b"a", b"b")
    p1 = make_follower(new, 0, 0)
    f = fetcher(old, new)

    async def replicate() -> None:
        f.add_partitions({TP: (0, 0)})
        await f.do_work()

    asyncio.run(replicate())
    append(p0, b"lost")  # only on broker 0
    # broker 1 becomes leader at epoch 1 and writes; broker 0 follows and must cut "lost"
    p1 = make_leader(new, 1, isr=[1])
    append(p1, b"new")
    p0 = make_follower(old, 1, 1)
    back = fetcher(new, old)

    async def follow() -> None:
        back.add_partitions({TP: (3, 1)})
        await back.do_work()
        await back.do_work()

    asyncio.run(follow())
    assert p0.log is not None and p0.log.log_end_offset == 3
    assert segment_bytes(p0) == segment_bytes(p1)
    assert p0.leader_epoch_cache is not None and [
        e.epoch for e in p0.leader_epoch_cache.entries
    ] == [0, 1]


def test_follower_without_epochs_truncates_to_its_high_watermark(pair: Any) -> None:
    leader, follower = pair
    lp = make_leader(leader, 0, isr=[0])
    append(lp, b"a")
    fp = make_follower(follower, 0, 0)
    assert fp.log is not None and fp.leader_epoch_cache is not None
    # a record written without an epoch entry, beyond the follower's high watermark (0)
    fp.log.append_as_leader(MemoryRecords(batch(b"x", b"y")), 0)
    fp.leader_epoch_cache.clear_and_flush()
    channels: list[LocalChannel] = []
    f = fetcher(leader, follower, channels)

    async def go() -> None:
        f.add_partitions({TP: (2, 0)})
        await f.do_work()

    asyncio.run(go())
    # no OffsetForLeaderEpoch: the high watermark decided; then one fetch
    assert [c.sent for c in channels] == [[ApiKey.FETCH]]
    assert fp.log.log_end_offset == 1 and segment_bytes(fp) == segment_bytes(lp)


def test_follower_behind_the_leaders_log_start_starts_over_there(pair: Any) -> None:
    leader, follower = pair
    lp = make_leader(leader, 0, isr=[0])
    for v in (b"a", b"b", b"c", b"d"):
        append(lp, v)
    assert lp.delete_records_on_leader(3, lambda broker_id: False) == (3, 3)
    fp = make_follower(follower, 0, 0)
    f = fetcher(leader, follower)

    async def go() -> None:
        f.add_partitions({TP: (0, 0)})
        await f.do_work()  # fetch at 0: OFFSET_OUT_OF_RANGE, start at 3
        await f.do_work()

    asyncio.run(go())
    assert fp.log is not None and fp.log.log_start_offset == 3 and fp.log.log_end_offset == 4


def test_isr_shrinks_after_replica_lag_time_and_acks_all_then_fails_min_isr(pair: Any) -> None:
    leader, _ = pair
    lp = make_leader(leader, 0, isr=[0, 1])
    rm = leader.replica_manager
    rm.replica_lag_time_max_ms = lp.replica_lag_time_max_ms = 1000
    append(lp, b"a")
    assert lp.high_watermark == 0  # follower 1 has not fetched
    rm.maybe_shrink_isr()
    assert lp.isr == [0, 1]  # not lagging long enough
    leader.time.advance(1001)
    rm.maybe_shrink_isr()
    assert lp.isr == [0] and lp.high_watermark == 1
    assert TP in rm.isr_change_set


def test_follower_fetches_keep_it_in_sync_while_the_leader_keeps_appending(pair: Any) -> None:
    leader, _ = pair
    lp = make_leader(leader, 0, isr=[0, 1])
    lp.replica_lag_time_max_ms = 1000
    # the follower always fetches from the end the leader had at its previous fetch
    for _ in range(5):
        before = lp.log.log_end_offset if lp.log else 0
        append(lp, b"x")
        leader.time.advance(600)
        lp.update_follower_fetch_state(1, before)
    assert lp.out_of_sync_replicas() == []


def test_fetcher_ids_are_stable_and_match_kafkas_hash() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert fetcher_id_for(TopicPartition("t", 0), 1) == 0
    ids = {fetcher_id_for(TopicPartition("topic", p), 4) for p in range(8)}
    assert ids == {0, 1, 2, 3}


def test_delete_records_waits_until_the_follower_moved_its_log_start(pair: Any) -> None:
    from tests.unit.server.fixtures import update_metadata

    leader, follower = pair
    states = [partition_state("t", 0, 0, isr=[0, 1], replicas=[0, 1])]
    leader.metadata_cache.update_metadata(update_metadata(states, [0, 1]))  # follower 1 is alive
    lp = make_leader(leader, 0, isr=[0, 1])
    append(lp, b"a", b"b", b"c", b"d")
    fp = make_follower(follower, 0, 0)
    f = fetcher(leader, follower)
    rm = leader.replica_manager

    async def go() -> tuple[int, int]:
        f.add_partitions({TP: (0, 0)})
        for _ in range(3):  # truncation, copy, then the follower learns the high watermark 4
            await f.do_work()
        assert lp.high_watermark == 4 and fp.high_watermark == 4
        deleting = asyncio.ensure_future(rm.delete_records(30_000, {TP: 3}))
        await asyncio.sleep(0)
        assert not deleting.done() and rm.delayed_delete_records_purgatory.delayed == 1
        assert lp.log is not None and lp.log.log_start_offset == 3  # the leader's moved at once
        await f.do_work()  # the response carries the leader's log start: the follower takes it
        assert fp.log is not None and fp.log.log_start_offset == 3
        assert not deleting.done()  # the leader does not know it yet
        await f.do_work()  # the next Fetch reports it: the low watermark reaches 3
        return (await asyncio.wait_for(deleting, 5))[TP]

    assert asyncio.run(go()) == (3, 0)
    assert fp.leader_epoch_cache is not None
    assert all(e.start_offset >= 3 for e in fp.leader_epoch_cache.entries)


class ApisChannel(LocalChannel):
    """Answers Fetch through the leader's KafkaApis with encoded requests (fetch sessions)."""

    def __init__(self, leader: Broker, apis: KafkaApis) -> None:
        super().__init__(leader)
        self.apis = apis
        self.fetches: list[dict[str, Any]] = []

    async def send(self, api_key: int, body: Mapping[str, Any], version: int | None = None,
                   *, timeout_ms: int | None = None) -> dict[str, Any]:  # fmt: skip
        if api_key != ApiKey.FETCH:
            return await super().send(api_key, body, version, timeout_ms=timeout_ms)
        self.fetches.append(dict(body))
        parts = await self.apis.handle(make_request(api_key, 11, dict(body)))
        assert parts is not None
        _, decoded = decode_response(api_key, 11, b"".join(bytes(p) for p in parts)[4:])
        return decoded


def test_follower_fetches_in_a_session_and_falls_back_to_full_fetches(pair: Any) -> None:
    leader, follower = pair
    apis = apis_for(leader)
    lp = make_leader(leader, 0, isr=[0])
    append(lp, b"a")
    fp = make_follower(follower, 0, 0)
    channel = ApisChannel(leader, apis)
    f = ReplicaFetcherThread(
        "test-fetcher", 0, follower.broker_id, BrokerEndPoint(leader.broker_id, "localhost", 1),
        ReplicaFetcherConfig(fetch_wait_max_ms=0), follower.replica_manager.get_partition,
        lambda endpoint: channel,
    )  # fmt: skip
    cache = apis.ctx.fetch_manager.cache

    async def rounds(n: int) -> None:
        for _ in range(n):
            await f.do_work()

    f.add_partitions({TP: (0, 0)})
    asyncio.run(rounds(3))
    assert fp.log is not None and fp.log.log_end_offset == 1 and fp.high_watermark == 1
    first, *later = channel.fetches
    assert (first["session_id"], first["session_epoch"]) == (0, 0)
    session = cache.get(f.fetch_session.session_id)
    assert session is not None and session.privileged and session.size == 1
    assert [(b["session_id"], b["session_epoch"]) for b in later] == [
        (session.id, 1), (session.id, 2)
    ]  # fmt: skip
    channel.fetches.clear()
    asyncio.run(rounds(1))  # idle: the fetch names no partition
    assert channel.fetches[0]["topics"] == []
    # the leader lost the session (evicted): FETCH_SESSION_ID_NOT_FOUND, then a full fetch
    cache.remove(session.id)
    append(lp, b"b")
    channel.fetches.clear()
    asyncio.run(rounds(3))
    assert [b["session_epoch"] for b in channel.fetches][:2] == [4, 0]
    assert channel.fetches[1]["session_id"] == 0 and channel.fetches[1]["topics"]
    assert fp.log.log_end_offset == 2 and cache.get(f.fetch_session.session_id) is not None


def test_a_new_high_watermark_completes_a_consumers_delayed_fetch_on_the_follower(
    pair: Any,
) -> None:
    """KIP-392: a consumer reading from this follower waits for its high watermark, which
    arrives in a fetch response without records; the fetcher wakes the waiting fetch."""
    leader, follower = pair
    lp = make_leader(leader, 0, isr=[0, 1])
    append(lp, b"a", b"b")
    make_follower(follower, 0, 0)
    woken: list[TopicPartition] = []

    def on_appended(tp: TopicPartition) -> None:
        woken.append(tp)
        follower.replica_manager.delayed_fetch_purgatory.check_and_complete(tp)

    f = ReplicaFetcherThread(
        "test-fetcher", 0, follower.broker_id, BrokerEndPoint(leader.broker_id, "localhost", 1),
        ReplicaFetcherConfig(fetch_wait_max_ms=0), follower.replica_manager.get_partition,
        lambda endpoint: LocalChannel(leader), on_appended,
    )  # fmt: skip
    consumer = FetchParams(-1, 30_000, 1, 1 << 20, client_metadata=ClientMetadata(
        "rack-1", "c", "127.0.0.1", "User:ANONYMOUS", "PLAINTEXT"))  # fmt: skip

    async def go() -> Any:
        f.add_partitions({TP: (0, 0)})
        await f.do_work()  # truncation, then the records (the HW the leader had: 0)
        waiting = asyncio.ensure_future(
            follower.replica_manager.fetch_messages(
                consumer, [(TP, PartitionFetchInfo(0, 1 << 20))]
            )
        )
        await asyncio.sleep(0)
        assert not waiting.done()  # the follower's high watermark is 0: nothing to read
        await f.do_work()  # the leader's HW moves to 2 with this fetch
        await f.do_work()  # no records, the new HW: the waiting fetch completes
        return await asyncio.wait_for(waiting, 1)

    [(_, r)] = asyncio.run(go())
    assert r.high_watermark == 2
    assert [rec.value for rec in MemoryRecords(r.records).records()] == [b"a", b"b"]
    assert woken
