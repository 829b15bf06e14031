"""Three brokers whose inter-broker listener is SSL: the controller's requests and the
replica fetchers run over TLS (with host name checks), the registration JSON names both
listeners, and a topic with RF 3 replicates and fails over while clients use SSL too."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafpy.client.admin_client import NewTopic
from kafpy.metadata.zookeeper_server import ZooKeeperServer
from kafpy.security.local_pki import TestPki
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from kafpy.tools.process_records import BrokerProcess
from tests.cluster.support import ANY_ERROR, Zk, admin, zookeeper
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS, START_TIMEOUT_S
from tests.fixtures.tls import broker_ssl_overrides

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]
FAILOVER_S = int(CLUSTER_TEST_DEFAULTS["zookeeper.session.timeout.ms"]) / 1000 + 15
N = 200


class SslListenerCluster(LocalCluster):
    """A LocalCluster whose brokers also listen on SSL, the inter-broker listener."""

    @property
    def ssl_ports(self) -> dict[int, int]:
        """Broker id -> the port its SSL listener bound (port 0 at the first start)."""
        return {i: b.ports["SSL"] for i, b in self.brokers.items() if "SSL" in b.ports}

    def write_properties(self, broker: BrokerProcess) -> None:
        port = broker.ports.get("SSL", 0)  # a restart binds the same port again
        base = self.overrides
        self.overrides = {
            **base,
            "listeners": f"PLAINTEXT://{broker.host}:{broker.port},SSL://{broker.host}:{port}",
        }
        try:
            super().write_properties(broker)
        finally:
            self.overrides = base

    def ssl_bootstrap(self) -> str:
        return ",".join(
            f"127.0.0.1:{self.ssl_ports[i]}" for i, b in self.brokers.items() if b.alive
        )


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer,
    tmp_path_factory: pytest.TempPathFactory,
    test_pki: TestPki,
) -> Iterator[SslListenerCluster]:
    overrides = {
        **CLUSTER_TEST_DEFAULTS,
        **broker_ssl_overrides(test_pki, client_auth="required"),
        "security.inter.broker.protocol": "SSL",
    }
    started = SslListenerCluster(
        tmp_path_factory.mktemp("ssl-cluster"), 3,
        zookeeper_connect=f"{zookeeper_server.connect_string}/cluster-{uuid.uuid4().hex}",
        overrides=overrides, start_timeout_s=START_TIMEOUT_S,
    )  # fmt: skip
    try:
        started.start()
        yield started
    finally:
        started.stop(timeout_s=15)


@pytest.fixture(scope="module")
def zk(cluster: SslListenerCluster) -> Iterator[Zk]:
    with zookeeper(cluster) as client:
        yield client


def _client_conf(cluster: SslListenerCluster, pki: TestPki) -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.ssl_bootstrap(),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca_certificate),
        "ssl.certificate.location": str(pki.client.certificate),
        "ssl.key.location": str(pki.client.key),
    }


def test_registration_names_both_listeners(cluster: SslListenerCluster, zk: Zk) -> None:
    for broker_id, broker in cluster.brokers.items():
        registration = zk.get_json(f"/brokers/ids/{broker_id}")
        assert registration["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "SSL": "SSL",
        }
        assert registration["endpoints"] == [
            f"PLAINTEXT://127.0.0.1:{broker.port}",
            f"SSL://127.0.0.1:{cluster.ssl_ports[broker_id]}",
        ]
        assert (registration["host"], registration["port"]) == ("127.0.0.1", broker.port)


def test_replicates_and_fails_over_over_ssl(
    cluster: SslListenerCluster, zk: Zk, test_pki: TestPki
) -> None:
    topic = f"ssl-rf3-{uuid.uuid4().hex[:8]}"
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, 1, 3)]))
    wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None and s["leader"] >= 0,
        30, "a leader", retry_on=ANY_ERROR,
    )  # fmt: skip
    conf = _client_conf(cluster, test_pki)
    producer = Producer({**conf, "acks": "all"})
    for i in range(N):
        producer.produce(topic, b"r%d" % i)
    assert producer.flush(60) == 0
    # the followers fetched everything over SSL: all three are in the ISR
    state: Any = wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None and len(s["isr"]) == 3 and s,
        30, "three replicas in the ISR", retry_on=ANY_ERROR,
    )  # fmt: skip
    old_leader = state["leader"]
    cluster.kill_broker(old_leader)
    new_state: Any = wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None
        and s["leader"] not in (-1, old_leader) and s,
        FAILOVER_S, "a new leader", retry_on=ANY_ERROR,
    )  # fmt: skip
    assert old_leader not in new_state["isr"]
    consumer = Consumer(
        {**_client_conf(cluster, test_pki), "group.id": topic, "auto.offset.reset": "earliest",
         "enable.auto.commit": False}
    )  # fmt: skip
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(240):
            if len(values) >= N:
                break
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value() or b"")
    finally:
        consumer.close()
    assert values == [b"r%d" % i for i in range(N)]
