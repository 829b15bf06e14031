"""Starting, stopping and restarting a real ZooKeeper with ZooKeeperServer."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

import kafpy.metadata.zookeeper_server as zookeeper_server_module
from kafpy.metadata.zookeeper_server import (
    CLASSPATH_ENV,
    ZooKeeperServer,
    ZooKeeperServerError,
    four_letter_word,
)
from kafpy.metadata.zookeeper_server import free_port as real_free_port

pytest_plugins = ["pytester"]


def test_the_shared_server_is_standalone_and_serves(zookeeper_server: ZooKeeperServer) -> None:
    assert zookeeper_server.running
    assert zookeeper_server.connect_string == f"127.0.0.1:{zookeeper_server.port}"
    assert "Mode: standalone" in four_letter_word("127.0.0.1", zookeeper_server.port, "srvr")
    assert four_letter_word("127.0.0.1", zookeeper_server.port, "ruok") == "imok"
    config = zookeeper_server.config_path.read_text()
    assert "tickTime=200\n" in config
    assert "clientPortAddress=127.0.0.1\n" in config
    assert "admin.enableServer=false\n" in config


def test_restart_keeps_the_port_and_the_data(tmp_path: Path) -> None:
    with ZooKeeperServer(tmp_path, tick_time_ms=200, force_sync=False) as server:
        port = server.port
        client = KazooClient(hosts=server.connect_string)
        client.start(timeout=20)
        client.create("/kept", b"data")
        client.stop()
        client.close()
        server.stop()
        assert not server.running
        server.start()
        assert server.port == port
        client = KazooClient(hosts=server.connect_string)
        client.start(timeout=20)
        try:
            assert client.get("/kept")[0] == b"data"
        finally:
            client.stop()
            client.close()
    assert not server.running
    assert server.pid is None


def test_a_server_that_cannot_start_reports_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLASSPATH_ENV, str(tmp_path / "no-such.jar"))
    server = ZooKeeperServer(tmp_path / "zk", startup_timeout_s=30)
    with pytest.raises(ZooKeeperServerError) as failure:
        server.start()
    message = str(failure.value)
    assert "exited with code" in message
    assert "QuorumPeerMain" in message  # the JVM's own complaint, from its output
    assert not server.running


def test_a_taken_port_is_an_error_when_asked_for(
    tmp_path: Path, zookeeper_server: ZooKeeperServer
) -> None:
    server = ZooKeeperServer(tmp_path, port=zookeeper_server.port, force_sync=False)
    try:
        with pytest.raises(ZooKeeperServerError, match="already in use"):
            server.start()
        assert not server.running
    finally:
        server.stop()


def test_a_free_port_taken_before_the_server_binds_it_is_given_up_for_another(
    tmp_path: Path, zookeeper_server: ZooKeeperServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the race the zookeeper_server fixture meets: the port picked is taken meanwhile
    picks = iter([zookeeper_server.port])
    monkeypatch.setattr(
        zookeeper_server_module, "free_port", lambda: next(picks, None) or real_free_port()
    )
    with ZooKeeperServer(tmp_path, tick_time_ms=200, force_sync=False) as server:
        assert server.port != zookeeper_server.port
        assert "Mode: standalone" in four_letter_word("127.0.0.1", server.port, "srvr")


def test_the_session_fixture_fails_the_test_when_zookeeper_cannot_start(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a JVM that finds no ZooKeeper on its classpath exits at once
    monkeypatch.setenv(CLASSPATH_ENV, str(pytester.path / "no-zookeeper.jar"))
    pytester.makeconftest('pytest_plugins = ["tests.fixtures.zookeeper"]\n')
    pytester.makepyfile("def test_needs_zookeeper(zookeeper_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*Failed: A real ZooKeeper is needed for this test and could not start: *"]
    )
