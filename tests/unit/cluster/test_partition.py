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


def test_the_change_listener_hears_every_change_a_fetch_can_see(broker: Broker) -> None:
    broker.lead("t", replicas=[0, 1], isr=[0, 1])
    partition = broker.replica_manager.get_partition(TP)
    assert partition is not None and partition.log is not None
    heard: list[TopicPartition] = []
    partition.change_listener = heard.append

    def hears(change: str) -> None:
        assert heard == [TP] * len(heard) and heard, f"{change}: not heard"
        heard.clear()

    append(broker, b"a")  # the log end offset (the high watermark waits for broker 1)
    hears("append")
    partition.update_follower_fetch_state(1, 1)
    hears("high watermark")
    partition.update_follower_fetch_state(1, 1)
    assert heard == []  # nothing moved
    partition.delete_records_on_leader(1, lambda _: True)
    hears("log start offset (DeleteRecords)")
    append(broker, b"b")
    partition.update_follower_fetch_state(1, 2)
    heard.clear()
    partition.log.truncate_to(1)  # a truncation made past the Partition (LogManager's)
    hears("truncation")
    log = partition.log
    log.maybe_increment_log_start_offset(1)
    assert heard == []  # not moved
    broker.lead("t", replicas=[0, 1], isr=[0, 1], leader_epoch=1)
    hears("new leader epoch")
    partition.make_follower(
        {"leader": 1, "controller_epoch": 1, "leader_epoch": 2, "replicas": [0, 1],
         "zk_version": 0, "isr": [0, 1]}
    )  # fmt: skip
    hears("leadership")
    partition.forget()
    hears("dropped")
    # the log it dropped no longer speaks for it
    log.truncate_fully_and_start_at(5)
    assert heard == []
