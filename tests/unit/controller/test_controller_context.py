"""ControllerContext's bookkeeping of full replica assignments (RS with AR and RR) and of
the partitions being reassigned."""

from __future__ import annotations

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_context import ControllerContext
from kafpy.metadata.zk_data import ReplicaAssignment

TP = TopicPartition("t", 0)


def test_full_assignment_round_trip_and_plain_view() -> None:
    ctx = ControllerContext()
    assert ctx.partition_full_replica_assignment(TP) == ReplicaAssignment(())
    ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2, 0), (2,), (0,)))
    assert ctx.partition_replica_assignment(TP) == [1, 2, 0]
    assert ctx.partition_full_replica_assignment(TP) == ReplicaAssignment((1, 2, 0), (2,), (0,))
    assert ctx.partition_full_replica_assignment_for_topic("t") == {
        0: ReplicaAssignment((1, 2, 0), (2,), (0,))
    }


def test_replacing_replicas_drops_adding_and_removing_ones_no_longer_assigned() -> None:
    ctx = ControllerContext()
    ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2, 0), (2,), (0,)))
    # NonExistentReplica takes replica 0 out (what the replica state machine does)
    ctx.update_partition_replica_assignment(TP, [1, 2])
    assert ctx.partition_full_replica_assignment(TP) == ReplicaAssignment((1, 2), (2,), ())
    ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2)))
    assert not ctx.partition_full_replica_assignment(TP).is_being_reassigned


def test_removing_a_topic_forgets_its_reassignments() -> None:
    ctx = ControllerContext()
    ctx.all_topics.add("t")
    ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2, 0), (2,), (0,)))
    ctx.partitions_being_reassigned.add(TP)
    ctx.remove_topic("t")
    assert ctx.partitions_being_reassigned == set()
    assert ctx.partition_full_replica_assignment(TP) == ReplicaAssignment(())
