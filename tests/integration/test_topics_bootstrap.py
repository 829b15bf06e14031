"""`kafpy topics --bootstrap-server` against a real broker on a real ZooKeeper: the same
lines as the `--zookeeper` form reading the same cluster."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from tests.fixtures.broker import KafpyBroker

pytestmark = pytest.mark.zookeeper

WAIT_S = 60.0


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def cluster(
    zookeeper_connect: str, kafpy_broker_factory: Callable[..., KafpyBroker]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    broker = kafpy_broker_factory({"zookeeper.connect": zookeeper_connect})
    return (
        ("topics", "--bootstrap-server", broker.bootstrap),
        ("topics", "--zookeeper", zookeeper_connect),
    )


def both(cluster: tuple[tuple[str, ...], tuple[str, ...]], *args: str) -> tuple[str, str]:
    """The output of the same topic command in both forms (each must succeed)."""
    outputs = []
    for form in cluster:
        r = kafpy(*form, *args)
        assert r.returncode == 0, f"{form[1]}: {r.stderr}"
        outputs.append(r.stdout)
    return outputs[0], outputs[1]


def eventually_same(cluster: tuple[tuple[str, ...], tuple[str, ...]], *args: str) -> str:
    """Wait until both forms print the same (the controller acts asynchronously)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        via_broker, via_zk = both(cluster, *args)
        if via_broker == via_zk and "Leader: none" not in via_broker:
            return via_broker
        if time.monotonic() > deadline:
            assert via_broker == via_zk
        time.sleep(0.2)


def test_same_output_as_the_zookeeper_form(
    cluster: tuple[tuple[str, ...], tuple[str, ...]],
) -> None:
    bootstrap, zookeeper = cluster
    r = kafpy(
        *bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=1000",
    )
    assert (r.returncode, r.stdout, r.stderr) == (0, 'Created topic "orders".\n', "")
    r = kafpy(*zookeeper, "--create", "--topic", "payments", "--replica-assignment", "0,0")
    assert r.returncode == 0, r.stderr

    described = eventually_same(cluster, "--describe")
    assert (
        "Topic:orders\tPartitionCount:3\tReplicationFactor:1\tConfigs:retention.ms=1000\n"
        in described
    )
    assert "\tTopic: payments\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\n" in described
    assert both(cluster, "--list") == ("orders\npayments\n",) * 2

    r = kafpy(*bootstrap, "--alter", "--topic", "orders", "--partitions", "4")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "Adding partitions succeeded!"
    r = kafpy(
        *bootstrap,
        "--alter",
        "--topic",
        "orders",
        "--config",
        "cleanup.policy=compact",
        "--delete-config",
        "retention.ms",
    )
    assert r.returncode == 0, r.stderr
    assert 'Updated config for topic "orders".' in r.stdout
    described = eventually_same(cluster, "--describe", "--topic", "orders")
    assert described.splitlines()[0] == (
        "Topic:orders\tPartitionCount:4\tReplicationFactor:1\tConfigs:cleanup.policy=compact"
    )
    assert (
        eventually_same(cluster, "--describe", "--topics-with-overrides")
        == described.splitlines(True)[0]
    )

    r = kafpy(
        *bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    )
    assert r.returncode == 1
    assert r.stderr == "Error while executing topic command : Topic 'orders' already exists.\n"
    r = kafpy(
        *bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--if-not-exists",
    )
    assert (r.returncode, r.stdout) == (0, "")

    r = kafpy(*bootstrap, "--delete", "--topic", "payments")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "Topic payments is marked for deletion.\n"
        "Note: This will have no impact if delete.topic.enable is not set to true.\n"
    )
    deadline = time.monotonic() + WAIT_S
    while both(cluster, "--list") != ("orders\n", "orders\n"):
        assert time.monotonic() < deadline, both(cluster, "--list")
        time.sleep(0.2)
