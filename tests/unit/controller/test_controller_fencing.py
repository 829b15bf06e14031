"""Controller fencing: the election increments /controller_epoch at the version read, writes
are checked against the epoch's znode version, and a controller that lost /controller
resigns."""

from __future__ import annotations

import asyncio

import pytest

from kafpy.common.errors import ControllerMovedError
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ControllerZNode, LeaderAndIsr, LeaderIsrAndControllerEpoch
from tests.unit.controller.fixtures import ControllerCluster


def test_election_and_fenced_writes() -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        other = store.new_session()
        await other.start()
        try:
            zk, zk2 = KafkaZkClient(store), KafkaZkClient(other)
            epoch, version = await zk.register_controller_and_increment_controller_epoch(0, 1)
            assert (epoch, await store.get_data_or_none("/controller_epoch")) == (1, b"1")
            with pytest.raises(ControllerMovedError):
                await zk2.register_controller_and_increment_controller_epoch(1, 2)
            tp = TopicPartition("t", 0)
            await zk.create_topic_assignment("t", {0: [0]})
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,), 0), epoch)
            assert await zk.create_topic_partition_states({tp: state}, version) == {tp: None}
            # another controller is elected meanwhile: our fenced writes fail
            await other.delete("/controller")
            new_epoch, _ = await zk2.register_controller_and_increment_controller_epoch(1, 3)
            assert new_epoch == 2
            result = await zk.create_topic_partition_states(
                {TopicPartition("t", 1): state}, version
            )
            assert isinstance(result[TopicPartition("t", 1)], ControllerMovedError)
            with pytest.raises(ControllerMovedError):
                await zk.update_leader_and_isr({tp: LeaderAndIsr(0, 1, (0,), 0)}, epoch, version)
            assert (await zk.get_topic_partition_state(tp)).leader_and_isr.leader_epoch == 0  # type: ignore[union-attr]
        finally:
            await other.close()
            await store.close()

    asyncio.run(main())


def test_a_controller_that_lost_the_controller_node_resigns() -> None:
    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1)
            await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
            await cluster.settle()
            c0, c1 = cluster.brokers[0].controller, cluster.brokers[1].controller
            assert c0.is_active and c0.context.all_topics == {"t"}
            # another broker (9) took /controller before the watches fired
            await cluster.admin.store.delete("/controller")
            await cluster.admin.store.create("/controller", ControllerZNode.encode(9, 0))
            await cluster.settle()
            assert not c0.is_active and c0.active_controller_id == 9
            assert c1.active_controller_id == 9 and not c1.is_active
            assert c0.context.all_topics == set() and not c0.channel_manager.broker_state_info
            # when 9's node goes, the brokers elect again
            await cluster.admin.store.delete("/controller")
            await cluster.settle()
            active = cluster.active()
            assert len(active) == 1 and active[0].epoch == 2
            assert active[0].context.all_topics == {"t"}

    asyncio.run(main())
