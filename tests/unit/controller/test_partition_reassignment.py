"""PartitionReassignment (Kafka's onPartitionReassignment) over the embedded store: the
topic znode's adding/removing replicas, the replica state transitions, the leader move,
/admin/reassign_partitions, cancellation, and resumption after failover."""

from __future__ import annotations

import json

from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_context import PartitionAndReplica
from kafpy.controller.replica_state_machine import ReplicaState
from kafpy.metadata.zk_data import LeaderIsrAndControllerEpoch, ReplicaAssignment
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from tests.unit.controller.fixtures import ControllerCluster, run

LAI, SR = ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA
TP = TopicPartition("t", 0)


async def topic_json(cluster: ControllerCluster) -> dict[str, object]:
    data = await cluster.admin.store.get_data_or_none("/brokers/topics/t")
    assert data is not None
    loaded: dict[str, object] = json.loads(data)
    return loaded


async def catch_up(cluster: ControllerCluster, isr: list[int]) -> None:
    """The leader expands the ISR in the state znode, as a broker does."""
    state = await cluster.admin.get_topic_partition_state(TP)
    assert state is not None
    lai = state.leader_and_isr
    # a leader keeps the leader epoch when it changes the ISR
    new = LeaderIsrAndControllerEpoch(
        type(lai)(lai.leader, lai.leader_epoch, tuple(isr), lai.zk_version), state.controller_epoch
    )
    await cluster.admin.set_topic_partition_state(TP, new)
    await cluster.settle()


async def setup(cluster: ControllerCluster) -> None:
    await cluster.start(0, 1, 2)
    await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
    await cluster.settle()
    cluster.sent.clear()


def test_reassignment_through_the_admin_node_moves_the_replicas() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await setup(cluster)
        await cluster.admin.create_partition_reassignment({TP: [1, 2]})
        await cluster.settle()
        # A1: RS = ORS + TRS with AR and RR in ZooKeeper, the leader epoch bumped
        # (the topic keeps the id the controller gave it)
        topic_id = uuid_to_string(cluster.controller().context.topic_ids["t"])
        assert await topic_json(cluster) == {
            "version": 3,
            "partitions": {"0": [1, 2, 0]},
            "adding_replicas": {"0": [2]},
            "removing_replicas": {"0": [0]},
            "topic_id": topic_id,
        }
        ctx = cluster.controller().context
        assert ctx.partitions_being_reassigned == {TP}
        assert ctx.partition_full_replica_assignment(TP) == ReplicaAssignment((1, 2, 0), (2,), (0,))
        state = await cluster.admin.get_topic_partition_state(TP)
        assert state is not None and state.leader_and_isr.leader_epoch == 1
        # A2: broker 2 started as a new replica; every replica of RS heard of it
        assert ctx.replica_states[PartitionAndReplica("t", 0, 2)] is ReplicaState.NEW_REPLICA
        assert {r.broker_id for r in cluster.requests(LAI)} == {0, 1, 2}
        assert not cluster.requests(SR)
        assert await cluster.admin.reassign_partitions_in_progress()

        # broker 2 caught up: the leader (0) leaves, 0 is stopped and deleted
        cluster.sent.clear()
        await catch_up(cluster, [0, 1, 2])
        assert await topic_json(cluster) == {
            "version": 3,
            "partitions": {"0": [1, 2]},
            "adding_replicas": {},
            "removing_replicas": {},
            "topic_id": topic_id,
        }
        state = await cluster.admin.get_topic_partition_state(TP)
        assert state is not None
        assert state.leader_and_isr.leader == 1 and list(state.leader_and_isr.isr) == [1, 2]
        stops = cluster.requests(SR, 0)
        assert stops and any(r.delete_partitions() for r in stops)
        assert PartitionAndReplica("t", 0, 0) not in ctx.replica_states
        assert ctx.replica_states[PartitionAndReplica("t", 0, 2)] is ReplicaState.ONLINE_REPLICA
        assert ctx.partitions_being_reassigned == set()
        assert ctx.partition_full_replica_assignment(TP) == ReplicaAssignment((1, 2))
        assert not await cluster.admin.reassign_partitions_in_progress()
        assert "t" not in cluster.controller().context.topics_ineligible_for_deletion

    run(body)


def test_api_reassignment_validation_cancel_and_list() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await setup(cluster)
        controller = cluster.controller()
        error, results = await controller.alter_partition_reassignments(
            {
                TP: [2, 2],
                TopicPartition("t", 1): [0, 1],
                TopicPartition("nope", 0): [0],
                TopicPartition("t", 0): [0, 5],
            }
        )
        assert error == Errors.NONE
        assert results[TopicPartition("t", 0)][0] == Errors.INVALID_REPLICA_ASSIGNMENT
        assert "not alive" in (results[TopicPartition("t", 0)][1] or "")
        assert results[TopicPartition("t", 1)][0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert results[TopicPartition("nope", 0)][0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
        # a cancel with nothing in progress
        _, results = await controller.alter_partition_reassignments({TP: None})
        assert results == {TP: (Errors.NO_REASSIGNMENT_IN_PROGRESS, None)}

        _, results = await controller.alter_partition_reassignments({TP: [2, 1]})
        await cluster.settle()
        assert results == {TP: (Errors.NONE, None)}
        assert await controller.list_partition_reassignments(None) == (
            Errors.NONE,
            {TP: ReplicaAssignment((2, 1, 0), (2,), (0,))},
        )
        # cancel: back to ORS, the adding replica 2 stopped and deleted
        cluster.sent.clear()
        _, results = await controller.alter_partition_reassignments({TP: None})
        await cluster.settle()
        assert results == {TP: (Errors.NONE, None)}
        # ORS in RS order (RS - AR), as Kafka's originReplicas: [2, 1, 0] - [2]
        assert (await topic_json(cluster))["partitions"] == {"0": [1, 0]}
        assert cluster.requests(SR, 2)
        assert await controller.list_partition_reassignments(None) == (Errors.NONE, {})
        assert controller.context.partition_full_replica_assignment(TP) == ReplicaAssignment((1, 0))
        # a broker that is not the controller says so
        other = next(h.controller for h in cluster.brokers.values() if not h.controller.is_active)
        assert (await other.alter_partition_reassignments({TP: [1]}))[0] == Errors.NOT_CONTROLLER
        assert (await other.list_partition_reassignments(None))[0] == Errors.NOT_CONTROLLER

    run(body)


def test_a_new_controller_resumes_and_completes_the_reassignment() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2, 3)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2]}, {})
        await cluster.settle()
        assert cluster.controller().broker_id == 0
        _, results = await cluster.controller().alter_partition_reassignments({TP: [2, 3]})
        await cluster.settle()
        assert results == {TP: (Errors.NONE, None)}
        await cluster.stop_broker(0)  # the controller dies mid-reassignment
        await cluster.settle()
        new = cluster.controller()
        assert new.broker_id != 0
        assert new.context.partitions_being_reassigned == {TP}
        assert new.context.partition_full_replica_assignment(TP) == ReplicaAssignment(
            (2, 3, 1), (3,), (1,)
        )
        await catch_up(cluster, [1, 2, 3])
        assert (await topic_json(cluster))["partitions"] == {"0": [2, 3]}
        assert new.context.partitions_being_reassigned == set()

    run(body)


def test_deletion_waits_for_the_reassignment() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await setup(cluster)
        await cluster.controller().alter_partition_reassignments({TP: [1, 2]})
        await cluster.settle()
        await cluster.admin.create_delete_topic_path("t")
        await cluster.settle()
        ctx = cluster.controller().context
        assert "t" in ctx.topics_ineligible_for_deletion
        assert await cluster.admin.topic_exists("t")
        await catch_up(cluster, [0, 1, 2])
        await cluster.settle()
        assert not await cluster.admin.topic_exists("t")

    run(body)
