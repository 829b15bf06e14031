"""Partition reassignment on a ZooKeeper cluster of three broker processes.

AlterPartitionReassignments through kafka-python's KafkaAdminClient moves replicas of a
topic with acknowledged records onto another broker: the new replicas catch up, the old
ones are deleted, the topic znode holds the target replicas and every replica's log is
byte-identical. A reassignment that cannot finish (its new replica's broker is stopped)
shows in ListPartitionReassignments and is cancelled back to its origin replicas. A
reassignment written to /admin/reassign_partitions (Kafka's JSON) is carried out too and
the node deleted.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import confluent_kafka
import kafka
import pytest
from kafka.admin import KafkaAdminClient

from kafpy.client.admin_client import NewTopic
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    Zk,
    admin,
    live_bootstrap,
    live_log_partitions,
    wait_until,
    zookeeper,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]
WAIT_S = 45.0
OVERRIDES = {
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    # a broker paused with SIGSTOP keeps its registration for the cancel test
    "zookeeper.session.timeout.ms": "30000",
}


@pytest.fixture(scope="module")
def cluster(kafpy_cluster: Any) -> LocalCluster:
    started: LocalCluster = kafpy_cluster(3, OVERRIDES)
    return started


@pytest.fixture(scope="module")
def zk(cluster: LocalCluster) -> Any:
    with zookeeper(cluster) as client:
        yield client


def _create_and_fill(
    cluster: LocalCluster, zk: Zk, topic: str, assignment: dict[int, list[int]], records: int
) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment=assignment)]))
    for p, replicas in assignment.items():
        wait_until(lambda p=p, r=replicas: (s := zk.partition_state(topic, p)) is not None  # type: ignore[misc]
                   and sorted(s["isr"]) == sorted(r), WAIT_S, f"{topic}-{p} with a full ISR")  # fmt: skip
    producer = confluent_kafka.Producer({"bootstrap.servers": live_bootstrap(cluster), "acks": "all",
                                         "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})  # fmt: skip
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i in range(records):
        producer.produce(topic, f"v{i}".encode() * 20, partition=i % len(assignment),
                         on_delivery=delivered)  # fmt: skip
    assert producer.flush(30) == 0 and errors == []


def _segments(
    cluster: LocalCluster, broker_id: int, topic: str, partition: int
) -> dict[str, bytes]:
    directory = cluster.brokers[broker_id].data_dir / f"{topic}-{partition}"
    return {f.name: f.read_bytes() for f in sorted(directory.glob("*.log"))}


def _replicas_identical(
    cluster: LocalCluster, topic: str, partition: int, replicas: list[int]
) -> bool:
    logs = [_segments(cluster, b, topic, partition) for b in replicas]
    return all(log == logs[0] and log for log in logs)


def _kafka_admin(cluster: LocalCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=live_bootstrap(cluster), request_timeout_ms=30000)


def test_kafka_python_moves_replicas_and_cancels(cluster: LocalCluster, zk: Zk) -> None:
    topic = "moved"
    _create_and_fill(cluster, zk, topic, {0: [0, 1], 1: [1, 0]}, 400)
    client = _kafka_admin(cluster)
    try:
        client.alter_partition_reassignments(
            {kafka.TopicPartition(topic, 0): [1, 2], kafka.TopicPartition(topic, 1): [2, 1]}
        )
        wait_until(lambda: zk.assignment(topic) == {0: [1, 2], 1: [2, 1]}, WAIT_S,
                   "the target replicas in the topic znode")  # fmt: skip
        assert zk.get_json(f"/brokers/topics/{topic}")["adding_replicas"] == {}
        assert client.list_partition_reassignments() == {}
        # the old replicas are deleted from broker 0, the new ones hold the same bytes
        wait_until(lambda: 0 not in live_log_partitions(cluster, topic), WAIT_S,
                   "broker 0's replicas deleted")  # fmt: skip
        for p, replicas in {0: [1, 2], 1: [2, 1]}.items():
            wait_until(lambda p=p, r=replicas: _replicas_identical(cluster, topic, p, r), WAIT_S,  # type: ignore[misc]
                       f"{topic}-{p}'s replicas byte-identical")  # fmt: skip
        for p in (0, 1):
            state = zk.partition_state(topic, p)
            assert state is not None and sorted(state["isr"]) == [1, 2]

        # broker 0 is paused: a reassignment adding it stays in progress, then is cancelled
        pid = cluster.brokers[0].pid
        assert pid is not None
        tp0 = kafka.TopicPartition(topic, 0)
        os.kill(pid, signal.SIGSTOP)
        try:
            client.alter_partition_reassignments({tp0: [0, 1, 2]})
            ongoing = client.list_partition_reassignments()
            assert set(ongoing) == {tp0}
            assert ongoing[tp0]["adding_replicas"] == [0]
            assert zk.get_json(f"/brokers/topics/{topic}")["adding_replicas"] == {"0": [0]}
            client.alter_partition_reassignments({tp0: None})
            assert client.list_partition_reassignments() == {}
            assert zk.assignment(topic) == {0: [1, 2], 1: [2, 1]}
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_until(lambda: 0 not in live_log_partitions(cluster, topic), WAIT_S,
                   "the cancelled replica deleted from broker 0")  # fmt: skip
    finally:
        client.close()


def test_reassignment_through_the_admin_znode(cluster: LocalCluster, zk: Zk) -> None:
    topic = "zk-moved"
    _create_and_fill(cluster, zk, topic, {0: [0, 1]}, 100)
    zk.create_json("/admin/reassign_partitions", {"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 0]}]})  # fmt: skip
    wait_until(lambda: not zk.exists("/admin/reassign_partitions"), WAIT_S,
               "the reassignment node deleted once done")  # fmt: skip
    assert zk.assignment(topic) == {0: [2, 0]}
    wait_until(lambda: 1 not in live_log_partitions(cluster, topic), WAIT_S,
               "broker 1's replica deleted")  # fmt: skip
    wait_until(lambda: _replicas_identical(cluster, topic, 0, [2, 0]), WAIT_S,
               "the replicas byte-identical")  # fmt: skip
