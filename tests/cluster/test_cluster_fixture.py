"""The cluster fixture (tests/fixtures/cluster.py) and the LocalCluster under it: brokers
start on port 0 and keep their port across restarts, and a start that fails fails with its
cause and the brokers' log tails."""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

import kafpy.tools.local_cluster as local_cluster
from kafpy.tools.local_cluster import LocalCluster, LocalClusterError
from tests.fixtures.ports import hold_port

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]


def test_a_broker_refusing_its_config_fails_the_fixture_with_its_log_tail(
    kafpy_cluster: Callable[..., LocalCluster],
) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        kafpy_cluster(1, {"num.partitions": "zero"})
    message = str(failed.value)
    assert "The cluster did not start: Broker 0 exited with code 1 while starting" in message
    assert "--- broker 0 (" in message  # the tail of its output follows
    assert "Invalid value zero for configuration num.partitions" in message


def test_brokers_advertise_the_port_they_bound_and_keep_it_across_a_restart(
    kafpy_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = kafpy_cluster(2)
    ports = {i: b.port for i, b in cluster.brokers.items()}
    assert 0 not in ports.values()
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=30)
    assert {i: (b.host, b.port) for i, b in metadata.brokers.items()} == {
        i: ("127.0.0.1", port) for i, port in ports.items()
    }
    cluster.stop_broker(1)
    cluster.wait_unregistered(1)
    holder = hold_port(ports[1])
    released = threading.Event()

    def release_port() -> None:
        holder.close()
        released.set()

    # released while the start tries again (BIND_RETRY_S is 10 s); each spawn rewrites the
    # broker's log, so the failed try shows in the start returning only after the release
    release = threading.Timer(1.0, release_port)
    release.start()
    try:
        cluster.start_broker(1)
        started_after_release = released.is_set()
    finally:
        release.join()
        holder.close()
    assert started_after_release
    assert cluster.brokers[1].port == ports[1]


def test_a_restart_on_a_port_held_for_good_fails_naming_the_port(
    kafpy_cluster: Callable[..., LocalCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_cluster, "BIND_RETRY_S", 1.0)
    cluster = kafpy_cluster(1)
    port = cluster.brokers[0].port
    cluster.stop_broker(0)
    with hold_port(port), pytest.raises(LocalClusterError) as failed:
        cluster.start_broker(0)
    assert f"Broker 0 could not bind its port {port} again within 1 s" in str(failed.value)


def _never_serving(tmp_path: Path) -> str:
    """An interpreter for LocalCluster(python=...) whose processes run and never serve."""
    path = tmp_path / "python-that-sleeps"
    path.write_text("#!/bin/sh\nexec sleep 60\n")
    path.chmod(0o755)
    return str(path)


def test_a_managed_zookeeper_exiting_while_starting_fails_the_start(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "dev", 1, python="/bin/false")
    with pytest.raises(LocalClusterError) as failed:
        cluster.start()
    assert str(failed.value).startswith("ZooKeeper exited with code 1 while starting: ")


def test_a_managed_zookeeper_not_serving_in_time_fails_the_start_and_is_stopped(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster(tmp_path / "dev", 1, python=_never_serving(tmp_path), start_timeout_s=1)
    with pytest.raises(LocalClusterError) as failed:
        cluster.start()
    assert f"ZooKeeper did not serve on {cluster.zookeeper.connect} within 1 s" in str(failed.value)
    assert not cluster.zookeeper.alive


def test_a_broker_not_binding_in_time_fails_naming_it(tmp_path: Path) -> None:
    # a ZooKeeper nobody serves: the broker waits for it before it binds its listeners
    with socket.socket() as unserved:
        unserved.bind(("127.0.0.1", 0))
        cluster = LocalCluster(
            tmp_path / "dev",
            1,
            zookeeper_connect=f"127.0.0.1:{unserved.getsockname()[1]}",
            overrides={"zookeeper.connection.timeout.ms": "60000"},
            start_timeout_s=2,
        )
        try:
            with pytest.raises(LocalClusterError) as failed:
                cluster.start_broker(0)
        finally:
            cluster.stop(timeout_s=15)
    assert str(failed.value) == (
        "Broker(s) 0 did not bind their listeners within 2 s "
        f"(see {cluster.brokers[0].output_path})."
    )
    assert not cluster.brokers[0].alive


def test_a_registration_that_stays_fails_the_wait_for_its_end(
    tmp_path: Path, zookeeper_connect: str
) -> None:
    client = KazooClient(hosts=zookeeper_connect, timeout=10.0)
    client.start(timeout=30)
    try:
        client.create("/brokers/ids/0", b"{}", makepath=True)
    finally:
        client.stop()
        client.close()
    cluster = LocalCluster(tmp_path / "dev", 1, zookeeper_connect=zookeeper_connect)
    with pytest.raises(LocalClusterError) as failed:
        cluster.wait_unregistered(0, timeout_s=1)
    assert str(failed.value) == "Broker 0 is still registered after 1 s."


def test_a_broker_that_stops_answering_fails_the_waits_naming_it(
    tmp_path: Path, zookeeper_connect: str
) -> None:
    cluster = LocalCluster(
        tmp_path / "dev", 1, zookeeper_connect=zookeeper_connect,
        overrides={"zookeeper.session.timeout.ms": "2000"},
    )  # fmt: skip
    cluster.start()
    broker = cluster.brokers[0]
    try:
        os.kill(broker.pid, signal.SIGSTOP)  # it keeps its port and answers nothing
        try:
            with pytest.raises(LocalClusterError) as no_metadata:
                cluster.wait_for_metadata([0], timeout_s=1)
            cluster.wait_unregistered(0, timeout_s=30)  # its ZooKeeper session expired
            with pytest.raises(LocalClusterError) as unregistered:
                cluster.wait_registered([0], timeout_s=1)
        finally:
            os.kill(broker.pid, signal.SIGCONT)
    finally:
        cluster.stop(timeout_s=15)
    assert str(no_metadata.value) == (
        "Broker(s) 0 did not answer Metadata with every live broker and a controller within "
        f"1 s (see {broker.output_path})."
    )
    assert str(unregistered.value) == (
        f"Broker(s) 0 did not register in ZooKeeper within 1 s (see {broker.output_path})."
    )
