"""Partition leader election: who leads a partition, and with which ISR, when it goes online.

As Kafka's `PartitionLeaderElectionAlgorithms`: pure functions over the assignment, the
ISR and the live replicas. Assignment order matters: the first eligible replica in the
assignment (the preferred replica first) wins. The strategies name which algorithm a
PartitionStateMachine election uses (Kafka's PartitionLeaderElectionStrategy).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


def offline_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Collection[int],
    unclean_leader_election_enabled: bool,
) -> int | None:
    """The first live in-sync replica in assignment order; failing that, and only when
    unclean leader election is enabled, the first live replica (which may lose data)."""
    for replica in assignment:
        if replica in live_replicas and replica in isr:
            return replica
    if unclean_leader_election_enabled:
        for replica in assignment:
            if replica in live_replicas:
                return replica
    return None


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: Collection[int]
) -> int | None:
    """The preferred (first assigned) replica if it is live and in sync."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live_replicas: Collection[int]
) -> int | None:
    """The first target replica of a reassignment that is live and in sync."""
    for replica in reassignment:
        if replica in live_replicas and replica in isr:
            return replica
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Collection[int],
    shutting_down: Collection[int],
) -> int | None:
    """The first live in-sync replica that is not shutting down."""
    for replica in assignment:
        if replica in live_replicas and replica in isr and replica not in shutting_down:
            return replica
    return None


@dataclass(frozen=True)
class OfflinePartitionLeaderElectionStrategy:
    """Elect from the live ISR; with `allow_unclean`, or when the topic's
    unclean.leader.election.enable says so, from any live replica."""

    allow_unclean: bool = False

    def __str__(self) -> str:
        return f"OfflinePartitionLeaderElectionStrategy({str(self.allow_unclean).lower()})"


@dataclass(frozen=True)
class PreferredReplicaPartitionLeaderElectionStrategy:
    """Elect the preferred (first assigned) replica if it is live and in sync."""

    def __str__(self) -> str:
        return "PreferredReplicaPartitionLeaderElectionStrategy"


@dataclass(frozen=True)
class ReassignPartitionLeaderElectionStrategy:
    """Elect a leader among the target replicas of a partition being reassigned."""

    def __str__(self) -> str:
        return "ReassignPartitionLeaderElectionStrategy"


@dataclass(frozen=True)
class ControlledShutdownPartitionLeaderElectionStrategy:
    """Move the leadership away from brokers shutting down, which also leave the ISR."""

    def __str__(self) -> str:
        return "ControlledShutdownPartitionLeaderElectionStrategy"


# Kafka's PartitionLeaderElectionStrategy
PartitionLeaderElectionStrategy = (
    OfflinePartitionLeaderElectionStrategy
    | ReassignPartitionLeaderElectionStrategy
    | PreferredReplicaPartitionLeaderElectionStrategy
    | ControlledShutdownPartitionLeaderElectionStrategy
)
