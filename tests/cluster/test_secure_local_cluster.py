"""`kafpy cluster up --secure`'s cluster: three brokers on ZooKeeper whose only listener is
SASL_SSL (a CA made with `cryptography`, SCRAM-SHA-512 between brokers) with the
AclAuthorizer; the super user's client config works with the kafpy tools and real
clients, a PLAINTEXT client is refused, and a user with Read on one topic reads it and
nothing else."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafpy.common.properties import load_properties
from kafpy.metadata.zookeeper_server import ZooKeeperServer
from kafpy.tools.local_cluster import LocalCluster
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS, START_TIMEOUT_S

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(240)]
N = 50


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    started = LocalCluster(
        tmp_path_factory.mktemp("secure-cluster"), 3,
        zookeeper_connect=f"{zookeeper_server.connect_string}/secure-{uuid.uuid4().hex}",
        overrides=CLUSTER_TEST_DEFAULTS, start_timeout_s=START_TIMEOUT_S, secure=True,
    )  # fmt: skip
    try:
        started.start()
        yield started
    finally:
        started.stop(timeout_s=15)


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def librdkafka_conf(
    cluster: LocalCluster, user: str | None = None, password: str = ""
) -> dict[str, Any]:
    props = load_properties(cluster.client_properties_path)
    conf: dict[str, Any] = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.ca.location": props["ssl.truststore.location"],
    }
    if user is None:  # the super user, from the JAAS line of the client config
        jaas = props["sasl.jaas.config"]
        user = jaas.split('username="')[1].split('"')[0]
        password = jaas.split('password="')[1].split('"')[0]
    return {**conf, "sasl.username": user, "sasl.password": password}


def test_the_super_user_administers_and_replicates_over_sasl_ssl(cluster: LocalCluster) -> None:
    config = str(cluster.client_properties_path)
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    r = kafpy("topics", "--bootstrap-server", cluster.bootstrap_servers, "--command-config",
              config, "--create", "--topic", topic, "--partitions", "2",
              "--replication-factor", "3")  # fmt: skip
    assert r.returncode == 0, r.stderr
    producer = Producer({**librdkafka_conf(cluster), "acks": "all"})
    for i in range(N):
        producer.produce(topic, b"v%d" % i)
    assert producer.flush(60) == 0  # acks=all: the followers fetched over SASL_SSL
    r = kafpy("topics", "--bootstrap-server", cluster.bootstrap_servers, "--command-config",
              config, "--describe", "--topic", topic)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("Isr: ") == 2 and all(
        len(line.split("Isr: ")[1].split(",")) == 3
        for line in r.stdout.splitlines()
        if "Isr: " in line
    ), r.stdout
    # a client without TLS and SASL gets nothing
    r = kafpy("topics", "--bootstrap-server", cluster.bootstrap_servers, "--list")
    assert r.returncode != 0 and topic not in r.stdout


def test_a_user_reads_only_what_its_acls_allow(cluster: LocalCluster) -> None:
    config = str(cluster.client_properties_path)
    bootstrap = cluster.bootstrap_servers
    readable, other = f"read-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    for topic in (readable, other):
        r = kafpy("topics", "--bootstrap-server", bootstrap, "--command-config", config,
                  "--create", "--topic", topic, "--replication-factor", "2")  # fmt: skip
        assert r.returncode == 0, r.stderr
    r = kafpy("configs", "--bootstrap-server", bootstrap, "--command-config", config, "--alter",
              "--entity-type", "users", "--entity-name", "alice", "--add-config",
              "SCRAM-SHA-512=[password=alice-secret]")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = kafpy("acls", "--bootstrap-server", bootstrap, "--command-config", config, "--add",
              "--allow-principal", "User:alice", "--consumer", "--topic", readable,
              "--group", "alice-group")  # fmt: skip
    assert r.returncode == 0, r.stderr
    admin_producer = Producer(librdkafka_conf(cluster))
    for topic in (readable, other):
        admin_producer.produce(topic, b"x")
    assert admin_producer.flush(60) == 0
    alice = librdkafka_conf(cluster, "alice", "alice-secret")
    consumer = Consumer({**alice, "group.id": "alice-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([readable])
        msg = None
        for _ in range(60):
            msg = consumer.poll(1)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.error() is None and msg.value() == b"x"
    finally:
        consumer.close()
    producer = Producer({**alice, "message.timeout.ms": 5000})
    errors: list[Any] = []
    producer.produce(readable, b"nope", on_delivery=lambda e, m: errors.append(e))
    producer.flush(15)
    assert errors and errors[0] is not None
    assert errors[0].name() == "TOPIC_AUTHORIZATION_FAILED"
