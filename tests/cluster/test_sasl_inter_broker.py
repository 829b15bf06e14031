"""Three brokers whose inter-broker listener is SASL_PLAINTEXT with SCRAM-SHA-512: the
broker credential is created in ZooKeeper before they start (as Kafka's docs do), the
controller's requests and the replica fetchers authenticate, and a topic with RF 3
replicates with acks=all while clients authenticate too."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafpy.client.admin_client import NewTopic
from kafpy.metadata.zookeeper_server import ZooKeeperServer
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from kafpy.tools.process_records import BrokerProcess
from tests.cluster.support import ANY_ERROR, Zk, admin, zookeeper
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS, START_TIMEOUT_S

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]
N = 100
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="{user}" password="{password}";'
)


class SaslListenerCluster(LocalCluster):
    """A LocalCluster whose brokers also listen on SASL_PLAINTEXT, the inter-broker listener."""

    @property
    def sasl_ports(self) -> dict[int, int]:
        """Broker id -> the port its SASL_PLAINTEXT listener bound (port 0 at the first start)."""
        return {
            i: b.ports["SASL_PLAINTEXT"]
            for i, b in self.brokers.items()
            if "SASL_PLAINTEXT" in b.ports
        }

    def write_properties(self, broker: BrokerProcess) -> None:
        port = broker.ports.get("SASL_PLAINTEXT", 0)  # a restart binds the same port again
        base = self.overrides
        self.overrides = {
            **base,
            "listeners": f"PLAINTEXT://{broker.host}:{broker.port},"
            f"SASL_PLAINTEXT://{broker.host}:{port}",
        }
        try:
            super().write_properties(broker)
        finally:
            self.overrides = base

    def sasl_bootstrap(self) -> str:
        return ",".join(
            f"127.0.0.1:{self.sasl_ports[i]}" for i, b in self.brokers.items() if b.alive
        )


def _add_user(zookeeper_connect: str, user: str, password: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafpy", "configs", "--zookeeper", zookeeper_connect, "--alter",
         "--entity-type", "users", "--entity-name", user,
         "--add-config", f"SCRAM-SHA-512=[password={password}]"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslListenerCluster]:
    connect = f"{zookeeper_server.connect_string}/sasl-cluster-{uuid.uuid4().hex}"
    _add_user(connect, "broker", "broker-secret")
    _add_user(connect, "client", "client-secret")
    overrides = {
        **CLUSTER_TEST_DEFAULTS,
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS.format(
            user="broker", password="broker-secret"
        ),
    }
    started = SaslListenerCluster(
        tmp_path_factory.mktemp("sasl-cluster"), 3, zookeeper_connect=connect,
        overrides=overrides, start_timeout_s=START_TIMEOUT_S,
    )  # fmt: skip
    try:
        started.start()
        yield started
    finally:
        started.stop(timeout_s=15)


@pytest.fixture(scope="module")
def zk(cluster: SaslListenerCluster) -> Iterator[Zk]:
    with zookeeper(cluster) as client:
        yield client


def _client_conf(cluster: SaslListenerCluster) -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.sasl_bootstrap(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "client",
        "sasl.password": "client-secret",
    }


def test_replicates_with_sasl_between_brokers(cluster: SaslListenerCluster, zk: Zk) -> None:
    topic = f"sasl-rf3-{uuid.uuid4().hex[:8]}"
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, 1, 3)]))
    wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None and s["leader"] >= 0,
        30, "a leader", retry_on=ANY_ERROR,
    )  # fmt: skip
    producer = Producer({**_client_conf(cluster), "acks": "all"})
    for i in range(N):
        producer.produce(topic, b"r%d" % i)
    assert producer.flush(60) == 0
    # the followers fetched everything as User:broker over SASL: all three are in the ISR
    wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None and len(s["isr"]) == 3,
        30, "three replicas in the ISR", retry_on=ANY_ERROR,
    )  # fmt: skip
    consumer = Consumer(
        {**_client_conf(cluster), "group.id": topic, "auto.offset.reset": "earliest",
         "enable.auto.commit": False}
    )  # fmt: skip
    consumer.subscribe([topic])
    values: list[Any] = []
    try:
        for _ in range(120):
            if len(values) >= N:
                break
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
    finally:
        consumer.close()
    assert values == [b"r%d" % i for i in range(N)]
