"""Partition as leader: the high watermark after a LeaderAndIsr at a new epoch."""

from __future__ import annotations

from kafpy.common.topic_partition import TopicPartition
from kafpy.records.builder import build_batch
from kafpy.records.memory_records import MemoryRecords
from tests.unit.server.fixtures import Broker

TP = TopicPartition("t", 0)


def append(broker: Broker, value: bytes) -> None:
    partition = broker.replica_manager.get_partition(TP)
    assert partition is not None
    partition.append_records_to_leader(MemoryRecords(memoryview(build_batch([(None, value)]))), 1)


def test_a_replica_taken_out_of_the_isr_no_longer_holds_the_high_watermark(
    broker: Broker,
) -> None:
    # the controller takes a stopped follower (1) out of the ISR at a new leader epoch;
    # the leader stays: the follower still in sync (2) alone must move the high
    # watermark, not wait replica.lag.time.max.ms for the stopped one
    broker.lead("t", replicas=[0, 1, 2], isr=[0, 1, 2], leader_epoch=0)
    partition = broker.replica_manager.get_partition(TP)
    assert partition is not None
    append(broker, b"a")
    partition.update_follower_fetch_state(1, 1)
    partition.update_follower_fetch_state(2, 1)
    assert partition.high_watermark == 1
    broker.lead("t", replicas=[0, 1, 2], isr=[0, 2], leader_epoch=1)
    append(broker, b"b")
    partition.update_follower_fetch_state(2, 2)
    assert partition.high_watermark == 2
