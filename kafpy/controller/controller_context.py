"""ControllerContext: the active controller's in-memory view of the cluster.

As Kafka's `kafka.controller.ControllerContext`: live brokers with their epochs, all topics
and their partition assignments, each partition's leadership (LeaderIsrAndControllerEpoch),
the partition and replica states of the two state machines, and the topics queued for
deletion. Only the controller's event processing reads or changes it (one event at a
time), so it needs no locking. It is rebuilt from ZooKeeper on every failover.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from kafpy.common.topic_ids import TopicIds
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.zk_data import Broker, LeaderIsrAndControllerEpoch, ReplicaAssignment

if TYPE_CHECKING:
    from kafpy.controller.partition_state_machine import PartitionState
    from kafpy.controller.replica_state_machine import ReplicaState


class PartitionAndReplica(NamedTuple):
    """One replica: a partition and the broker holding it."""

    topic: str
    partition: int
    replica: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __str__(self) -> str:
        return f"[Topic={self.topic},Partition={self.partition},Replica={self.replica}]"


class ControllerContext:
    """The controller's cache of cluster metadata and state-machine states."""

    def __init__(self) -> None:
        self.epoch = 0
        self.epoch_zk_version = 0
        self._live_brokers: dict[int, Broker] = {}
        self._live_broker_epochs: dict[int, int] = {}
        self.shutting_down_broker_ids: set[int] = set()
        self.all_topics: set[str] = set()
        self._topic_ids = TopicIds()
        # topic -> partition -> assigned replicas (the preferred leader first)
        self._assignments: dict[str, dict[int, list[int]]] = {}
        # the adding (AR) and removing (RR) replicas of partitions being reassigned
        self._adding_replicas: dict[TopicPartition, tuple[int, ...]] = {}
        self._removing_replicas: dict[TopicPartition, tuple[int, ...]] = {}
        self.partition_leadership_info: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.partition_states: dict[TopicPartition, PartitionState] = {}
        self.replica_states: dict[PartitionAndReplica, ReplicaState] = {}
        # preferred elections complete within one controller event; deletion and rebalance
        # consult both sets as Kafka does
        self.partitions_being_reassigned: set[TopicPartition] = set()
        self.partitions_undergoing_preferred_replica_election: set[TopicPartition] = set()
        self.replicas_on_offline_dirs: dict[int, set[TopicPartition]] = {}
        # the TopicDeletionManager's queues (Kafka 2.4+ keeps them in the context)
        self.topics_to_be_deleted: set[str] = set()
        self.partitions_to_be_deleted: set[TopicPartition] = set()
        self.topics_ineligible_for_deletion: set[str] = set()

    # -- brokers --------------------------------------------------------------------------

    def set_live_brokers_and_epochs(self, brokers: dict[int, tuple[Broker, int]]) -> None:
        self._live_brokers = {bid: b for bid, (b, _) in brokers.items()}
        self._live_broker_epochs = {bid: e for bid, (_, e) in brokers.items()}

    def add_live_brokers_and_epochs(self, brokers: dict[int, tuple[Broker, int]]) -> None:
        for broker_id, (broker, epoch) in brokers.items():
            self._live_brokers[broker_id] = broker
            self._live_broker_epochs[broker_id] = epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self._live_brokers.pop(broker_id, None)
            self._live_broker_epochs.pop(broker_id, None)
            self.shutting_down_broker_ids.discard(broker_id)

    @property
    def live_brokers(self) -> list[Broker]:
        """Live brokers that are not shutting down, by id."""
        return [
            b
            for bid, b in sorted(self._live_brokers.items())
            if bid not in self.shutting_down_broker_ids
        ]

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self._live_brokers) - self.shutting_down_broker_ids

    @property
    def live_or_shutting_down_brokers(self) -> list[Broker]:
        return [b for _, b in sorted(self._live_brokers.items())]

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self._live_brokers)

    def live_broker_epoch(self, broker_id: int) -> int:
        """The broker's epoch (czxid of its registration), -1 when it is not live."""
        return self._live_broker_epochs.get(broker_id, -1)

    def is_replica_online(self, broker_id: int, tp: TopicPartition) -> bool:
        offline_dirs = self.replicas_on_offline_dirs.get(broker_id, set())
        return broker_id in self.live_broker_ids and tp not in offline_dirs

    # -- topics and assignments -------------------------------------------------------------

    def partition_replica_assignment(self, tp: TopicPartition) -> list[int]:
        """The replicas assigned to `tp` ([] when unknown)."""
        return list(self._assignments.get(tp.topic, {}).get(tp.partition, []))

    def update_partition_replica_assignment(self, tp: TopicPartition, replicas: list[int]) -> None:
        """Set the replicas; adding/removing replicas no longer assigned are dropped."""
        self._assignments.setdefault(tp.topic, {})[tp.partition] = list(replicas)
        current = self.partition_full_replica_assignment(tp)
        self._set_adding_removing(tp, current.adding_replicas, current.removing_replicas)

    def partition_full_replica_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """RS with AR and RR (Kafka's partitionFullReplicaAssignment; empty when unknown)."""
        replicas = self._assignments.get(tp.topic, {}).get(tp.partition, [])
        return ReplicaAssignment(
            tuple(replicas),
            tuple(r for r in self._adding_replicas.get(tp, ()) if r in replicas),
            tuple(r for r in self._removing_replicas.get(tp, ()) if r in replicas),
        )

    def update_partition_full_replica_assignment(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        self._assignments.setdefault(tp.topic, {})[tp.partition] = list(assignment.replicas)
        self._set_adding_removing(tp, assignment.adding_replicas, assignment.removing_replicas)

    def partition_full_replica_assignment_for_topic(
        self, topic: str
    ) -> dict[int, ReplicaAssignment]:
        return {
            p: self.partition_full_replica_assignment(TopicPartition(topic, p))
            for p in self._assignments.get(topic, {})
        }

    def _set_adding_removing(
        self, tp: TopicPartition, adding: tuple[int, ...], removing: tuple[int, ...]
    ) -> None:
        replicas = self._assignments.get(tp.topic, {}).get(tp.partition, [])
        adding = tuple(r for r in adding if r in replicas)
        removing = tuple(r for r in removing if r in replicas)
        if adding:
            self._adding_replicas[tp] = adding
        else:
            self._adding_replicas.pop(tp, None)
        if removing:
            self._removing_replicas[tp] = removing
        else:
            self._removing_replicas.pop(tp, None)

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self._assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartition]:
        return [
            TopicPartition(topic, p)
            for topic, assignment in self._assignments.items()
            for p in assignment
        ]

    def replicas_for_partitions(
        self, partitions: Iterable[TopicPartition]
    ) -> list[PartitionAndReplica]:
        """Every replica of the given partitions, in assignment order."""
        return [
            PartitionAndReplica(tp.topic, tp.partition, r)
            for tp in partitions
            for r in self._assignments.get(tp.topic, {}).get(tp.partition, [])
        ]

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return self.replicas_for_partitions(self.partitions_for_topic(topic))

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [
            TopicPartition(topic, p)
            for topic, assignment in self._assignments.items()
            for p, replicas in assignment.items()
            if broker_id in replicas
        ]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        ids = set(broker_ids)
        return [
            PartitionAndReplica(topic, p, r)
            for topic, assignment in self._assignments.items()
            for p, replicas in assignment.items()
            for r in replicas
            if r in ids
        ]

    def all_live_replicas(self) -> set[PartitionAndReplica]:
        return {
            r
            for r in self.replicas_on_brokers(self.live_broker_ids)
            if self.is_replica_online(r.replica, r.topic_partition)
        }

    @property
    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        """KIP-516 topic ids (Kafka's topicIds)."""
        return self._topic_ids.by_name

    @property
    def topic_names(self) -> Mapping[uuid.UUID, str]:
        return self._topic_ids.by_id

    def add_topic_id(self, topic: str, topic_id: uuid.UUID) -> None:
        """Record a topic's id; a topic keeps the one id it was given."""
        known = self.topic_ids.get(topic)
        if known is not None and known != topic_id:
            raise ValueError(
                f"Attempted to add topic id {topic_id} to topic {topic}, which already has "
                f"topic id {known}"
            )
        self._topic_ids.set(topic, topic_id)

    def remove_topic(self, topic: str) -> None:
        """Forget everything about a deleted topic."""
        self._topic_ids.remove(topic)
        self._assignments.pop(topic, None)
        for tp in [tp for tp in self._adding_replicas if tp.topic == topic]:
            del self._adding_replicas[tp]
        for tp in [tp for tp in self._removing_replicas if tp.topic == topic]:
            del self._removing_replicas[tp]
        self.partitions_being_reassigned -= {
            tp for tp in self.partitions_being_reassigned if tp.topic == topic
        }
        for tp in [tp for tp in self.partition_leadership_info if tp.topic == topic]:
            del self.partition_leadership_info[tp]
        for tp in [tp for tp in self.partition_states if tp.topic == topic]:
            del self.partition_states[tp]
        for r in [r for r in self.replica_states if r.topic == topic]:
            del self.replica_states[r]
        self.all_topics.discard(topic)

    def reset(self) -> None:
        """Forget everything (on resignation)."""
        self.__init__()  # type: ignore[misc]
