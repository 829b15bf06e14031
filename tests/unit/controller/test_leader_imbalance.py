"""KafkaController.imbalanced_partitions: which partitions the auto leader rebalance moves.

As Kafka's checkAndTriggerAutoLeaderRebalance: per preferred broker B, the ratio of the
partitions preferring B that B does not lead, against
leader.imbalance.per.broker.percentage / 100 (strictly greater triggers); only partitions
whose preferred replica is online and in the ISR, never topics queued for deletion.
The context is filled by hand; nothing runs.
"""

from __future__ import annotations

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_config import ControllerConfig
from kafpy.controller.kafka_controller import KafkaController
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from tests.unit.controller.fixtures import broker_info


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
    assert c.imbalanced_partitions() == []


def test_ratio_above_the_percentage_moves_the_brokers_partitions() -> None:
    c = controller(percentage=10)
    # broker 0 is preferred for 4 partitions and leads 3: ratio 0.25 > 0.10
    moved = add(c, "t", 0, [0, 1, 2], leader=1)
    for p in (1, 2, 3):
        add(c, "t", p, [0, 1, 2], leader=0)
    # broker 1 is preferred for 1 partition and leads it
    add(c, "t", 4, [1, 2, 0], leader=1)
    assert c.imbalanced_partitions() == [moved]


def test_ratio_equal_to_the_percentage_does_not_trigger() -> None:
    # 3 of 10 not led with 30 %: 0.3 is not greater than 0.3 (0.3 * 100 would be 30.000000000000004)
    c = controller(percentage=30)
    for p in range(10):
        add(c, "t", p, [0, 1, 2], leader=1 if p < 3 else 0)
    assert c.imbalanced_partitions() == []
    add(c, "t", 10, [0, 1, 2], leader=2)  # 4 of 11 > 0.3
    assert sorted(tp.partition for tp in c.imbalanced_partitions()) == [0, 1, 2, 10]


def test_ratio_counts_per_preferred_broker() -> None:
    c = controller(percentage=40)
    # broker 0: 1 of 2 not led (0.5 > 0.4); broker 1: 1 of 3 not led (0.33 <= 0.4)
    a = add(c, "t", 0, [0, 1, 2], leader=2)
    add(c, "t", 1, [0, 1, 2], leader=0)
    add(c, "t", 2, [1, 2, 0], leader=2)
    add(c, "t", 3, [1, 2, 0], leader=1)
    add(c, "t", 4, [1, 2, 0], leader=1)
    assert c.imbalanced_partitions() == [a]


def test_preferred_replica_out_of_the_isr_is_not_a_candidate() -> None:
    c = controller()
    add(c, "t", 0, [0, 1, 2], leader=1, isr=[1, 2])
    in_sync = add(c, "t", 1, [0, 1, 2], leader=1)
    assert c.imbalanced_partitions() == [in_sync]


def test_dead_or_shutting_down_preferred_replica_is_not_a_candidate() -> None:
    c = controller(live=(1, 2))
    add(c, "t", 0, [0, 1, 2], leader=1)
    assert c.imbalanced_partitions() == []
    c = controller()
    add(c, "t", 0, [0, 1, 2], leader=1)
    c.context.shutting_down_broker_ids.add(0)
    assert c.imbalanced_partitions() == []


def test_topics_queued_for_deletion_are_left_out_of_ratio_and_candidates() -> None:
    c = controller(percentage=40)
    add(c, "gone", 0, [0, 1, 2], leader=1)
    for p in (1, 2, 3):
        add(c, "gone", p, [0, 1, 2], leader=0)
    kept = add(c, "kept", 0, [0, 1, 2], leader=1)
    add(c, "kept", 1, [0, 1, 2], leader=0)
    assert c.imbalanced_partitions() == []  # 2 of 6
    c.context.topics_to_be_deleted.add("gone")
    assert c.imbalanced_partitions() == [kept]  # 1 of 2


def test_partitions_without_leadership_count_in_the_denominator_only() -> None:
    c = controller(percentage=40)
    add(c, "t", 0, [0, 1, 2], leader=1)
    add(c, "t", 1, [0, 1, 2], leader=0)
    c.context.update_partition_replica_assignment(TopicPartition("t", 2), [0, 1, 2])
    assert c.imbalanced_partitions() == []  # 1 of 3, not 1 of 2
