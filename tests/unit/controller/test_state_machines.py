"""Replica and partition state machines: Kafka's transition tables; invalid transitions are
logged to the state-change logger and not applied."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_context import PartitionAndReplica
from kafpy.controller.partition_leader_election import (
    OfflinePartitionLeaderElectionStrategy,
)
from kafpy.controller.partition_state_machine import VALID_PREVIOUS_STATES as PARTITION_TABLE
from kafpy.controller.partition_state_machine import PartitionState
from kafpy.controller.replica_state_machine import VALID_PREVIOUS_STATES as REPLICA_TABLE
from kafpy.controller.replica_state_machine import ReplicaState
from kafpy.controller.state_change_logger import STATE_CHANGE_LOGGER_NAME
from kafpy.controller.state_machine import MAX_ZK_UPDATE_ATTEMPTS
from kafpy.metadata.zk_data import LeaderIsrAndControllerEpoch
from tests.unit.controller.fixtures import ControllerCluster

R, P = ReplicaState, PartitionState


def test_replica_transition_table_is_kafkas() -> None:
    table = {
        target.value: sorted(s.value for s in sources) for target, sources in REPLICA_TABLE.items()
    }
    assert table == {
        "NewReplica": ["NonExistentReplica"],
        "OnlineReplica": [
            "NewReplica",
            "OfflineReplica",
            "OnlineReplica",
            "ReplicaDeletionIneligible",
        ],
        "OfflineReplica": [
            "NewReplica",
            "OfflineReplica",
            "OnlineReplica",
            "ReplicaDeletionIneligible",
        ],
        "ReplicaDeletionStarted": ["OfflineReplica"],
        "ReplicaDeletionSuccessful": ["ReplicaDeletionStarted"],
        "ReplicaDeletionIneligible": ["OfflineReplica", "ReplicaDeletionStarted"],
        "NonExistentReplica": ["ReplicaDeletionSuccessful"],
    }


def test_partition_transition_table_is_kafkas() -> None:
    table = {
        target.value: sorted(s.value for s in sources)
        for target, sources in PARTITION_TABLE.items()
    }
    assert table == {
        "NewPartition": ["NonExistentPartition"],
        "OnlinePartition": ["NewPartition", "OfflinePartition", "OnlinePartition"],
        "OfflinePartition": ["NewPartition", "OfflinePartition", "OnlinePartition"],
        "NonExistentPartition": ["OfflinePartition"],
    }


def test_invalid_transitions_are_logged_and_not_applied(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1)
            await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
            await cluster.settle()
            ctl = cluster.controller()
            ctx = ctl.context
            replica = PartitionAndReplica("t", 0, 1)
            tp = TopicPartition("t", 0)
            cluster.sent.clear()
            with caplog.at_level(logging.ERROR, logger=STATE_CHANGE_LOGGER_NAME):
                await ctl.replica_state_machine.handle_state_changes(
                    [replica], R.REPLICA_DELETION_SUCCESSFUL
                )
                await ctl.partition_state_machine.handle_state_changes(
                    [tp], P.NON_EXISTENT_PARTITION
                )
                await ctl.replica_state_machine.handle_state_changes(
                    [PartitionAndReplica("t", 0, 0)], R.NEW_REPLICA
                )
            assert ctx.replica_states[replica] is R.ONLINE_REPLICA
            assert ctx.partition_states[tp] is P.ONLINE_PARTITION
            assert ctx.replica_states[PartitionAndReplica("t", 0, 0)] is R.ONLINE_REPLICA
            records = [r for r in caplog.records if r.name == STATE_CHANGE_LOGGER_NAME]
            assert all(r.levelno == logging.ERROR for r in records) and len(records) == 3
            text = caplog.text
            assert (
                "[Controller id=0 epoch=1] Controller 0 epoch 1 initiated state change of replica "
                "1 for partition t-0 from OnlineReplica to ReplicaDeletionSuccessful failed: "
                "Replica [Topic=t,Partition=0,Replica=1] should be in the ReplicaDeletionStarted "
                "states before moving to ReplicaDeletionSuccessful state. Instead it is in "
                "OnlineReplica state"
            ) in text
            assert (
                "Controller 0 epoch 1 failed to change state for partition t-0 from "
                "OnlinePartition to NonExistentPartition: Partition t-0 should be in one of "
                "OfflinePartition states before moving to NonExistentPartition state. Instead it "
                "is in OnlinePartition state"
            ) in text
            await cluster.settle()
            assert cluster.sent == []  # nothing was sent for refused transitions

    asyncio.run(main())


def test_offline_replica_sends_stop_replica_and_shrinks_the_isr() -> None:
    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1, 2)
            await cluster.admin.create_topic_with_config("t", {0: [0, 1, 2]}, {})
            await cluster.settle()
            ctl = cluster.controller()
            cluster.sent.clear()
            await ctl.replica_state_machine.handle_state_changes(
                [PartitionAndReplica("t", 0, 2)], R.OFFLINE_REPLICA
            )
            await cluster.settle()
            stop = [r for r in cluster.sent if r.api_key == 5]
            assert [(r.broker_id, r.delete_partitions()) for r in stop] == [(2, False)]
            state = await ctl.zk_client.get_topic_partition_state(TopicPartition("t", 0))
            assert state is not None
            assert state.leader_and_isr.isr == (0, 1) and state.leader_and_isr.leader == 0
            assert state.leader_and_isr.leader_epoch == 1
            lai_brokers = sorted(r.broker_id for r in cluster.sent if r.api_key == 4)
            assert lai_brokers == [0, 1]

    asyncio.run(main())


def test_an_election_whose_state_keeps_changing_ends_with_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every read of the state is followed by another writer's update, so every write hits a
    zkVersion conflict: the election gives up after its bounded retries and logs it."""

    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1, 2)
            await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0]}, {})
            await cluster.settle()
            ctl = cluster.controller()
            tp = TopicPartition("t", 0)
            zk = ctl.partition_state_machine.zk_client
            read = zk.get_topic_partition_states
            reads = 0

            async def read_then_overwrite(
                partitions: Iterable[TopicPartition],
            ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
                nonlocal reads
                reads += 1
                if reads > 100:
                    raise RuntimeError("the election never stops retrying")
                states = await read(partitions)
                for p, state in states.items():
                    await cluster.admin.set_topic_partition_state(p, state)  # bumps the version
                return states

            zk.get_topic_partition_states = read_then_overwrite  # type: ignore[method-assign]
            with caplog.at_level(logging.ERROR, logger=STATE_CHANGE_LOGGER_NAME):
                failed = await ctl.partition_state_machine.handle_state_changes(
                    [tp], P.ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy()
                )
            assert reads == MAX_ZK_UPDATE_ATTEMPTS
            assert list(failed) == [tp]
            assert (
                "failed to change state for partition t-0 from OnlinePartition to "
                "OnlinePartition: Failed to elect leader for partition t-0 under strategy "
                "OfflinePartitionLeaderElectionStrategy(false): its state in ZooKeeper "
                "changed under every one of 10 attempts"
            ) in caplog.text

    asyncio.run(main())


def test_offline_replicas_leave_the_isr_without_reading_states_the_controller_knows() -> None:
    """Taking a broker's replicas offline writes over the cached states (their zkVersion
    fences the writes): deleting a 1,000-partition topic no longer reads 3,000 states."""

    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1, 2)
            assignment = {p: [0, 1, 2] for p in range(20)}
            await cluster.admin.create_topic_with_config("t", assignment, {})
            await cluster.settle()
            ctl = cluster.controller()
            zk = ctl.replica_state_machine.zk_client
            read = zk.get_topic_partition_states
            reads: list[TopicPartition] = []

            async def counting_read(
                partitions: Iterable[TopicPartition],
            ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
                partitions = list(partitions)
                reads.extend(partitions)
                return await read(partitions)

            zk.get_topic_partition_states = counting_read  # type: ignore[method-assign]
            await ctl.replica_state_machine.handle_state_changes(
                [PartitionAndReplica("t", p, 2) for p in assignment], R.OFFLINE_REPLICA
            )
            assert reads == []
            for p in assignment:
                state = await cluster.admin.get_topic_partition_state(TopicPartition("t", p))
                assert state is not None and state.leader_and_isr.isr == (0, 1)

    asyncio.run(main())


def test_an_isr_shrink_whose_state_keeps_changing_ends_with_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1, 2)
            await cluster.admin.create_topic_with_config("t", {0: [0, 1, 2]}, {})
            await cluster.settle()
            ctl = cluster.controller()
            tp = TopicPartition("t", 0)
            zk = ctl.replica_state_machine.zk_client
            read = zk.get_topic_partition_states
            reads = 0

            async def bump(partitions: Iterable[TopicPartition]) -> None:
                for p, state in (await read(partitions)).items():
                    await cluster.admin.set_topic_partition_state(p, state)

            async def read_then_overwrite(
                partitions: Iterable[TopicPartition],
            ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
                nonlocal reads
                reads += 1
                if reads > 100:
                    raise RuntimeError("the ISR shrink never stops retrying")
                partitions = list(partitions)
                states = await read(partitions)
                await bump(partitions)
                return states

            await bump([tp])  # the controller's cached version is stale too
            zk.get_topic_partition_states = read_then_overwrite  # type: ignore[method-assign]
            with caplog.at_level(logging.ERROR, logger=STATE_CHANGE_LOGGER_NAME):
                await ctl.replica_state_machine.handle_state_changes(
                    [PartitionAndReplica("t", 0, 2)], R.OFFLINE_REPLICA
                )
            assert reads == MAX_ZK_UPDATE_ATTEMPTS - 1
            assert (
                "Failed to remove replica 2 from the ISR of partition t-0: its state in "
                "ZooKeeper changed under every one of 10 attempts"
            ) in caplog.text

    asyncio.run(main())
