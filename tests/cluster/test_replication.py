"""Replication across three broker processes: copies, ISR, acks=all, leader failures.

Real ZooKeeper, three `kafpy server` processes, confluent-kafka as the producer. Failure
detection is kept short (6 s ZooKeeper sessions, replica.lag.time.max.ms 3 s); every wait
has a deadline.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    Zk,
    admin,
    live_bootstrap,
    wait_until,
    zookeeper,
)
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(170)]
LAG_MS = 3000
WAIT_S = 30.0
SESSION_TIMEOUT_S = int(CLUSTER_TEST_DEFAULTS["zookeeper.session.timeout.ms"]) / 1000
FAILOVER_S = SESSION_TIMEOUT_S + 15.0
OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "default.replication.factor": "3",
}


@pytest.fixture(scope="module")
def cluster(kafpy_cluster: Any) -> LocalCluster:
    started: LocalCluster = kafpy_cluster(3, OVERRIDES)
    return started


@pytest.fixture(scope="module")
def zk(cluster: LocalCluster) -> Any:
    with zookeeper(cluster) as client:
        yield client


def _create(cluster: LocalCluster, zk: Zk, topic: str, partitions: int = 1, **configs: str) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, partitions, 3, configs=configs)]))
    for p in range(partitions):
        wait_until(
            lambda p=p: (s := zk.partition_state(topic, p)) is not None and len(s["isr"]) == 3 and s,
            WAIT_S, f"{topic}-{p} online with a full ISR",
        )  # fmt: skip


def _producer(cluster: LocalCluster, **extra: Any) -> Any:
    conf = {
        "bootstrap.servers": live_bootstrap(cluster),
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 60000,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    conf.update(extra)
    return confluent_kafka.Producer(conf)


def _segments(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> dict[str, str]:
    d: Path = cluster.brokers[broker_id].data_dir / f"{topic}-{partition}"
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(d.glob("*.log"))}


def _restart(cluster: LocalCluster, broker_id: int) -> None:
    cluster.wait_unregistered(broker_id, FAILOVER_S)
    cluster.start_broker(broker_id)


def test_rf3_followers_hold_identical_segment_files(cluster: LocalCluster, zk: Zk) -> None:
    topic = "copies"
    _create(cluster, zk, topic)
    producer = _producer(cluster)
    errors: list[Any] = []
    for i in range(3000):
        producer.produce(topic, f"value-{i}".encode() * 3, key=str(i).encode(),
                         on_delivery=lambda err, msg: err and errors.append(err))  # fmt: skip
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []

    def identical() -> Any:
        copies = {b: _segments(cluster, b, topic, 0) for b in cluster.brokers}
        first = next(iter(copies.values()))
        return first and all(c == first for c in copies.values()) and copies

    copies = wait_until(identical, WAIT_S, "the three copies to be byte-identical")
    assert len(copies) == 3
    assert zk.partition_state(topic, 0)["isr"] == [0, 1, 2] or len(zk.partition_state(topic, 0)["isr"]) == 3
