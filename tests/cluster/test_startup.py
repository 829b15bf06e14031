"""A fresh three-broker ZooKeeper cluster answers CreateTopics the moment its ports accept."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.metadata.zookeeper_server import ZooKeeperServer
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(300)]

# generous: a create that is answered at all is answered within a second or two
RESULT_TIMEOUT_S = 30.0


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
    except OSError:
        return False
    return True


def test_create_topics_the_moment_a_fresh_cluster_accepts(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    for attempt in range(5):
        cluster = LocalCluster(
            tmp_path / f"cluster-{attempt}", 3,
            zookeeper_connect=f"{zookeeper_server.connect_string}/cluster-{uuid.uuid4().hex}",
            overrides=CLUSTER_TEST_DEFAULTS,
        )  # fmt: skip
        try:
            # registered in /brokers/ids: the listeners are bound, Metadata not yet known
            cluster.start(wait_for_metadata=False)
            ports = [b.port for b in cluster.brokers.values()]
            wait_until(
                lambda ports=ports: all(_accepts(port) for port in ports),
                60,
                "the brokers' ports to accept",
                interval_s=0.005,
            )
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            futures = admin.create_topics([NewTopic("sp", 2, 3), NewTopic("out", 1, 3)])
            for name, future in futures.items():
                try:
                    assert future.result(RESULT_TIMEOUT_S) is None
                except Exception as e:
                    tails = "\n".join(b.log_tail(20) for b in cluster.brokers.values())
                    pytest.fail(f"attempt {attempt}: creating {name}: {e}\n{tails}")
        finally:
            cluster.stop(timeout_s=15)
