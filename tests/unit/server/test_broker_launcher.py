"""BrokerLauncher (kafpy/server/broker_launcher.py) on real `kafpy server` processes: the
ports a start learns, and each way a start or a stop fails."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafpy.server.broker_launcher import (
    BrokerExited,
    BrokerLauncher,
    BrokerStartTimeout,
    PortHeld,
    server_command,
)
from tests.fixtures.broker import free_port
from tests.fixtures.ports import hold_port

STOP_S = 30.0


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[BrokerLauncher]:
    launcher = BrokerLauncher(tmp_path / "broker.out", tmp_path / "bound-ports.json")
    try:
        yield launcher
    finally:
        launcher.stop(STOP_S)


def _spawner(launcher: BrokerLauncher, tmp_path: Path, **overrides: str) -> Callable[[], None]:
    """A `spawn` for launcher.start: a broker on the port of its last start (0 at first)."""

    def spawn() -> None:
        port = launcher.ports.get("PLAINTEXT", 0)
        values = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(tmp_path / "data")}
        command = server_command(
            {**values, **overrides}, bound_ports_file=launcher.bound_ports_path
        )
        launcher.spawn_process(command)

    return spawn


def test_a_start_learns_the_ports_and_a_stop_is_clean(
    launcher: BrokerLauncher, tmp_path: Path
) -> None:
    ports = launcher.start(_spawner(launcher, tmp_path), 60)
    assert set(ports) == {"PLAINTEXT"} and ports["PLAINTEXT"] != 0
    socket.create_connection(("127.0.0.1", ports["PLAINTEXT"]), timeout=5).close()
    assert launcher.stop(STOP_S) == 0
    assert launcher.stop(STOP_S) == 0  # stopped already: its status again


def test_a_process_exiting_while_starting_fails_with_its_status_and_output(
    launcher: BrokerLauncher, tmp_path: Path
) -> None:
    with pytest.raises(BrokerExited) as exited:
        launcher.start(_spawner(launcher, tmp_path, **{"num.partitions": "zero"}), 60)
    assert exited.value.code == 1
    assert str(exited.value) == "kafpy server exited with status 1 while starting"
    assert "Invalid value zero for configuration num.partitions" in exited.value.output


def test_a_first_start_on_a_taken_port_is_not_retried(
    launcher: BrokerLauncher, tmp_path: Path
) -> None:
    port = free_port()
    spawn = _spawner(launcher, tmp_path, listeners=f"PLAINTEXT://127.0.0.1:{port}")
    with hold_port(port), pytest.raises(BrokerExited) as exited:
        launcher.start(spawn, 60)
    assert f"cannot bind 127.0.0.1:{port}: address already in use" in exited.value.output


def test_a_restart_on_a_port_held_for_good_fails_after_the_retry(
    launcher: BrokerLauncher, tmp_path: Path
) -> None:
    spawn = _spawner(launcher, tmp_path)
    port = launcher.start(spawn, 60)["PLAINTEXT"]
    launcher.stop(STOP_S)
    with hold_port(port), pytest.raises(PortHeld) as held:
        launcher.start(spawn, 60, bind_retry_s=1.0)
    assert "could not bind its ports again within 1 s" in str(held.value)
    assert f"cannot bind 127.0.0.1:{port}: address already in use" in held.value.output
    # the output is the last try's, not that of the start before
    assert held.value.output.count("address already in use") == 1


def test_a_process_that_does_not_bind_in_time_fails_and_is_left_running(
    launcher: BrokerLauncher, tmp_path: Path
) -> None:
    # a ZooKeeper nobody serves: the broker waits for it before it binds its listeners
    with socket.socket() as unserved:
        unserved.bind(("127.0.0.1", 0))
        spawn = _spawner(
            launcher,
            tmp_path,
            **{
                "zookeeper.connect": f"127.0.0.1:{unserved.getsockname()[1]}",
                "zookeeper.connection.timeout.ms": "60000",
            },
        )
        with pytest.raises(BrokerStartTimeout) as timed_out:
            launcher.start(spawn, 2.0)
    assert "did not bind its listeners within 2 s" in str(timed_out.value)
    assert launcher.process is not None and launcher.process.poll() is None


def test_a_stop_that_takes_too_long_kills_the_process(
    launcher: BrokerLauncher, tmp_path: Path
) -> None:
    launcher.start(_spawner(launcher, tmp_path), 60)
    assert launcher.process is not None
    launcher.process.send_signal(signal.SIGSTOP)  # it cannot act on the SIGTERM
    assert launcher.stop(0.5) is None
    assert launcher.process.returncode == -signal.SIGKILL
