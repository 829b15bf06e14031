"""Dynamic broker configs on a real ZooKeeper with two brokers: the nodes and change
notifications Kafka 2.x writes, and num.replica.fetchers resized on a running follower
while replication goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka import Producer

from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, admin, leaders_in_metadata, live_bootstrap, zookeeper

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(170)]
WAIT_S = 45.0
OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
}


BROKERS = 2


def configs(bootstrap: str, *args: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "kafpy", "configs", "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_nodes_notifications_and_fetcher_pool_resized(cluster: LocalCluster) -> None:
    topic = "dyn-fetchers"
    admin(
        cluster,
        lambda a: a.create_topics(
            [NewTopic(topic, 4, 2, {0: [0, 1], 1: [0, 1], 2: [0, 1], 3: [0, 1]})]
        ),
    )
    wait_until(
        lambda: all(sorted(isr) == [0, 1] for _, _, isr in leaders_in_metadata(cluster.brokers[0], topic).values()),
        WAIT_S, "both replicas in sync", retry_on=ANY_ERROR,
    )  # fmt: skip
    assert "fetcherId=1]" not in cluster.brokers[1].output_path.read_text()
    b1 = cluster.brokers[1]
    assert configs(b1.address, "--entity-type", "brokers", "--entity-name", "1", "--alter",
                   "--add-config", "num.replica.fetchers=2") == "Completed updating config for broker 1.\n"  # fmt: skip
    assert configs(live_bootstrap(cluster), "--entity-type", "brokers", "--entity-default", "--alter",
                   "--add-config", "log.retention.ms=86400000") == (
        "Completed updating default config for brokers in the cluster.\n"
    )  # fmt: skip

    with zookeeper(cluster) as zk:
        assert (
            zk.client.get("/config/brokers/1")[0]
            == b'{"version":1,"config":{"num.replica.fetchers":"2"}}'
        )
        assert zk.client.get("/config/brokers/<default>")[0] == (
            b'{"version":1,"config":{"log.retention.ms":"86400000"}}'
        )
        changes = sorted(zk.client.get_children("/config/changes"))
        paths = [json.loads(zk.client.get(f"/config/changes/{c}")[0]) for c in changes]
        assert paths[-2:] == [
            {"version": 2, "entity_path": "brokers/1"},
            {"version": 2, "entity_path": "brokers/<default>"},
        ]

    wait_until(lambda: "Resizing fetcher thread pool size from 1 to 2" in b1.output_path.read_text(),
               WAIT_S, "broker 1 to resize its fetcher pool", retry_on=ANY_ERROR)  # fmt: skip
    # every broker applied the default; only broker 1 resized its fetchers
    for b in cluster.brokers.values():
        all_configs = configs(b.address, "--entity-type", "brokers", "--entity-name", str(b.broker_id),
                              "--describe", "--all")  # fmt: skip
        assert (
            "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
            in all_configs
        )
    assert "Resizing fetcher thread pool" not in cluster.brokers[0].output_path.read_text()

    # replication goes on through the new fetchers: acks=all writes to every partition succeed
    p = Producer(
        {"bootstrap.servers": live_bootstrap(cluster), "acks": "all", "message.timeout.ms": 30000}
    )
    errors: list[Any] = []
    for i in range(40):
        p.produce(
            topic, value=b"v%d" % i, partition=i % 4, on_delivery=lambda e, _m: errors.append(e)
        )
    assert p.flush(60) == 0
    assert errors == [None] * 40
    assert (
        "ReplicaFetcherThread-1-0" in b1.output_path.read_text()
        or "fetcher" in b1.output_path.read_text()
    )
