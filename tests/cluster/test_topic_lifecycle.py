"""Topic creation, expansion and deletion on three live brokers, as the controller does them.

One cluster serves the whole module; every test uses its own topic names.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from kafpy.client.admin_client import NewTopic
from kafpy.common.errors import UnknownTopicOrPartitionError
from kafpy.storage.log_manager import INITIAL_TASK_DELAY_MS
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    ANY_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    Zk,
    admin,
    deleted_log_dirs,
    expected_placement,
    leaders_in_metadata,
    live_bootstrap,
    live_log_partitions,
    topic_metadata,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]
WAIT_S = 30.0


def assert_online(
    cluster: LocalCluster, zk: Zk, topic: str, assignment: dict[int, list[int]]
) -> None:
    """Every partition led by its first replica with all replicas in sync, in ZooKeeper and
    in every broker's Metadata, and logs on exactly the assigned brokers."""
    _, controller_epoch = zk.controller()
    for partition, replicas in assignment.items():
        state = wait_until(
            lambda p=partition: zk.partition_state(topic, p),
            WAIT_S,
            f"the state znode of {topic}-{partition}",
            retry_on=ANY_ERROR,
        )
        assert state["leader"] == replicas[0], (partition, state)
        assert sorted(state["isr"]) == sorted(replicas), (partition, state)
        assert state["leader_epoch"] == 0
        assert state["controller_epoch"] == controller_epoch
    expected = {p: (r[0], r, sorted(r)) for p, r in assignment.items()}
    for broker in cluster.brokers.values():

        def seen(b: Any = broker) -> dict[int, tuple[int, list[int], list[int]]]:
            return {
                p: (lead, reps, sorted(isr))
                for p, (lead, reps, isr) in leaders_in_metadata(b, topic).items()
            }

        wait_until(
            lambda s=seen: s() == expected,
            WAIT_S,
            f"broker {broker.broker_id}'s metadata of {topic}",
            retry_on=ANY_ERROR,
        )
    placement = expected_placement(assignment)
    wait_until(
        lambda: live_log_partitions(cluster, topic) == placement,
        WAIT_S,
        f"the logs of {topic}",
        retry_on=ANY_ERROR,
    )


def test_create_with_automatic_assignment(cluster: LocalCluster, zk: Zk) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic("auto", 6, 2)]))

    assignment = zk.assignment("auto")
    assert assignment is not None and sorted(assignment) == list(range(6))
    assert all(len(set(replicas)) == 2 for replicas in assignment.values())
    # rack-unaware assignment: preferred leaders round-robin over the brokers
    assert Counter(replicas[0] for replicas in assignment.values()) == {0: 2, 1: 2, 2: 2}
    assert_online(cluster, zk, "auto", assignment)


def test_create_with_explicit_assignment(cluster: LocalCluster, zk: Zk) -> None:
    assignment = {0: [2, 0], 1: [1, 2], 2: [0, 1]}
    admin(cluster, lambda a: a.create_topics([NewTopic("explicit", replica_assignment=assignment)]))

    assert zk.assignment("explicit") == assignment
    assert_online(cluster, zk, "explicit", assignment)


def test_create_by_a_zookeeper_write(cluster: LocalCluster, zk: Zk) -> None:
    # what kafka-topics.sh --zookeeper does: only the assignment znode; the controller acts
    zk.create_json(
        "/brokers/topics/zk-written", {"version": 1, "partitions": {"0": [1], "1": [2, 0]}}
    )

    assert_online(cluster, zk, "zk-written", {0: [1], 1: [2, 0]})


def test_alter_partitions(cluster: LocalCluster, zk: Zk) -> None:
    admin(
        cluster,
        lambda a: a.create_topics([NewTopic("grow", replica_assignment={0: [0, 1], 1: [1, 2]})]),
    )
    assert_online(cluster, zk, "grow", {0: [0, 1], 1: [1, 2]})

    admin(cluster, lambda a: a.create_partitions({"grow": 4}, {"grow": [[2, 0], [0, 2]]}))
    assert_online(cluster, zk, "grow", {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 2]})

    admin(cluster, lambda a: a.create_partitions({"grow": 6}))
    assignment = zk.assignment("grow")
    assert assignment is not None and sorted(assignment) == list(range(6))
    assert all(len(set(assignment[p])) == 2 for p in (4, 5))
    assert_online(cluster, zk, "grow", assignment)


def _produce(cluster: LocalCluster, topic: str, partitions: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=live_bootstrap(cluster), acks=1)
    try:
        for p in range(partitions):
            for i in range(count):
                producer.send(topic, f"old-{p}-{i}".encode(), partition=p)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def _offsets(cluster: LocalCluster, topic: str, partitions: int) -> tuple[list[int], list[int]]:
    """(log start offsets, end offsets) of the partitions, through kafka-python."""
    consumer = KafkaConsumer(bootstrap_servers=live_bootstrap(cluster), request_timeout_ms=20000)
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        begin = consumer.beginning_offsets(tps)
        end = consumer.end_offsets(tps)
        return [begin[tp] for tp in tps], [end[tp] for tp in tps]
    finally:
        consumer.close()


def _log_bytes(cluster: LocalCluster, topic: str) -> int:
    """The size of every segment file of the topic's live logs, on all brokers."""
    return sum(
        f.stat().st_size
        for b in cluster.brokers.values()
        for p in live_log_partitions(cluster, topic).get(b.broker_id, ())
        for f in (b.data_dir / f"{topic}-{p}").glob("*.log")
    )


def test_delete_then_recreate(cluster: LocalCluster, zk: Zk) -> None:
    # one replica each, so the high watermark moves without replication (not built yet)
    assignment = {0: [0], 1: [1], 2: [2]}
    admin(cluster, lambda a: a.create_topics([NewTopic("doomed", replica_assignment=assignment)]))
    assert_online(cluster, zk, "doomed", assignment)
    _produce(cluster, "doomed", 3, 5)
    assert _offsets(cluster, "doomed", 3) == ([0, 0, 0], [5, 5, 5])
    assert _log_bytes(cluster, "doomed") > 0

    admin(cluster, lambda a: a.delete_topics(["doomed"]))

    # every replica's dir renamed `<topic>-<p>.<uuid>-delete`
    renamed = wait_until(
        lambda: (
            not live_log_partitions(cluster, "doomed")
            and (d := deleted_log_dirs(cluster, "doomed"))
            and {b: len(dirs) for b, dirs in d.items()} == {0: 1, 1: 1, 2: 1}
            and d
        ),
        WAIT_S,
        "the logs of doomed renamed for deletion",
        interval_s=0.02,
        retry_on=ANY_ERROR,
    )
    assert {name.split(".")[0] for dirs in renamed.values() for name in dirs} == {
        "doomed-0",
        "doomed-1",
        "doomed-2",
    }
    wait_until(
        lambda: (
            not any(
                zk.exists(p)
                for p in (
                    "/brokers/topics/doomed",
                    "/config/topics/doomed",
                    "/admin/delete_topics/doomed",
                )
            )
        ),
        WAIT_S,
        "the znodes of doomed to go",
        retry_on=ANY_ERROR,
    )
    for broker in cluster.brokers.values():
        wait_until(
            lambda b=broker: (
                topic_metadata(b, "doomed")["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
            ),
            WAIT_S,
            f"broker {broker.broker_id} to forget doomed",
            retry_on=ANY_ERROR,
        )
    with pytest.raises(UnknownTopicOrPartitionError):
        admin(cluster, lambda a: a.describe_topics(["doomed"]))

    # the same name again, at once: a new, empty topic
    admin(cluster, lambda a: a.create_topics([NewTopic("doomed", replica_assignment=assignment)]))
    assert_online(cluster, zk, "doomed", assignment)
    assert _offsets(cluster, "doomed", 3) == ([0, 0, 0], [0, 0, 0])
    assert _log_bytes(cluster, "doomed") == 0

    # the old files go after log.segment.delete.delay.ms, but kafka-delete-logs first runs
    # 30 s after a broker starts (Kafka's InitialTaskDelayMs)
    wait_until(
        lambda: not deleted_log_dirs(cluster, "doomed"),
        INITIAL_TASK_DELAY_MS / 1000 + WAIT_S,
        "the -delete dirs to be removed",
        retry_on=ANY_ERROR,
    )
    assert live_log_partitions(cluster, "doomed") == expected_placement(assignment)
