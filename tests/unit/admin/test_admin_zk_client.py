"""AdminZkClient on the embedded store: the seed's worked example end to end, configs."""

from __future__ import annotations

import random

import pytest

from kafpy.admin.admin_zk_client import (
    ZNODE_MAX_BYTES,
    AdminZkClient,
    check_assignment_fits_a_znode,
)
from kafpy.admin.replica_assignment import BrokerMetadata, RackAwareMode
from kafpy.common.errors import (
    AdminOperationError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    TopicAlreadyMarkedForDeletionError,
    UnknownTopicOrPartitionError,
)
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from tests.unit.admin.fixtures import register_brokers, run_with_zk


class Draws(random.Random):
    """A random source returning fixed draws (the seed's start index 1 and shift 2)."""

    def __init__(self, values: list[int]) -> None:
        super().__init__()
        self.values = values

    def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        return self.values.pop(0)


def test_seed_worked_example_end_to_end() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2])
        admin = AdminZkClient(zk, rng=Draws([1, 2]))
        assignment = await admin.create_topic("topic_a", 3, 3)
        assert assignment == {0: [1, 2, 0], 1: [2, 0, 1], 2: [0, 1, 2]}
        assert (await zk.store.get("/brokers/topics/topic_a"))[0] == (
            b'{"removing_replicas":{},"partitions":{"2":[0,1,2],"1":[2,0,1],"0":[1,2,0]},'
            b'"adding_replicas":{},"version":3}'
        )
        assert (await zk.store.get("/config/topics/topic_a"))[0] == b'{"version":1,"config":{}}'
        brokers = await admin.get_broker_metadatas()
        grown = await admin.add_partitions("topic_a", assignment, brokers, 4)
        assert grown[3] == [1, 2, 0]
        assert (await zk.get_topic_assignment_and_version("topic_a"))[0] == grown

    run_with_zk(body)


def test_broker_metadatas_by_rack_mode() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [2, 0, 1], racks={0: "a", 2: "b"})
        admin = AdminZkClient(zk)
        with pytest.raises(AdminOperationError, match="--disable-rack-aware"):
            await admin.get_broker_metadatas()
        assert await admin.get_broker_metadatas(RackAwareMode.DISABLED) == [
            BrokerMetadata(0),
            BrokerMetadata(1),
            BrokerMetadata(2),
        ]
        assert await admin.get_broker_metadatas(RackAwareMode.SAFE) == [
            BrokerMetadata(0),
            BrokerMetadata(1),
            BrokerMetadata(2),
        ]
        assert await admin.get_broker_metadatas(RackAwareMode.DISABLED, [2]) == [BrokerMetadata(2)]

    run_with_zk(body)


def test_validate_assignment_on_create() -> None:
    async def body(zk: KafkaZkClient) -> None:
        admin = AdminZkClient(zk)
        with pytest.raises(InvalidReplicaAssignmentError, match="same number of replicas"):
            await admin.create_or_update_topic_partition_assignment_path_in_zk(
                "t", {0: [0], 1: [0, 1]}
            )
        with pytest.raises(InvalidReplicaAssignmentError, match="Duplicate replica assignment"):
            await admin.create_or_update_topic_partition_assignment_path_in_zk("t", {0: [0, 0]})

    run_with_zk(body)


def test_delete_topic_marker() -> None:
    async def body(zk: KafkaZkClient) -> None:
        admin = AdminZkClient(zk)
        with pytest.raises(UnknownTopicOrPartitionError, match="does not exist"):
            await admin.delete_topic("t")
        await admin.create_or_update_topic_partition_assignment_path_in_zk("t", {0: [0]})
        await admin.delete_topic("t")
        assert await zk.get_topic_deletions() == ["t"]
        with pytest.raises(
            TopicAlreadyMarkedForDeletionError, match="Topic t is already marked for deletion."
        ):
            await admin.delete_topic("t")

    run_with_zk(body)


def test_change_topic_config_writes_config_and_notification() -> None:
    async def body(zk: KafkaZkClient) -> None:
        admin = AdminZkClient(zk)
        with pytest.raises(AdminOperationError, match='Topic "t" does not exist.'):
            await admin.change_topic_config("t", {"retention.ms": "1"})
        await admin.create_or_update_topic_partition_assignment_path_in_zk("t", {0: [0]})
        with pytest.raises(InvalidConfigurationError, match="segment.bytes"):
            await admin.change_topic_config("t", {"segment.bytes": "1"})
        assert await zk.store.get_children("/config/changes") == []
        await admin.change_topic_config("t", {"retention.ms": "1"})
        assert await admin.fetch_entity_config("topics", "t") == {"retention.ms": "1"}
        assert await zk.store.get_children("/config/changes") == ["config_change_0000000000"]
        data, _ = await zk.store.get("/config/changes/config_change_0000000000")
        assert data == b'{"version":2,"entity_path":"topics/t"}'
        with pytest.raises(AdminOperationError, match="not supported"):
            await admin.change_configs("brokers", "0", {})

    run_with_zk(body)


def test_change_broker_config_writes_kafkas_nodes_and_notifications() -> None:
    async def body(zk: KafkaZkClient) -> None:
        admin = AdminZkClient(zk)
        await admin.change_broker_config(0, {"log.retention.ms": "1000"})
        await admin.change_broker_config(None, {"message.max.bytes": "2000"})
        assert (await zk.store.get("/config/brokers/0"))[0] == (
            b'{"version":1,"config":{"log.retention.ms":"1000"}}'
        )
        assert (await zk.store.get("/config/brokers/<default>"))[0] == (
            b'{"version":1,"config":{"message.max.bytes":"2000"}}'
        )
        changes = sorted(await zk.store.get_children("/config/changes"))
        assert [(await zk.store.get(f"/config/changes/{c}"))[0] for c in changes] == [
            b'{"version":2,"entity_path":"brokers/0"}',
            b'{"version":2,"entity_path":"brokers/<default>"}',
        ]

    run_with_zk(body)


def test_an_assignment_too_big_for_a_znode_is_refused_before_it_is_computed() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2])
        admin = AdminZkClient(zk)
        # (computing 2^31 - 1 partitions' assignment would take minutes and gigabytes)
        with pytest.raises(InvalidPartitionsError, match="would not fit in a ZooKeeper node"):
            await admin.create_topic("huge", 2**31 - 1, 1)
        assert not await zk.topic_exists("huge")
        await admin.create_topic("t", 1, 3)
        brokers = await admin.get_broker_metadatas()
        with pytest.raises(InvalidPartitionsError, match="would not fit in a ZooKeeper node"):
            await admin.add_partitions("t", {0: [0, 1, 2]}, brokers, 2**31 - 1)
        # the largest that can fit is allowed through to the assignment
        check_assignment_fits_a_znode("t", ZNODE_MAX_BYTES // 12, 3)

    run_with_zk(body)
