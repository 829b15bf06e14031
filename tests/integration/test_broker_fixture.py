"""The broker fixture (tests/fixtures/broker.py) itself: brokers on port 0 report the port
they bound, a restart binds it again, and every way a start can fail fails the test with
its cause and the broker's log tail."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

import tests.fixtures.broker as broker_fixture
from kafpy.network.bound_ports import read_bound_ports
from tests.fixtures.broker import KafpyBroker, free_port
from tests.fixtures.ports import hold_port


@pytest.fixture
def broker_dir(tmp_path: Path) -> Path:
    return tmp_path / "broker"


def test_a_broker_on_port_0_reports_and_advertises_the_port_it_bound(broker_dir: Path) -> None:
    broker = KafpyBroker(broker_dir)
    assert broker.port == 0
    try:
        broker.start()
        assert broker.port != 0
        assert read_bound_ports(broker.bound_ports_path) == {"PLAINTEXT": broker.port}
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=30)
        (advertised,) = metadata.brokers.values()
        assert (advertised.host, advertised.port) == ("127.0.0.1", broker.port)
        port = broker.port
        broker.restart()
        assert broker.port == port
        assert read_bound_ports(broker.bound_ports_path) == {"PLAINTEXT": port}
    finally:
        broker.stop()


def test_a_restart_waits_for_its_old_port_to_be_released(broker_dir: Path) -> None:
    broker = KafpyBroker(broker_dir)
    try:
        broker.start()
        port = broker.port
        broker.stop()
        holder = hold_port(port)
        released = threading.Event()

        def release_port() -> None:
            holder.close()
            released.set()

        # released while the restart tries again (BIND_RETRY_S is 10 s)
        release = threading.Timer(1.0, release_port)
        release.start()
        try:
            broker.start()
            # the start returned only once the port was free: it waited, it did not fail
            started_after_release = released.is_set()
        finally:
            release.join()
            holder.close()
        assert started_after_release
        assert broker.port == port
    finally:
        broker.stop()


def test_a_restart_on_a_port_held_for_good_fails_naming_the_port(
    broker_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_fixture, "BIND_RETRY_S", 1.0)
    broker = KafpyBroker(broker_dir)
    try:
        broker.start()
        port = broker.port
        broker.stop()
        with hold_port(port), pytest.raises(pytest.fail.Exception) as failed:
            broker.start()
    finally:
        broker.stop()
    message = str(failed.value)
    assert f"could not bind its listeners PLAINTEXT://127.0.0.1:{port} again" in message
    assert f"listener PLAINTEXT cannot bind 127.0.0.1:{port}: address already in use" in message


def test_a_broker_refusing_its_config_fails_the_start_with_the_cause(broker_dir: Path) -> None:
    broker = KafpyBroker(broker_dir, {"num.partitions": "zero"})
    with pytest.raises(pytest.fail.Exception) as failed:
        broker.start()
    message = str(failed.value)
    assert "kafpy server exited with status 1 while starting" in message
    # the log tail
    assert "Invalid value zero for configuration num.partitions" in message


def test_a_fixed_port_taken_by_another_process_fails_the_start_naming_it(
    broker_dir: Path,
) -> None:
    port = free_port()
    with hold_port(port):
        broker = KafpyBroker(broker_dir, {"listeners": f"PLAINTEXT://127.0.0.1:{port}"})
        with pytest.raises(pytest.fail.Exception) as failed:
            broker.start()
    message = str(failed.value)
    assert "exited with status 1 while starting" in message
    assert f"cannot bind 127.0.0.1:{port}: address already in use" in message


def test_a_broker_that_does_not_start_in_time_is_killed_and_fails_the_start(
    broker_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        broker_fixture, "START_TIMEOUT_S", 5.0
    )  # the log must show a try even under load
    # a ZooKeeper nobody serves: the broker waits for it before it binds its listeners
    with socket.socket() as unserved:
        unserved.bind(("127.0.0.1", 0))
        broker = KafpyBroker(
            broker_dir,
            {
                "zookeeper.connect": f"127.0.0.1:{unserved.getsockname()[1]}",
                "zookeeper.connection.timeout.ms": "60000",
            },
        )
        with pytest.raises(pytest.fail.Exception) as failed:
            broker.start()
    assert broker.process is not None and broker.process.poll() is not None
    message = str(failed.value)
    assert "kafpy server (PLAINTEXT://127.0.0.1:0) did not start within 5 s" in message
    # the log tail: the broker's ZooKeeper client failing to connect
    assert "Connection refused" in message
