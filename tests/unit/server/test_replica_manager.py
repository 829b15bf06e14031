"""Tests of ReplicaManager and Partition: LeaderAndIsr, StopReplica, produce, fetch with the
purgatory, offsets, leader epochs and high-watermark checkpoints (MockTime, no sleeping)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kafpy.common.errors import (
    Errors,
    FencedLeaderEpochError,
    InvalidRequiredAcksError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.file_descriptors import TooManyOpenFilesError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.builder import build_batch
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.replica_manager import (
    HIGH_WATERMARK_CHECKPOINT_FILE,
    FetchParams,
    PartitionFetchInfo,
)
from kafpy.server.replica_selector import ClientMetadata, RackAwareReplicaSelector
from kafpy.server.write_txn_markers import TxnMarkerWriter
from kafpy.storage.leader_epoch_file_cache import LEADER_EPOCH_CHECKPOINT_FILE
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile
from tests.unit.server.fixtures import (
    Broker,
    leader_and_isr,
    partition_state,
    txn_batch,
    txn_marker,
    update_metadata,
)

T = TypeVar("T")
TP = TopicPartition("t", 0)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def batch(*values: bytes, timestamp: int = 1000) -> memoryview:
    return memoryview(bytearray(build_batch(list(values), timestamp=timestamp)))


def produce(b: Broker, tp: TopicPartition, data: memoryview, acks: int = 1) -> dict[str, Any]:
    return run(b.replica_manager.append_records(1000, acks, {tp: data}))[tp]


def consumer_params(**kw: Any) -> FetchParams:
    return FetchParams(
        **{"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, **kw}
    )


# -- LeaderAndIsr / StopReplica ------------------------------------------------------------


def test_leader_and_isr_creates_logs_and_records_epochs(broker: Broker) -> None:
    broker.lead("t", 2, leader_epoch=3)
    for p in (0, 1):
        tp = TopicPartition("t", p)
        log = broker.log_manager.get_log(tp)
        assert log is not None
        assert (log.dir / LEADER_EPOCH_CHECKPOINT_FILE).read_text() == "0\n1\n3 0\n"
        partition = broker.replica_manager.get_partition(tp)
        assert partition is not None and partition.is_leader and partition.leader_epoch == 3
    # the two logs went to different dirs (least loaded first)
    dirs = {broker.log_manager.get_log(TopicPartition("t", p)).dir.parent.name for p in (0, 1)}  # type: ignore[union-attr]
    assert dirs == {"d1", "d2"}


def test_a_big_leader_and_isr_lets_other_work_run_between_partitions(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a slice of no time at all: the loop gets back control after every partition
    monkeypatch.setattr("kafpy.server.replica_manager._STATE_CHANGE_SLICE_S", 0.0)
    states = [partition_state("big", p, broker.broker_id) for p in range(20)]
    seen_during: list[int] = []

    async def scenario() -> dict[str, Any]:
        rm = broker.replica_manager

        def leaders() -> int:
            partitions = (rm.get_partition(TopicPartition("big", p)) for p in range(20))
            return sum(1 for p in partitions if p is not None and p.is_leader)

        apply = asyncio.ensure_future(
            rm.become_leader_or_follower_in_slices(leader_and_isr(states))
        )
        await asyncio.sleep(0)  # it starts
        while not apply.done():
            # other work runs meanwhile, finds the partitions made so far, and a StopReplica
            # would wait for the lock the request holds
            assert rm.state_change_lock.locked()
            seen_during.append(leaders())
            await asyncio.sleep(0)
        return await apply

    response = run(scenario())
    assert all(e["error_code"] == 0 for e in response["partition_errors"])
    assert len(seen_during) > 10  # it gave the loop back many times
    assert seen_during == sorted(seen_during) and 0 < seen_during[-1] <= 20


def test_stale_controller_epoch_is_refused(broker: Broker) -> None:
    broker.lead("t", controller_epoch=5)
    resp = broker.replica_manager.become_leader_or_follower(
        leader_and_isr([partition_state("t", 0, 0, leader_epoch=9)], controller_epoch=4)
    )
    assert resp["error_code"] == 11
    assert resp["partition_errors"] == [{"topic_name": "t", "partition_index": 0, "error_code": 11}]
    assert broker.replica_manager.get_partition(TP).leader_epoch == 0  # type: ignore[union-attr]


def test_same_or_older_leader_epoch_and_foreign_partition_get_errors(broker: Broker) -> None:
    broker.lead("t")
    resp = broker.replica_manager.become_leader_or_follower(leader_and_isr([
        partition_state("t", 0, 0, leader_epoch=0),
        partition_state("u", 0, 1, replicas=[1, 2]),
    ]))  # fmt: skip
    errors = {(e["topic_name"], e["error_code"]) for e in resp["partition_errors"]}
    assert errors == {("t", 11), ("u", 3)}
    assert broker.log_manager.get_log(TopicPartition("u", 0)) is None


def test_new_leader_epoch_starts_at_log_end(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, TP, batch(b"a", b"b"))
    resp = broker.replica_manager.become_leader_or_follower(
        leader_and_isr([partition_state("t", 0, 0, leader_epoch=1)])
    )
    assert resp["partition_errors"][0]["error_code"] == 0
    p = broker.replica_manager.get_partition(TP)
    assert p is not None and p.leader_epoch_cache is not None
    assert [tuple(e) for e in p.leader_epoch_cache.entries] == [(0, 0), (1, 2)]
    assert broker.replica_manager.last_offset_for_leader_epoch(TP, -1, 0) == (0, 2)
    assert broker.replica_manager.last_offset_for_leader_epoch(TP, -1, 1) == (1, 2)


def test_follower_refuses_produce(broker: Broker) -> None:
    resp = broker.replica_manager.become_leader_or_follower(
        leader_and_isr([partition_state("t", 0, 1, replicas=[1, 0])])
    )
    assert resp["partition_errors"][0]["error_code"] == 0
    assert broker.log_manager.get_log(TP) is not None
    r = produce(broker, TP, batch(b"a"))
    assert r["error_code"] == 6 and r["base_offset"] == -1


def test_stop_replica_delete_renames_the_log_for_deletion(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, TP, batch(b"a"))
    log_dir = broker.log_manager.get_log(TP).dir  # type: ignore[union-attr]
    body = {"controller_id": 0, "controller_epoch": 1, "delete_partitions": False,
            "topics": [{"name": "t", "partition_indexes": [0]}]}  # fmt: skip
    resp = broker.replica_manager.stop_replicas(body)
    assert resp == {"error_code": 0, "partition_errors": [
        {"topic_name": "t", "partition_index": 0, "error_code": 0}]}  # fmt: skip
    assert broker.replica_manager.get_partition(TP) is not None  # delete=false keeps serving state
    resp = broker.replica_manager.stop_replicas({**body, "delete_partitions": True})
    assert resp["partition_errors"][0]["error_code"] == 0
    assert broker.replica_manager.get_partition(TP) is None
    assert broker.log_manager.get_log(TP) is None
    assert not log_dir.exists()
    assert [
        p.name.endswith("-delete") for p in log_dir.parent.iterdir() if p.name.startswith("t-0")
    ] == [True]
    with pytest.raises(NotLeaderOrFollowerError):  # the metadata cache still lists it
        broker.replica_manager.get_partition_or_error(TP)
    broker.metadata_cache.update_metadata(update_metadata([partition_state("t", 0, -2)]))
    with pytest.raises(UnknownTopicOrPartitionError):
        broker.replica_manager.get_partition_or_error(TP)


def test_stop_replica_with_old_controller_epoch(broker: Broker) -> None:
    broker.lead("t", controller_epoch=3)
    resp = broker.replica_manager.stop_replicas({
        "controller_id": 0, "controller_epoch": 2, "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "t", "partition_index": 0}],
    })  # fmt: skip
    assert resp["error_code"] == 11
    assert broker.log_manager.get_log(TP) is not None


# -- produce ---------------------------------------------------------------------------------


def test_produce_assigns_offsets_and_moves_the_high_watermark(broker: Broker) -> None:
    broker.lead("t")
    r1 = produce(broker, TP, batch(b"a", b"b"))
    r2 = produce(broker, TP, batch(b"c"), acks=-1)  # ISR = leader only: completes at once
    assert (r1["error_code"], r1["base_offset"], r1["log_start_offset"]) == (0, 0, 0)
    assert (r2["error_code"], r2["base_offset"]) == (0, 2)
    assert broker.replica_manager.get_partition(TP).high_watermark == 3  # type: ignore[union-attr]


def test_produce_errors_per_partition(broker: Broker) -> None:
    broker.lead("t")
    bad = batch(b"x")
    bad[20] ^= 0xFF  # in the CRC
    out = run(broker.replica_manager.append_records(1000, 1, {
        TP: bad, TopicPartition("nope", 0): batch(b"y"), TopicPartition("t", 1): batch(b"z"),
    }))  # fmt: skip
    assert out[TP]["error_code"] == 2  # CORRUPT_MESSAGE
    assert out[TopicPartition("nope", 0)]["error_code"] == 3
    assert out[TopicPartition("t", 1)]["error_code"] == 3
    assert "CRC" in out[TP]["error_message"] or "crc" in out[TP]["error_message"].lower()


def test_invalid_required_acks(broker: Broker) -> None:
    with pytest.raises(InvalidRequiredAcksError, match="acks must be 0, 1 or -1"):
        run(broker.replica_manager.append_records(1000, 2, {TP: batch(b"a")}))


def test_message_too_large(tmp_path: Path) -> None:
    from kafpy.storage.log_config import LogConfig

    b = Broker(tmp_path, config=LogConfig(max_message_bytes=200))
    try:
        b.lead("t")
        assert produce(b, TP, batch(b"x" * 500))["error_code"] == 10
    finally:
        b.stop()


def test_acks_all_below_min_isr(broker: Broker) -> None:
    from kafpy.storage.log_config import LogConfig

    broker.log_manager.topic_configs["m"] = LogConfig(min_insync_replicas=2)
    broker.lead("m")
    r = produce(broker, TopicPartition("m", 0), batch(b"a"), acks=-1)
    assert r["error_code"] == 19  # NOT_ENOUGH_REPLICAS
    assert produce(broker, TopicPartition("m", 0), batch(b"a"), acks=1)["error_code"] == 0


def test_acks_all_waits_for_the_follower_then_times_out_or_completes(broker: Broker) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1]))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    rm = broker.replica_manager

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        first = asyncio.ensure_future(rm.append_records(1000, -1, {TP: batch(b"a")}))
        await asyncio.sleep(0)
        assert not first.done() and rm.delayed_produce_purgatory.delayed == 1
        # the follower fetches from offset 1: it has the record, the HW moves, the produce completes
        await rm.fetch_messages(
            FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20),
            [(TP, PartitionFetchInfo(1, 1 << 20))],
        )
        done = await first
        second = asyncio.ensure_future(rm.append_records(1000, -1, {TP: batch(b"b")}))
        await asyncio.sleep(0)
        broker.timer.fire_all()
        return done[TP], (await second)[TP]

    done, timed_out = run(scenario())
    assert (done["error_code"], done["base_offset"]) == (0, 0)
    assert (timed_out["error_code"], timed_out["base_offset"]) == (7, 1)


# -- fetch -----------------------------------------------------------------------------------


def fetch(
    b: Broker,
    offset: int,
    params: FetchParams | None = None,
    max_bytes: int = 1 << 20,
    current_leader_epoch: int = -1,
) -> Any:
    params = params or consumer_params()
    return run(b.replica_manager.fetch_messages(
        params, [(TP, PartitionFetchInfo(offset, max_bytes, current_leader_epoch))]
    ))[0][1]  # fmt: skip


def test_fetch_returns_stored_bytes_and_offsets(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, TP, batch(b"a", b"b"))
    produce(broker, TP, batch(b"c"))
    r = fetch(broker, 0)
    assert (r.error_code, r.high_watermark, r.last_stable_offset, r.log_start_offset) == (
        0,
        3,
        3,
        0,
    )
    assert [rec.value for rec in MemoryRecords(r.records).records()] == [b"a", b"b", b"c"]
    r = fetch(broker, 2)
    assert [rec.offset for rec in MemoryRecords(r.records).records()] == [2]
    assert fetch(broker, 3).records.nbytes == 0


def test_fetch_out_of_range_and_fenced_epochs(broker: Broker) -> None:
    broker.lead("t", leader_epoch=2)
    produce(broker, TP, batch(b"a"))
    assert fetch(broker, 5).error_code == 1
    assert fetch(broker, 0, current_leader_epoch=1).error_code == FencedLeaderEpochError.code
    assert fetch(broker, 0, current_leader_epoch=3).error_code == UnknownLeaderEpochError.code
    assert fetch(broker, 0, current_leader_epoch=2).error_code == 0


def test_fetch_always_returns_the_first_batch_and_respects_max_bytes(broker: Broker) -> None:
    broker.lead("t", 2)
    tp1 = TopicPartition("t", 1)
    big = batch(b"x" * 300)
    produce(broker, TP, big)
    produce(broker, tp1, batch(b"y" * 300))
    out = run(broker.replica_manager.fetch_messages(
        consumer_params(max_bytes=100),
        [(TP, PartitionFetchInfo(0, 50)), (tp1, PartitionFetchInfo(0, 50))],
    ))  # fmt: skip
    assert len(out[0][1].records) == len(big)  # larger than both limits, still whole
    assert len(out[1][1].records) == 0  # max_bytes used up: nothing more


def test_long_poll_is_woken_by_an_append(broker: Broker) -> None:
    broker.lead("t")
    rm = broker.replica_manager

    async def scenario() -> Any:
        f = asyncio.ensure_future(rm.fetch_messages(
            consumer_params(max_wait_ms=500, min_bytes=1), [(TP, PartitionFetchInfo(0, 1 << 20))]
        ))  # fmt: skip
        await asyncio.sleep(0)
        assert not f.done() and rm.delayed_fetch_purgatory.delayed == 1
        await rm.append_records(1000, 1, {TP: batch(b"hello")})
        return (await f)[0][1]

    r = run(scenario())
    assert [rec.value for rec in MemoryRecords(r.records).records()] == [b"hello"]
    assert broker.timer.fire_all() == 0


def test_long_poll_waits_for_min_bytes_then_expires(broker: Broker) -> None:
    broker.lead("t")
    rm = broker.replica_manager

    async def scenario() -> Any:
        f = asyncio.ensure_future(rm.fetch_messages(
            consumer_params(max_wait_ms=500, min_bytes=10_000), [(TP, PartitionFetchInfo(0, 1 << 20))]
        ))  # fmt: skip
        await asyncio.sleep(0)
        await rm.append_records(1000, 1, {TP: batch(b"small")})
        await asyncio.sleep(0)
        assert not f.done()
        assert broker.timer.fire_all() == 1
        return (await f)[0][1]

    r = run(scenario())
    assert [rec.value for rec in MemoryRecords(r.records).records()] == [b"small"]


def test_long_poll_completes_when_leadership_moves(broker: Broker) -> None:
    broker.lead("t")
    rm = broker.replica_manager

    async def scenario() -> Any:
        f = asyncio.ensure_future(rm.fetch_messages(
            consumer_params(max_wait_ms=500), [(TP, PartitionFetchInfo(0, 1 << 20))]
        ))  # fmt: skip
        await asyncio.sleep(0)
        rm.stop_replicas({"controller_id": 0, "controller_epoch": 1, "delete_partitions": True,
                          "topics": [{"name": "t", "partition_indexes": [0]}]})  # fmt: skip
        return (await f)[0][1]

    assert run(scenario()).error_code == 6  # still in the metadata cache: not hosted here


def test_follower_fetch_reads_to_log_end(broker: Broker) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    produce(broker, TP, batch(b"a"))
    assert fetch(broker, 0).records.nbytes == 0  # HW is 0: consumers see nothing yet
    follower = FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    r = fetch(broker, 0, follower)
    assert len(r.records) > 0 and r.high_watermark == 0
    fetch(broker, 1, follower)
    assert fetch(broker, 0).high_watermark == 1


def _client(rack: str) -> ClientMetadata:
    return ClientMetadata(rack, "c", "127.0.0.1", "User:ANONYMOUS", "PLAINTEXT")


def test_a_consumer_in_a_followers_rack_is_sent_to_it_without_records(broker: Broker) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1], racks={0: "a", 1: "b"}))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    produce(broker, TP, batch(b"a", b"b"))
    _follower_fetch(broker, 2, 0)
    rack_b = consumer_params(client_metadata=_client("b"), max_wait_ms=500)
    r = fetch(broker, 0, rack_b)
    assert r.preferred_read_replica == -1  # no replica.selector.class: read from the leader
    assert len(r.records) > 0
    broker.replica_manager.replica_selector = RackAwareReplicaSelector()
    r = fetch(broker, 0, rack_b)  # answered at once, though max_wait_ms > 0
    assert (r.error_code, r.preferred_read_replica, r.high_watermark) == (0, 1, 2)
    assert len(r.records) == 0
    r = fetch(broker, 0, consumer_params(client_metadata=_client("a")))
    assert r.preferred_read_replica == -1 and len(r.records) > 0
    r = fetch(broker, 0)  # Fetch before v11: no client metadata, no redirection
    assert r.preferred_read_replica == -1 and len(r.records) > 0


def test_a_follower_serves_fetch_v11_consumers_up_to_its_high_watermark(broker: Broker) -> None:
    # (the leader, unknown to the metadata cache, gets no fetcher)
    states = [partition_state("t", 0, 1, replicas=[1, 0])]
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    partition = broker.replica_manager.get_partition(TP)
    assert partition is not None and partition.log is not None
    partition.log.append_as_follower(MemoryRecords(batch(b"a", b"b")))
    assert fetch(broker, 0).error_code == Errors.NOT_LEADER_OR_FOLLOWER  # Fetch < v11
    v11 = consumer_params(client_metadata=_client("b"))
    r = fetch(broker, 0, v11)
    assert (r.error_code, r.high_watermark, len(r.records)) == (0, 0, 0)
    partition.update_follower_high_watermark(2)
    r = fetch(broker, 0, v11)
    assert [rec.value for rec in MemoryRecords(r.records).records()] == [b"a", b"b"]


# -- offsets ---------------------------------------------------------------------------------


def test_list_offsets(broker: Broker) -> None:
    broker.lead("t", leader_epoch=4)
    produce(broker, TP, batch(b"a", timestamp=1000))
    produce(broker, TP, batch(b"b", timestamp=2000))
    rm = broker.replica_manager
    earliest = rm.fetch_offset_for_timestamp(TP, -2, 0, -1, True)
    latest = rm.fetch_offset_for_timestamp(TP, -1, 0, -1, True)
    by_time = rm.fetch_offset_for_timestamp(TP, 1500, 0, -1, True)
    assert earliest is not None and (earliest.offset, earliest.leader_epoch) == (0, 4)
    assert latest is not None and (latest.offset, latest.timestamp, latest.leader_epoch) == (
        2,
        -1,
        4,
    )
    assert by_time is not None and (by_time.offset, by_time.timestamp) == (1, 2000)
    assert rm.fetch_offset_for_timestamp(TP, 3000, 0, -1, True) is None
    with pytest.raises(NotLeaderOrFollowerError):
        rm.become_leader_or_follower(
            leader_and_isr([partition_state("t", 0, 1, leader_epoch=5, replicas=[1, 0])])
        )
        rm.fetch_offset_for_timestamp(TP, -1, 0, -1, True)


def test_delete_records_moves_log_start_offset(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, TP, batch(b"a", b"b", b"c"))
    rm = broker.replica_manager
    assert run(rm.delete_records(1000, {TP: 2})) == {TP: (2, 0)}  # no follower: at once
    assert run(rm.delete_records(1000, {TP: 9})) == {
        TP: (-1, 1)
    }  # above the HW: OFFSET_OUT_OF_RANGE
    assert run(rm.delete_records(1000, {TopicPartition("nope", 0): 1})) == {
        TopicPartition("nope", 0): (-1, 3)
    }
    assert fetch(broker, 0).error_code == 1
    assert rm.fetch_offset_for_timestamp(TP, -2, 0, -1, True).offset == 2  # type: ignore[union-attr]
    assert run(rm.delete_records(1000, {TP: -1})) == {TP: (3, 0)}  # -1: up to the high watermark


def test_delete_records_is_refused_on_compacted_topics(broker: Broker) -> None:
    from kafpy.storage.log_config import LogConfig

    broker.log_manager.topic_configs["t"] = LogConfig(cleanup_policy=["compact"])
    broker.lead("t")
    produce(broker, TP, batch(b"a", b"b"))
    assert run(broker.replica_manager.delete_records(1000, {TP: 1})) == {
        TP: (-1, 44)
    }  # POLICY_VIOLATION


def _lead_with_follower(broker: Broker, follower_alive: bool = True) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.metadata_cache.update_metadata(
        update_metadata(states, [0, 1] if follower_alive else [0])
    )
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))


def _follower_fetch(broker: Broker, offset: int, log_start_offset: int) -> None:
    params = FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    run(
        broker.replica_manager.fetch_messages(
            params, [(TP, PartitionFetchInfo(offset, 1 << 20, -1, log_start_offset))]
        )
    )


def test_low_watermark_is_the_smallest_log_start_over_live_replicas(broker: Broker) -> None:
    _lead_with_follower(broker)
    produce(broker, TP, batch(b"a", b"b", b"c"))
    p = broker.replica_manager.get_partition(TP)
    assert p is not None
    alive = broker.replica_manager.broker_alive
    assert p.low_watermark_if_leader(alive) == -1  # the follower has not fetched: unknown
    _follower_fetch(broker, 3, 0)
    assert p.low_watermark_if_leader(alive) == 0
    assert p.delete_records_on_leader(2, alive) == (2, 0)
    _follower_fetch(broker, 3, 2)
    assert p.low_watermark_if_leader(alive) == 2
    assert p.low_watermark_if_leader(lambda broker_id: broker_id != 1) == 2
    _follower_fetch(broker, 3, 1)  # (a follower never goes back; the rule takes what it reports)
    assert (
        p.low_watermark_if_leader(lambda broker_id: broker_id != 1) == 2
    )  # dead followers do not count
    # a new leadership forgets what the followers reported
    p.make_follower(partition_state("t", 0, 1, leader_epoch=1, replicas=[0, 1]))
    p.make_leader(partition_state("t", 0, 0, leader_epoch=2, replicas=[0, 1]))
    assert p.low_watermark_if_leader(alive) == -1


def test_delete_records_waits_for_the_follower_then_completes_or_times_out(broker: Broker) -> None:
    _lead_with_follower(broker)
    produce(broker, TP, batch(b"a", b"b", b"c", b"d"))
    _follower_fetch(broker, 4, 0)  # the follower has everything: HW 4
    rm = broker.replica_manager

    async def scenario() -> tuple[
        dict[TopicPartition, tuple[int, int]], dict[TopicPartition, tuple[int, int]]
    ]:
        first = asyncio.ensure_future(rm.delete_records(30_000, {TP: 2}))
        await asyncio.sleep(0)
        assert not first.done() and rm.delayed_delete_records_purgatory.delayed == 1
        await rm.fetch_messages(FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20),
                                [(TP, PartitionFetchInfo(4, 1 << 20, -1, 1))])  # fmt: skip
        assert not first.done()  # 1 < 2
        await rm.fetch_messages(FetchParams(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20),
                                [(TP, PartitionFetchInfo(4, 1 << 20, -1, 2))])  # fmt: skip
        done = await asyncio.wait_for(first, 5)
        second = asyncio.ensure_future(rm.delete_records(30_000, {TP: 4}))
        await asyncio.sleep(0)
        assert not second.done()
        broker.timer.fire_all()  # the request's timeout
        return done, await asyncio.wait_for(second, 5)

    done, timed_out = run(scenario())
    assert done == {TP: (2, 0)}
    assert timed_out == {TP: (2, 7)}  # REQUEST_TIMED_OUT with the low watermark it had


def test_delete_records_ignores_dead_followers(broker: Broker) -> None:
    _lead_with_follower(broker, follower_alive=False)
    produce(broker, TP, batch(b"a", b"b"))
    p = broker.replica_manager.get_partition(TP)
    assert p is not None and p.isr == [0, 1]
    broker.time.advance(broker.replica_manager.replica_lag_time_max_ms + 1)
    broker.replica_manager.maybe_shrink_isr()  # the HW can move past the dead follower
    assert run(broker.replica_manager.delete_records(1000, {TP: 2})) == {TP: (2, 0)}


def test_waiting_delete_records_answers_not_leader_when_leadership_moves(broker: Broker) -> None:
    _lead_with_follower(broker)
    produce(broker, TP, batch(b"a", b"b"))
    _follower_fetch(broker, 2, 0)
    rm = broker.replica_manager

    async def scenario() -> dict[TopicPartition, tuple[int, int]]:
        waiting = asyncio.ensure_future(rm.delete_records(30_000, {TP: 1}))
        await asyncio.sleep(0)
        rm.become_leader_or_follower(
            leader_and_isr([partition_state("t", 0, 1, leader_epoch=1, replicas=[0, 1])])
        )
        return await asyncio.wait_for(waiting, 5)

    assert run(scenario()) == {TP: (-1, 6)}


# -- checkpoints and restart -----------------------------------------------------------------


def test_high_watermark_checkpoint_and_restart(tmp_path: Path) -> None:
    b = Broker(tmp_path)
    b.lead("t", leader_epoch=0)
    produce(b, TP, batch(b"a", b"b"))
    log_dir = b.log_manager.get_log(TP).dir.parent  # type: ignore[union-attr]
    b.time.advance(5000)  # highwatermark-checkpoint runs
    assert OffsetCheckpointFile(log_dir / HIGH_WATERMARK_CHECKPOINT_FILE).read() == {TP: 2}
    b.stop()
    b.start()
    b.lead("t", leader_epoch=1)
    p = b.replica_manager.get_partition(TP)
    assert p is not None and p.high_watermark == 2
    assert [tuple(e) for e in p.leader_epoch_cache.entries] == [(0, 0), (1, 2)]  # type: ignore[union-attr]
    assert produce(b, TP, batch(b"c"))["base_offset"] == 2
    b.stop()


def test_acks_all_answers_not_enough_replicas_after_append_when_the_isr_shrinks(
    broker: Broker,
) -> None:
    from kafpy.storage.log_config import LogConfig

    broker.log_manager.topic_configs["t"] = LogConfig(min_insync_replicas=2)
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1]))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    rm = broker.replica_manager

    async def scenario() -> dict[str, Any]:
        waiting = asyncio.ensure_future(rm.append_records(60_000, -1, {TP: batch(b"a")}))
        await asyncio.sleep(0)
        assert not waiting.done()  # appended with 2 in the ISR, waiting for the follower
        broker.time.advance(rm.replica_lag_time_max_ms + 1)
        rm.maybe_shrink_isr()  # the follower never fetched: out of the ISR, the HW moves
        return (await asyncio.wait_for(waiting, 5))[TP]

    r = run(scenario())
    assert rm.get_partition(TP).isr == [0]
    assert (r["error_code"], r["base_offset"]) == (20, 0)  # NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_produce_errors_carry_the_log_start_offset(broker: Broker) -> None:
    # kafka-python and the Java producer use it to recover from UNKNOWN_PRODUCER_ID after
    # retention removed a producer's batches
    broker.lead("t")
    assert produce(broker, TP, batch(b"a", b"b"))["error_code"] == 0
    broker.replica_manager.get_partition(TP).log.maybe_increment_log_start_offset(1)
    bad = bytearray(batch(b"c"))
    bad[-1] ^= 0xFF  # CRC mismatch
    r = produce(broker, TP, memoryview(bad))
    assert r["error_code"] == 2 and r["log_start_offset"] == 1


# -- ISR change propagation ------------------------------------------------------------------


def test_an_isr_shrink_is_recorded_for_propagation(broker: Broker) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1]))
    rm = broker.replica_manager
    rm.become_leader_or_follower(leader_and_isr(states))
    broker.time.advance(rm.replica_lag_time_max_ms + 1)
    rm.maybe_shrink_isr()
    assert rm.isr_change_set == {TP}
    assert rm.last_isr_change_ms == broker.time.milliseconds()


def test_an_io_error_takes_the_log_dir_offline_and_its_partitions_answer_storage_error(
    broker: Broker,
) -> None:
    broker.lead("t", 2)
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert produce(broker, t0, batch(b"a"))["error_code"] == 0
    log0 = broker.log_manager.get_log(t0)
    assert log0 is not None
    failed_dir = log0.dir.parent
    # the disk under t-0's dir stops taking writes: its active segment's fd turns read-only
    segment_file = log0.active_segment.log
    read_only = os.open(segment_file.file, os.O_RDONLY)
    os.dup2(read_only, segment_file.fd)
    os.close(read_only)

    r = produce(broker, t0, batch(b"b"))
    assert r["error_code"] == 56 and "Error while appending records to t-0" in r["error_message"]
    rm = broker.replica_manager
    assert rm.log_dir_failure_channel.has_offline_log_dir(failed_dir)
    run(rm.handle_log_dir_failure(failed_dir))  # what the LogDirFailureHandler task does

    assert broker.log_manager.live_log_dirs == [broker.log_manager.get_log(t1).dir.parent]  # type: ignore[union-attr]
    assert broker.log_manager.get_log(t0) is None
    assert produce(broker, t0, batch(b"c"))["error_code"] == 56
    fetched = run(rm.fetch_messages(consumer_params(), [(t0, PartitionFetchInfo(0, 1 << 20))]))
    assert fetched[0][1].error_code == 56
    resp = rm.become_leader_or_follower(
        leader_and_isr([partition_state("t", 0, 0, leader_epoch=1)])
    )
    assert resp["partition_errors"][0]["error_code"] == 56
    # the partition in the healthy dir is served as before
    assert produce(broker, t1, batch(b"d"))["error_code"] == 0


def test_out_of_descriptors_a_new_partition_is_refused_and_no_log_dir_goes_offline(
    broker: Broker, no_descriptor_left: Any
) -> None:
    broker.lead("t", 1)
    assert produce(broker, TP, batch(b"a"))["error_code"] == 0
    rm = broker.replica_manager
    new = [partition_state("u", 0, 0)]
    broker.metadata_cache.update_metadata(update_metadata(new, [0]))
    with no_descriptor_left() as limit:
        resp = rm.become_leader_or_follower(leader_and_isr(new))
        assert resp["partition_errors"][0]["error_code"] == Errors.KAFKA_STORAGE_ERROR
        assert "RLIMIT_NOFILE" in (
            broker.log_manager.refused_log_reason(TopicPartition("u", 0)) or ""
        )
        rm.checkpoint_high_watermarks()  # its file cannot be opened either: not a disk failure
        log = broker.log_manager.get_log(TP)
        assert log is not None
        with pytest.raises(TooManyOpenFilesError, match=f"RLIMIT_NOFILE limit of {limit.limit}"):
            # t-0's file was closed by the cache and cannot be opened again (a produce
            # answers this as KAFKA_STORAGE_ERROR; the event loop of `produce` needs
            # descriptors of its own)
            log.append_as_leader(MemoryRecords(batch(b"b")), 0)
        limit.room(4)
        assert produce(broker, TP, batch(b"c"))["error_code"] == 0
        fetched = run(rm.fetch_messages(consumer_params(), [(TP, PartitionFetchInfo(0, 1 << 20))]))
        data = MemoryRecords(fetched[0][1].records or b"")
        assert [r.value for b in data.batches_allow_partial() for r in b.records()] == [b"a", b"c"]
    assert broker.log_manager.offline_log_dirs == []
    assert not any(
        rm.log_dir_failure_channel.has_offline_log_dir(d) for d in broker.log_manager.live_log_dirs
    )
    retried = rm.become_leader_or_follower(
        leader_and_isr([partition_state("u", 0, 0, leader_epoch=1)])
    )
    assert retried["partition_errors"][0]["error_code"] == Errors.NONE
    assert broker.log_manager.refused_log_reason(TopicPartition("u", 0)) is None


def test_leader_and_isr_with_illegal_names_is_refused_per_partition(broker: Broker) -> None:
    resp = broker.replica_manager.become_leader_or_follower(leader_and_isr([
        partition_state("", -5, 0), partition_state("t", -1, 0), partition_state("a/b", 0, 0),
        partition_state("t", 0, 0),
    ]))  # fmt: skip
    errors = {
        (e["topic_name"], e["partition_index"]): e["error_code"] for e in resp["partition_errors"]
    }
    assert errors == {("", -5): 17, ("t", -1): 17, ("a/b", 0): 17, ("t", 0): 0}
    assert [log.topic_partition for log in broker.log_manager.all_logs()] == [TP]
    assert sorted(
        p.name for d in ("d1", "d2") for p in (broker.tmp_path / d).iterdir() if p.is_dir()
    ) == ["t-0"]


# -- transactions: the last stable offset --------------------------------------------------

PID = 7000


def end_txn(b: Broker, pid: int, commit: bool) -> None:
    writer = TxnMarkerWriter(b.replica_manager, None, b.time)
    answer = run(writer.write_txn_markers({"markers": [txn_marker(pid, commit, {"t": [0]})]}))
    assert answer["markers"][0]["topics"][0]["partitions"][0]["error_code"] == 0


def values(r: Any) -> list[bytes | None]:
    batches = MemoryRecords(r.records).batches()
    return [rec.value for b in batches if not b.is_control for rec in b.records()]


def test_read_committed_fetch_stops_at_the_lso_and_lists_aborted_transactions(
    broker: Broker,
) -> None:
    broker.lead("t")
    produce(broker, TP, batch(b"plain", timestamp=broker.time.milliseconds()))  # 0
    produce(broker, TP, txn_batch(b"a1", b"a2", pid=PID))  # 1-2
    produce(broker, TP, txn_batch(b"c1", pid=PID + 1))  # 3
    committed = consumer_params(isolation_level=1)
    r = fetch(broker, 0, committed)
    assert (r.high_watermark, r.last_stable_offset, r.aborted_transactions) == (4, 1, [])
    assert values(r) == [b"plain"]
    # read_uncommitted reads to the high watermark, and is told the LSO too
    r = fetch(broker, 0)
    assert (r.last_stable_offset, r.aborted_transactions, len(values(r))) == (1, None, 4)
    end_txn(broker, PID, False)  # abort marker at 4
    r = fetch(broker, 0, committed)
    assert r.last_stable_offset == 3  # PID+1's transaction is still open
    assert r.aborted_transactions == [{"producer_id": PID, "first_offset": 1}]
    end_txn(broker, PID + 1, True)  # commit marker at 5
    r = fetch(broker, 0, committed)
    assert (r.high_watermark, r.last_stable_offset) == (6, 6)
    assert values(r) == [b"plain", b"a1", b"a2", b"c1"]  # the client drops the aborted ones
    assert r.aborted_transactions == [{"producer_id": PID, "first_offset": 1}]
    # a fetch past the aborted range lists nothing
    assert fetch(broker, 5, committed).aborted_transactions == []


def test_list_offsets_latest_is_the_lso_at_read_committed(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, TP, batch(b"a", timestamp=broker.time.milliseconds()))
    produce(broker, TP, txn_batch(b"b", pid=PID))
    rm = broker.replica_manager

    def latest(isolation: int) -> int:
        found = rm.fetch_offset_for_timestamp(TP, -1, isolation, -1, True)
        assert found is not None
        return found.offset

    assert (latest(0), latest(1)) == (2, 1)
    end_txn(broker, PID, True)
    assert (latest(0), latest(1)) == (3, 3)


def test_delayed_read_committed_fetch_completes_when_the_lso_moves(broker: Broker) -> None:
    broker.lead("t")
    produce(broker, TP, txn_batch(b"a", pid=PID))
    rm = broker.replica_manager

    async def scenario() -> Any:
        f = asyncio.ensure_future(rm.fetch_messages(
            consumer_params(max_wait_ms=500, min_bytes=1, isolation_level=1),
            [(TP, PartitionFetchInfo(0, 1 << 20))],
        ))  # fmt: skip
        await asyncio.sleep(0)
        assert not f.done()
        # more transactional data does not move the LSO: the fetch keeps waiting
        await rm.append_records(1000, 1, {TP: txn_batch(b"b", pid=PID, seq=1)})
        assert not f.done()
        writer = TxnMarkerWriter(rm, None, broker.time)
        await writer.write_txn_markers({"markers": [txn_marker(PID, True, {"t": [0]})]})
        return (await f)[0][1]

    r = run(scenario())
    assert (r.last_stable_offset, values(r)) == (3, [b"a", b"b"])
    assert broker.timer.fire_all() == 0


# -- ISR changes through AlterIsr (KIP-497) ---------------------------------------------------


def test_an_isr_shrink_goes_to_the_controller_as_alter_isr(tmp_path: Path) -> None:
    from kafpy.common.logger import PrefixAdapter
    from kafpy.server.alter_isr_manager import AlterIsrManager
    from tests.unit.controller.fixtures import ControllerCluster, state_json
    from tests.unit.controller.fixtures import run as run_cluster
    from tests.unit.server.test_alter_isr_manager import WireChannel

    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
        await cluster.settle()
        ctl = cluster.controller()
        broker = Broker(tmp_path)
        try:
            rm = broker.replica_manager
            channel = WireChannel(ctl)
            rm.alter_isr_manager = AlterIsrManager(
                0,
                lambda: ctl.context.live_broker_epoch(0),
                channel,
                PrefixAdapter(rm.log.logger, ""),
            )
            states = [partition_state("t", 0, 0, replicas=[0, 1], controller_epoch=ctl.epoch)]
            broker.metadata_cache.update_metadata(update_metadata(states, [0, 1]))
            rm.become_leader_or_follower(leader_and_isr(states, controller_epoch=ctl.epoch))
            partition = rm.partitions[TP]
            broker.time.advance(rm.replica_lag_time_max_ms + 1)
            rm.maybe_shrink_isr()
            assert partition.pending_isr == [0] and partition.isr == [0, 1]
            for _ in range(500):
                if partition.pending_isr is None:
                    break
                await asyncio.sleep(0.002)
            # the controller wrote ZooKeeper; the leader took the answer
            assert (partition.isr, partition.zk_version) == ([0], 1)
            assert (await state_json(cluster, "t", 0))["isr"] == [0]  # type: ignore[index]
            assert rm.isr_shrinks == 1
            assert rm.isr_change_set == set()  # no /isr_change_notification on this path
            assert len(channel.requests) == 1
            await rm.alter_isr_manager.shutdown()
        finally:
            broker.stop()

    run_cluster(body)


def test_a_partition_change_made_on_another_thread_reaches_the_listeners_on_the_loop(
    broker: Broker,
) -> None:
    broker.lead("t")
    rm = broker.replica_manager
    heard: list[tuple[TopicPartition, int]] = []
    rm.add_partition_change_listener(lambda tp: heard.append((tp, threading.get_ident())))

    async def scenario() -> None:
        rm.startup()  # on the loop
        try:
            log = broker.log_manager.get_log(TP)
            assert log is not None
            await rm.append_records(1000, 1, {TP: batch(b"a", b"b")})  # on the loop: heard at once
            assert heard and all(h == (TP, threading.get_ident()) for h in heard)
            heard.clear()
            # retention moves the log start offset on a scheduler thread
            mover = threading.Thread(target=log.maybe_increment_log_start_offset, args=(1,))
            mover.start()
            mover.join()
            assert heard == []
            await asyncio.sleep(0)
            assert heard == [(TP, threading.get_ident())]
        finally:
            await rm.shutdown_fetchers()

    run(scenario())
