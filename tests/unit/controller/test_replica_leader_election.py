"""ReplicaLeaderElection over the embedded store: ElectLeaders (preferred and unclean),
the controlled shutdown, and which partitions the auto leader rebalance moves."""

from __future__ import annotations

import logging

import pytest

from kafpy.common.election_type import ElectionType
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_config import ControllerConfig
from kafpy.controller.kafka_controller import KafkaController
from kafpy.controller.partition_state_machine import PartitionState
from kafpy.controller.replica_leader_election import ElectionResult
from kafpy.controller.state_change_logger import STATE_CHANGE_LOGGER_NAME
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from tests.unit.controller.fixtures import ControllerCluster, broker_info, run, state_json

LAI = ApiKey.LEADER_AND_ISR


# -- replica leader elections (ElectLeaders, /admin/preferred_replica_election, rebalance) --


async def _leader_moved_off_the_preferred_replica(cluster: ControllerCluster) -> None:
    """t-0 assigned [1, 2, 0], led by 2 after broker 1 bounced; broker 1 is back in the ISR."""
    await cluster.start(0, 1, 2)
    await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0]}, {})
    await cluster.settle()
    await cluster.stop_broker(1)
    await cluster.settle()
    await cluster.start_broker(1)
    await cluster.settle()
    tp = TopicPartition("t", 0)
    state = await cluster.admin.get_topic_partition_state(tp)
    assert state is not None and state.leader_and_isr.leader == 2
    # the leader took broker 1 back into the ISR (as its ISR expansion would)
    lai = state.leader_and_isr
    back = LeaderIsrAndControllerEpoch(lai.new_leader_and_isr(2, [2, 0, 1]), state.controller_epoch)
    await cluster.admin.set_topic_partition_state(tp, back, lai.zk_version)


def test_preferred_election_goes_through_the_partition_state_machine(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await _leader_moved_off_the_preferred_replica(cluster)
        ctl = cluster.controller()
        cluster.sent.clear()
        with caplog.at_level(logging.DEBUG, logger=STATE_CHANGE_LOGGER_NAME):
            results = await ctl.elect_leaders([TopicPartition("t", 0)], ElectionType.PREFERRED)
        assert results == {TopicPartition("t", 0): ElectionResult(Errors.NONE, None, 1)}
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 1 and state["isr"] == [2, 0, 1]
        assert (
            "Changed partition t-0 from OnlinePartition to OnlinePartition with state "
            "LeaderAndIsr(leader=1, leaderEpoch="
        ) in caplog.text
        await cluster.settle()
        assert {r.broker_id for r in cluster.requests(LAI)} == {0, 1, 2}
        # already led by the preferred replica: nothing to do
        again = await ctl.elect_leaders([TopicPartition("t", 0)], ElectionType.PREFERRED)
        assert again[TopicPartition("t", 0)].error_code == Errors.ELECTION_NOT_NEEDED

    run(body)


def test_election_results_for_unknown_unelectable_and_non_controller() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0]}, {})
        await cluster.settle()
        await cluster.stop_broker(1)
        await cluster.settle()
        await cluster.start_broker(1)  # back, but out of the ISR [2, 0]
        await cluster.settle()
        ctl = cluster.controller()
        tp, unknown = TopicPartition("t", 0), TopicPartition("t", 7)
        results = await ctl.elect_leaders([tp, unknown], ElectionType.PREFERRED)
        assert results[unknown] == ElectionResult(
            Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        )
        assert results[tp].error_code == Errors.PREFERRED_LEADER_NOT_AVAILABLE
        assert "PreferredReplicaPartitionLeaderElectionStrategy" in str(results[tp].error_message)
        # its leader is alive: an unclean election is not needed
        unclean = await ctl.elect_leaders([tp], ElectionType.UNCLEAN)
        assert unclean[tp].error_code == Errors.ELECTION_NOT_NEEDED
        other = next(h.controller for h in cluster.brokers.values() if not h.controller.is_active)
        assert await other.elect_leaders([tp], ElectionType.PREFERRED) == {
            tp: ElectionResult(Errors.NOT_CONTROLLER)
        }

    run(body)


def test_election_answers_not_controller_when_the_controller_moved_meanwhile() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await _leader_moved_off_the_preferred_replica(cluster)
        ctl = cluster.controller()
        # another controller bumped /controller_epoch: this one's writes fail its check
        data, _ = await cluster.admin.store.get("/controller_epoch")
        await cluster.admin.store.set("/controller_epoch", data)
        results = await ctl.elect_leaders([TopicPartition("t", 0)], ElectionType.PREFERRED)
        assert results == {TopicPartition("t", 0): ElectionResult(Errors.NOT_CONTROLLER)}
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 2

    run(body)


def test_admin_unclean_election_elects_an_out_of_sync_replica_whatever_the_config() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2], 1: [1]}, {})
        await cluster.settle()
        await cluster.stop_broker(2)  # ISR shrinks to [1]
        await cluster.settle()
        await cluster.start_broker(2)  # back, not in sync
        await cluster.settle()
        await cluster.stop_broker(1)  # the whole ISR is down: t-0 and t-1 go offline
        await cluster.settle()
        assert (await state_json(cluster, "t", 0) or {})["leader"] == -1
        ctl = cluster.controller()
        t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
        results = await ctl.elect_leaders([t0, t1], ElectionType.UNCLEAN)
        assert results[t0] == ElectionResult(Errors.NONE, None, 2)
        assert results[t1].error_code == Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 2 and state["isr"] == [2]
        assert ctl.context.partition_states[t0] is PartitionState.ONLINE_PARTITION
        assert ctl.context.partition_states[t1] is PartitionState.OFFLINE_PARTITION

    run(body)


def test_controlled_shutdown_moves_leadership_through_the_state_machine(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0]}, {})
        await cluster.settle()
        ctl = cluster.controller()
        broker_epoch = ctl.context.live_broker_epoch(1)
        with caplog.at_level(logging.DEBUG, logger=STATE_CHANGE_LOGGER_NAME):
            error, remaining = await ctl.controlled_shutdown(1, broker_epoch)
        assert (error, remaining) == (0, [])
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 2 and state["isr"] == [2, 0]
        assert (
            "Changed partition t-0 from OnlinePartition to OnlinePartition with state "
            "LeaderAndIsr(leader=2, leaderEpoch=1, isr=2,0"
        ) in caplog.text

    run(body)


# -- auto leader rebalance: imbalanced partitions ----------------------------------------
#
# ReplicaLeaderElection.imbalanced_partitions: which partitions the auto leader rebalance moves.
#
# As Kafka's checkAndTriggerAutoLeaderRebalance: per preferred broker B, the ratio of the
# partitions preferring B that B does not lead, against
# leader.imbalance.per.broker.percentage / 100 (strictly greater triggers); only partitions
# whose preferred replica is online and in the ISR, never topics queued for deletion.
# The context is filled by hand; nothing runs.


def controller(percentage: int = 10, live: tuple[int, ...] = (0, 1, 2)) -> KafkaController:
    config = ControllerConfig(broker_id=0, leader_imbalance_per_broker_percentage=percentage)
    c = KafkaController(config, KafkaZkClient(EmbeddedStore(None)))
    c.context.set_live_brokers_and_epochs({b: (broker_info(b).broker, 10 + b) for b in live})
    return c


def add(
    c: KafkaController,
    topic: str,
    partition: int,
    replicas: list[int],
    leader: int,
    isr: list[int] | None = None,
) -> TopicPartition:
    tp = TopicPartition(topic, partition)
    c.context.all_topics.add(topic)
    c.context.update_partition_replica_assignment(tp, replicas)
    lai = LeaderAndIsr(leader, 1, tuple(replicas if isr is None else isr))
    c.context.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(lai, 1)
    return tp


def test_balanced_cluster_moves_nothing() -> None:
    c = controller()
    for p in range(6):
        add(c, "t", p, [p % 3, (p + 1) % 3, (p + 2) % 3], leader=p % 3)
    assert c.replica_leader_election.imbalanced_partitions() == []


def test_ratio_above_the_percentage_moves_the_brokers_partitions() -> None:
    c = controller(percentage=10)
    # broker 0 is preferred for 4 partitions and leads 3: ratio 0.25 > 0.10
    moved = add(c, "t", 0, [0, 1, 2], leader=1)
    for p in (1, 2, 3):
        add(c, "t", p, [0, 1, 2], leader=0)
    # broker 1 is preferred for 1 partition and leads it
    add(c, "t", 4, [1, 2, 0], leader=1)
    assert c.replica_leader_election.imbalanced_partitions() == [moved]


def test_ratio_equal_to_the_percentage_does_not_trigger() -> None:
    # 3 of 10 not led with 30 %: 0.3 is not greater than 0.3 (0.3 * 100 would be 30.000000000000004)
    c = controller(percentage=30)
    for p in range(10):
        add(c, "t", p, [0, 1, 2], leader=1 if p < 3 else 0)
    assert c.replica_leader_election.imbalanced_partitions() == []
    add(c, "t", 10, [0, 1, 2], leader=2)  # 4 of 11 > 0.3
    assert sorted(tp.partition for tp in c.replica_leader_election.imbalanced_partitions()) == [
        0,
        1,
        2,
        10,
    ]


def test_ratio_counts_per_preferred_broker() -> None:
    c = controller(percentage=40)
    # broker 0: 1 of 2 not led (0.5 > 0.4); broker 1: 1 of 3 not led (0.33 <= 0.4)
    a = add(c, "t", 0, [0, 1, 2], leader=2)
    add(c, "t", 1, [0, 1, 2], leader=0)
    add(c, "t", 2, [1, 2, 0], leader=2)
    add(c, "t", 3, [1, 2, 0], leader=1)
    add(c, "t", 4, [1, 2, 0], leader=1)
    assert c.replica_leader_election.imbalanced_partitions() == [a]


def test_preferred_replica_out_of_the_isr_is_not_a_candidate() -> None:
    c = controller()
    add(c, "t", 0, [0, 1, 2], leader=1, isr=[1, 2])
    in_sync = add(c, "t", 1, [0, 1, 2], leader=1)
    assert c.replica_leader_election.imbalanced_partitions() == [in_sync]


def test_dead_or_shutting_down_preferred_replica_is_not_a_candidate() -> None:
    c = controller(live=(1, 2))
    add(c, "t", 0, [0, 1, 2], leader=1)
    assert c.replica_leader_election.imbalanced_partitions() == []
    c = controller()
    add(c, "t", 0, [0, 1, 2], leader=1)
    c.context.shutting_down_broker_ids.add(0)
    assert c.replica_leader_election.imbalanced_partitions() == []


def test_topics_queued_for_deletion_are_left_out_of_ratio_and_candidates() -> None:
    c = controller(percentage=40)
    add(c, "gone", 0, [0, 1, 2], leader=1)
    for p in (1, 2, 3):
        add(c, "gone", p, [0, 1, 2], leader=0)
    kept = add(c, "kept", 0, [0, 1, 2], leader=1)
    add(c, "kept", 1, [0, 1, 2], leader=0)
    assert c.replica_leader_election.imbalanced_partitions() == []  # 2 of 6
    c.context.topics_to_be_deleted.add("gone")
    assert c.replica_leader_election.imbalanced_partitions() == [kept]  # 1 of 2


def test_partitions_without_leadership_count_in_the_denominator_only() -> None:
    c = controller(percentage=40)
    add(c, "t", 0, [0, 1, 2], leader=1)
    add(c, "t", 1, [0, 1, 2], leader=0)
    c.context.update_partition_replica_assignment(TopicPartition("t", 2), [0, 1, 2])
    assert c.replica_leader_election.imbalanced_partitions() == []  # 1 of 3, not 1 of 2
