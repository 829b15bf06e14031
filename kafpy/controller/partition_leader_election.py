"""Partition leader election: who leads a partition, and with which ISR, when it goes online.

As Kafka's `PartitionLeaderElectionAlgorithms`: pure functions over the assignment, the
ISR and the live replicas. Assignment order matters: the first eligible replica in the
assignment (the preferred replica first) wins.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


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
