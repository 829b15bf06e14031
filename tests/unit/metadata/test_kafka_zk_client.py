"""KafkaZkClient on the embedded store: typed reads and writes land at Kafka's paths."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from kafpy.common.kafka_uuid import random_uuid
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.errors import BadVersionError, NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import EventType, WatchedEvent
from kafpy.metadata.zk_data import (
    Broker,
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    ZkVersion,
)


def run(body: Callable[[KafkaZkClient], Awaitable[None]]) -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        try:
            await body(KafkaZkClient(store))
        finally:
            await store.close()

    asyncio.run(main())


def _info(broker_id: int, rack: str | None = None) -> BrokerInfo:
    endpoint = EndPoint("localhost", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT")
    return BrokerInfo(Broker(broker_id, (endpoint,), rack), 4, -1, 1600000000000)


def test_register_and_list_brokers() -> None:
    async def body(zk: KafkaZkClient) -> None:
        assert await zk.get_all_brokers_in_cluster() == []
        await zk.register_broker(_info(2, "r2"))
        await zk.register_broker(_info(0))
        assert await zk.get_all_broker_ids() == [0, 2]
        brokers = await zk.get_all_brokers_in_cluster()
        assert [(b.id, b.rack) for b in brokers] == [(0, None), (2, "r2")]
        data, stat = await zk.store.get("/brokers/ids/2")
        assert data == _info(2, "r2").to_json_bytes()
        assert stat.ephemeral_owner == zk.store.session_id

    run(body)


def test_the_broker_epoch_is_the_czxid_of_the_registration() -> None:
    async def body(zk: KafkaZkClient) -> None:
        epoch = await zk.register_broker(_info(1))
        _, stat = await zk.store.get("/brokers/ids/1")
        assert epoch == stat.czxid and stat.version == 1  # created, then given its data
        # registered already by this session: the same registration, the same epoch
        assert await zk.register_broker(_info(1)) == epoch
        # registered by another live session: refused, as Kafka refuses a second broker
        # with the same id
        assert isinstance(zk.store, EmbeddedStore)
        other = zk.store.new_session()
        await other.start()
        try:
            with pytest.raises(NodeExistsError):
                await KafkaZkClient(other).register_broker(_info(1))
        finally:
            await other.close()

    run(body)


def test_topic_ids_are_written_kept_and_given() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await zk.make_sure_persistent_paths_exist()
        topic_id = random_uuid()
        await zk.create_topic_assignment("a", {0: [0]}, topic_id)
        await zk.create_topic_assignment("b", {0: [0], 1: [0]})  # as a tool writes it
        assert await zk.get_topic_ids_for_topics(["a", "b", "missing"]) == {"a": topic_id}
        # an update that carries the id keeps it
        await zk.set_topic_assignment("a", {0: [0], 1: [0]}, topic_id=topic_id)
        full, read_id = await zk.get_full_topic_assignment_and_id("a")
        assert (full, read_id) == (
            {0: ReplicaAssignment((0,)), 1: ReplicaAssignment((0,))},
            topic_id,
        )
        given = await zk.set_topic_ids({"b": await zk.get_full_topic_assignment("b")})
        assert set(given) == {"b"} and given["b"] not in (topic_id, None)
        assert await zk.get_topic_ids_for_topics(["a", "b"]) == {"a": topic_id, "b": given["b"]}
        assert await zk.get_partitions_for_topics(["b"]) == {"b": [0, 1]}
        assert await zk.get_full_topic_assignment_and_id("missing") == ({}, None)

    run(body)


def test_topic_assignment_roundtrip_with_versions() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await zk.make_sure_persistent_paths_exist()
        assert await zk.get_all_topics_in_cluster() == []
        await zk.create_topic_assignment("t", {0: [1, 2, 0]})
        assert (await zk.store.get("/brokers/topics/t"))[0] == (
            b'{"removing_replicas":{},"partitions":{"0":[1,2,0]},"adding_replicas":{},"version":3}'
        )
        assert await zk.topic_exists("t")
        with pytest.raises(NodeExistsError):
            await zk.create_topic_assignment("t", {0: [1]})
        assignment, version = await zk.get_topic_assignment_and_version("t")
        assert (assignment, version) == ({0: [1, 2, 0]}, 0)
        await zk.set_topic_assignment(
            "t", {0: [1, 2, 0], 1: [2, 0, 1]}, expected_version=0, topic_id=None
        )
        with pytest.raises(BadVersionError):
            await zk.set_topic_assignment("t", {0: [1]}, expected_version=0, topic_id=None)
        assert await zk.get_replica_assignment_for_topics(["t", "missing"]) == {
            TopicPartition("t", 0): [1, 2, 0],
            TopicPartition("t", 1): [2, 0, 1],
        }
        assert await zk.get_partitions_for_topics(["t"]) == {"t": [0, 1]}
        assert await zk.get_topic_assignment_and_version("missing") == ({}, ZkVersion.UNKNOWN)

    run(body)


def test_create_topic_writes_config_then_assignment() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await zk.create_topic_with_config("t", {0: [0]}, {"retention.ms": "1000"})
        assert (await zk.store.get("/config/topics/t"))[0] == (
            b'{"version":1,"config":{"retention.ms":"1000"}}'
        )
        assert await zk.get_entity_configs("topics", "t") == {"retention.ms": "1000"}
        assert await zk.get_all_entities_with_config("topics") == ["t"]
        assert await zk.get_entity_configs("topics", "other") == {}

    run(body)


def test_partition_states() -> None:
    async def body(zk: KafkaZkClient) -> None:
        tp = TopicPartition("t", 0)
        await zk.create_topic_assignment("t", {0: [1, 2, 0]})
        assert await zk.get_topic_partition_state(tp) is None
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 0)), 1)
        await zk.create_topic_partition_state(tp, state)
        assert (await zk.store.get("/brokers/topics/t/partitions/0/state"))[0] == (
            b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,0]}'
        )
        read = await zk.get_topic_partition_state(tp)
        assert read == state
        shrunk = LeaderIsrAndControllerEpoch(read.leader_and_isr.new_leader_and_isr(1, [1]), 1)
        await zk.set_topic_partition_state(tp, shrunk, expected_version=0)
        states = await zk.get_topic_partition_states([tp, TopicPartition("t", 1)])
        assert list(states) == [tp]
        assert states[tp].leader_and_isr == LeaderAndIsr(1, 1, (1,), 1)

    run(body)


def test_deletion_markers_and_topic_removal() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await zk.create_topic_with_config("t", {0: [0]}, {})
        await zk.create_topic_partition_state(
            TopicPartition("t", 0), LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), 1)
        )
        assert not await zk.is_topic_marked_for_deletion("t")
        await zk.create_delete_topic_path("t")
        assert await zk.is_topic_marked_for_deletion("t")
        assert await zk.get_topic_deletions() == ["t"]
        with pytest.raises(NodeExistsError):
            await zk.create_delete_topic_path("t")
        await zk.delete_topic_nodes("t")
        assert await zk.get_all_topics_in_cluster() == []
        assert await zk.get_topic_deletions() == []
        assert await zk.store.exists("/config/topics/t") is None

    run(body)


def test_config_change_notifications_are_sequential() -> None:
    async def body(zk: KafkaZkClient) -> None:
        first = await zk.create_config_change_notification("topics/t")
        second = await zk.create_config_change_notification("topics/u")
        assert first == "/config/changes/config_change_0000000000"
        assert second == "/config/changes/config_change_0000000001"
        assert (await zk.store.get(second))[0] == b'{"version":2,"entity_path":"topics/u"}'

    run(body)


def test_controller_and_epoch_and_cluster_id() -> None:
    async def body(zk: KafkaZkClient) -> None:
        assert await zk.get_controller_id() is None
        assert await zk.get_controller_epoch() is None
        fired: list[WatchedEvent] = []
        assert await zk.get_controller_id(watch=fired.append) is None
        await zk.register_controller(3, 1600000000000)
        for _ in range(10):
            if fired:
                break
            await asyncio.sleep(0)
        assert [e.type for e in fired] == [EventType.CREATED]
        assert await zk.get_controller_id() == 3
        await zk.create_controller_epoch(1)
        epoch, stat = await zk.get_controller_epoch() or (None, None)
        assert epoch == 1 and stat is not None
        await zk.set_controller_epoch(2, stat.version)
        assert (await zk.get_controller_epoch() or (0,))[0] == 2
        assert await zk.create_or_get_cluster_id("abc") == "abc"
        assert await zk.create_or_get_cluster_id("xyz") == "abc"
        assert await zk.get_cluster_id() == "abc"

    run(body)
