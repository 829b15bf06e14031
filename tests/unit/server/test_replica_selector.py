"""Tests of the replica selector (KIP-392): RackAwareReplicaSelector's choice, the
`replica.selector.class` names kafpy accepts, and the leader's preferred read replica
built from a real Partition's follower state."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.builder import build_batch
from kafpy.server.replica_manager import FetchParams, PartitionFetchInfo
from kafpy.server.replica_selector import (
    RACK_AWARE_REPLICA_SELECTOR,
    ClientMetadata,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    find_preferred_read_replica,
    replica_selector,
)
from tests.unit.server.fixtures import Broker, leader_and_isr, partition_state, update_metadata

TP = TopicPartition("t", 0)
SELECTOR = RackAwareReplicaSelector()


def client(rack: str) -> ClientMetadata:
    return ClientMetadata(rack, "consumer-1", "127.0.0.1", "User:ANONYMOUS", "PLAINTEXT")


def view(broker_id: int, rack: str | None, leo: int = 10, since_ms: int = 0) -> ReplicaView:
    return ReplicaView(broker_id, rack, leo, since_ms)


LEADER = view(0, "a")


def select(rack: str, *followers: ReplicaView, leader: ReplicaView = LEADER) -> int | None:
    chosen = SELECTOR.select(client(rack), PartitionView((leader, *followers), leader))
    return None if chosen is None else chosen.broker_id


def test_the_replica_in_the_clients_rack_is_chosen() -> None:
    assert select("b", view(1, "b"), view(2, "c")) == 1
    assert select("c", view(1, "b"), view(2, "c")) == 2


def test_the_leader_is_chosen_when_in_the_clients_rack_too() -> None:
    assert select("a", view(1, "a", leo=11), view(2, "b")) == 0


def test_no_rack_or_no_replica_in_it_means_the_leader() -> None:
    assert select("", view(1, "b")) == 0
    assert select("z", view(1, "b"), view(2, "c")) == 0
    assert select("b", view(1, None)) == 0


def test_among_replicas_in_the_rack_the_furthest_along_then_most_recently_caught_up() -> None:
    assert select("b", view(1, "b", leo=8), view(2, "b", leo=9)) == 2
    assert select("b", view(1, "b", since_ms=50), view(2, "b", since_ms=500)) == 1
    assert select("b", view(1, "b", since_ms=500), view(2, "b", since_ms=50)) == 2


def test_replica_selector_class_names() -> None:
    assert replica_selector(None) is None
    assert replica_selector("") is None
    assert isinstance(replica_selector(RACK_AWARE_REPLICA_SELECTOR), RackAwareReplicaSelector)
    with pytest.raises(
        InvalidConfigurationError, match=r"com\.acme\.NearestSelector.*replica\.selector\.class"
    ):
        replica_selector("com.acme.NearestSelector")


# -- the leader's preferred read replica from its follower state -------------------------------


def _lead_with_followers(broker: Broker, alive: list[int]) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1, 2])]
    racks = {0: "a", 1: "b", 2: "c"}
    broker.metadata_cache.update_metadata(update_metadata(states, alive, racks=racks))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    data = memoryview(bytearray(build_batch([b"x", b"y", b"z"], timestamp=1000)))
    asyncio.run(broker.replica_manager.append_records(1000, 1, {TP: data}))  # offsets 0-2


def _follower_fetches(broker: Broker, replica_id: int, offset: int) -> None:
    params = FetchParams(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    info = PartitionFetchInfo(offset, 1 << 20, -1, 0)
    asyncio.run(broker.replica_manager.fetch_messages(params, [(TP, info)]))


def preferred(broker: Broker, rack: str, offset: int, listener: str = "PLAINTEXT") -> int | None:
    partition = broker.replica_manager.get_partition(TP)
    assert partition is not None
    racks = {b: r for b, _, r in broker.metadata_cache.alive_endpoints(listener)}
    return find_preferred_read_replica(
        SELECTOR, partition, client(rack), racks, offset, broker.time.milliseconds()
    )


def test_a_follower_is_preferred_only_once_its_log_holds_the_fetch_offset(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    try:
        _lead_with_followers(broker, alive=[0, 1, 2])
        assert preferred(broker, "b", 0) is None  # follower 1 has not fetched yet
        _follower_fetches(broker, 1, 2)
        assert preferred(broker, "b", 2) == 1
        assert preferred(broker, "b", 3) is None  # beyond follower 1's log end
        assert preferred(broker, "c", 0) is None  # follower 2 unknown: the leader
        assert preferred(broker, "a", 0) is None  # the leader's own rack
    finally:
        broker.stop()


def test_a_dead_follower_is_never_preferred(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    try:
        _lead_with_followers(broker, alive=[0, 2])
        _follower_fetches(broker, 1, 3)
        _follower_fetches(broker, 2, 3)
        assert preferred(broker, "b", 1) is None
        assert preferred(broker, "c", 1) == 2
        assert preferred(broker, "c", 1, listener="SSL") is None  # no such listener
    finally:
        broker.stop()
