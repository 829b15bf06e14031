"""Replication in follower fetch sessions (KIP-227) on a real ZooKeeper cluster of 3
brokers: the leader creates privileged (follower) sessions, a controlled leader change
(the leader stopped) moves the followers to the new leader in new sessions, every
acknowledged record survives and the stopped broker rejoins the ISR through its own."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, admin, live_bootstrap, zookeeper

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(240)]
WAIT_S = 60.0
SESSION_LINE = re.compile(r"Created fetch session FetchSession\(id=\d+, privileged=True")


def produce(cluster: LocalCluster, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": live_bootstrap(cluster), "acks": "all"})
    for v in values:
        producer.produce(topic, value=v, partition=0)
    assert producer.flush(60) == 0


def consume(cluster: LocalCluster, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": live_bootstrap(cluster), "group.id": "unused",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([CkTopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:

        def more() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            return len(got) >= count

        wait_until(more, WAIT_S, f"{count} records of {topic}")
    finally:
        consumer.close()
    return got


def follower_sessions(cluster: LocalCluster, broker_id: int) -> int:
    return len(SESSION_LINE.findall(cluster.brokers[broker_id].output_path.read_text()))


def test_replication_in_follower_sessions_through_a_leader_change(
    kafpy_cluster: Callable[..., LocalCluster],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # the brokers log fetch session creation (Kafka's DEBUG line of FetchSessionCache)
    shipped = Path(__file__).resolve().parents[2] / "kafpy" / "config" / "log4j.properties"
    log_config = tmp_path / "log4j.properties"
    log_config.write_text(shipped.read_text() + "\nlog4j.logger.kafpy.server.FetchSession=DEBUG\n")
    monkeypatch.setitem(os.environ, "KAFPY_LOG_CONFIG", str(log_config))
    cluster = kafpy_cluster(3, {"auto.leader.rebalance.enable": "false"})
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    ids = sorted(cluster.brokers)
    with zookeeper(cluster) as zk:
        admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment={0: ids})]))
        leader = ids[0]

        def state() -> dict[str, object]:
            s = zk.partition_state(topic, 0)
            assert s is not None
            return s

        wait_until(lambda: sorted(state()["isr"]) == ids, WAIT_S, "a full ISR",  # type: ignore[arg-type]
                   retry_on=ANY_ERROR)  # fmt: skip
        first = [b"a%d" % i for i in range(50)]
        produce(cluster, topic, first)
        wait_until(lambda: follower_sessions(cluster, leader) >= 2, WAIT_S,
                   "the leader's sessions of both followers")  # fmt: skip

        cluster.stop_broker(leader)
        new_leader = wait_until(
            lambda: (s := state())["leader"] not in (leader, -1) and s["leader"], WAIT_S,
            "a new leader", retry_on=ANY_ERROR,
        )  # fmt: skip
        assert isinstance(new_leader, int)
        second = [b"b%d" % i for i in range(50)]
        produce(cluster, topic, second)
        # the remaining follower fetches from the new leader in a session of its own
        wait_until(lambda: follower_sessions(cluster, new_leader) >= 1, WAIT_S,
                   "the new leader's follower session")  # fmt: skip

        cluster.start_broker(leader)
        wait_until(lambda: sorted(state()["isr"]) == ids, WAIT_S,  # type: ignore[arg-type]
                   "the old leader back in the ISR", retry_on=ANY_ERROR)  # fmt: skip
        assert follower_sessions(cluster, new_leader) >= 2
    assert consume(cluster, topic, 100) == first + second
