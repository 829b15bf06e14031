"""Leader election algorithms: assignment order, live ISR first, unclean only when allowed."""

from __future__ import annotations

from kafpy.controller.partition_leader_election import (
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
)


def test_offline_election_takes_the_first_live_isr_member_in_assignment_order() -> None:
    assert offline_partition_leader_election([3, 1, 2], [2, 1], {1, 2, 3}, False) == 1
    assert offline_partition_leader_election([3, 1, 2], [2, 1], {2, 3}, False) == 2


def test_offline_election_without_live_isr_needs_unclean_election() -> None:
    assert offline_partition_leader_election([1, 2], [1], {2}, False) is None
    assert offline_partition_leader_election([1, 2], [1], {2}, True) == 2
    assert offline_partition_leader_election([1, 2], [1], set(), True) is None


def test_preferred_and_controlled_shutdown_elections() -> None:
    assert preferred_replica_partition_leader_election([1, 2], [1, 2], {1, 2}) == 1
    assert preferred_replica_partition_leader_election([1, 2], [2], {1, 2}) is None
    assert controlled_shutdown_partition_leader_election([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == 2
