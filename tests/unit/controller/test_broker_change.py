"""BrokerChange driven by the controller over the embedded store: a failed broker's
partitions elect new leaders or go offline, and come back with it."""

from __future__ import annotations

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_context import PartitionAndReplica
from kafpy.controller.partition_state_machine import PartitionState
from kafpy.controller.replica_state_machine import ReplicaState
from kafpy.protocol.api_keys import ApiKey
from tests.unit.controller.fixtures import (
    ControllerCluster,
    run,
    state_json,
)

LAI = ApiKey.LEADER_AND_ISR


def test_broker_failure_elects_a_new_leader_from_the_isr() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0], 1: [2, 0, 1]}, {})
        await cluster.settle()
        cluster.sent.clear()
        await cluster.stop_broker(1)
        await cluster.settle()
        assert (await state_json(cluster, "t", 0)) == {
            "controller_epoch": 1,
            "leader": 2,
            "version": 1,
            "leader_epoch": 1,
            "isr": [2, 0],
        }
        # a follower died: it left the ISR, the leader stayed
        state1 = await state_json(cluster, "t", 1)
        assert state1 is not None and state1["leader"] == 2 and state1["isr"] == [2, 0]
        lai = cluster.requests(LAI)
        assert {r.broker_id for r in lai} == {0, 2}
        new_leader_state = [
            s for r in lai for t, s in r.partition_states() if (t, s["partition_index"]) == ("t", 0)
        ]
        assert new_leader_state and all(
            s["leader"] == 2 and s["leader_epoch"] == 1 for s in new_leader_state
        )
        assert all(r.broker_id != 1 for r in cluster.sent)
        ctx = cluster.controller().context
        assert ctx.replica_states[PartitionAndReplica("t", 0, 1)] is ReplicaState.OFFLINE_REPLICA
        assert ctx.partition_states[TopicPartition("t", 0)] is PartitionState.ONLINE_PARTITION
        # the broker returns: its replicas get LeaderAndIsr again
        cluster.sent.clear()
        await cluster.start_broker(1)
        await cluster.settle()
        assert sorted(r.partitions() for r in cluster.requests(LAI, 1)) == [[("t", 0), ("t", 1)]]
        assert ctx.replica_states[PartitionAndReplica("t", 0, 1)] is ReplicaState.ONLINE_REPLICA

    run(body)


def test_a_partition_without_live_isr_goes_offline_until_its_broker_returns() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        await cluster.admin.create_topic_with_config("t", {0: [1]}, {})
        await cluster.settle()
        await cluster.stop_broker(1)
        await cluster.settle()
        ctx = cluster.controller().context
        assert ctx.partition_states[TopicPartition("t", 0)] is PartitionState.OFFLINE_PARTITION
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == -1 and state["isr"] == [1]
        await cluster.start_broker(1)
        await cluster.settle()
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 1 and state["leader_epoch"] == 2
        assert ctx.partition_states[TopicPartition("t", 0)] is PartitionState.ONLINE_PARTITION

    run(body)


@pytest.mark.parametrize("unclean", [False, True])
def test_unclean_leader_election_follows_the_topic_config(unclean: bool) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        config = {"unclean.leader.election.enable": "true"} if unclean else {}
        await cluster.admin.create_topic_with_config("t", {0: [1, 2]}, config)
        await cluster.settle()
        await cluster.stop_broker(2)  # ISR shrinks to [1]
        await cluster.settle()
        await cluster.start_broker(2)  # back, but not in sync (ISR stays [1])
        await cluster.settle()
        await cluster.stop_broker(1)  # the only in-sync replica dies
        await cluster.settle()
        state = await state_json(cluster, "t", 0)
        assert state is not None
        if unclean:
            assert state["leader"] == 2 and state["isr"] == [2]
        else:
            assert state["leader"] == -1 and state["isr"] == [1]

    run(body)
