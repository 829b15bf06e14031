"""Connection quotas against a real `kafpy server`: 500 connections from one address against
max.connections.per.ip=100 (the first 100 and every other address are served), limits
changed dynamically with `kafpy configs --entity-type brokers`, and IP connection-rate
quotas set with `kafpy configs --entity-type ips`. Client addresses are loopback aliases
(127.0.0.3 and up) so that the broker's own connections (from 127.0.0.1) do not count."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
from collections.abc import Callable

import pytest

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, encode_request
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker

ONE_ADDRESS = "127.0.0.3"
OTHER_ADDRESS = "127.0.0.2"


def connect(broker: KafpyBroker, source: str) -> socket.socket:
    sock = socket.create_connection(
        (broker.host, broker.port), timeout=10, source_address=(source, 0)
    )
    return sock


def served(sock: socket.socket, correlation_id: int = 1) -> bool:
    """Whether the broker answers an ApiVersions request on this connection."""
    frame = encode_request(RequestHeader(ApiKey.API_VERSIONS, 0, correlation_id, "quota-test"), {})
    try:
        sock.sendall(frame)
        head = sock.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return False
        (size,) = struct.unpack(">i", head)
        body = sock.recv(size, socket.MSG_WAITALL)
        return struct.unpack(">i", body[:4])[0] == correlation_id
    except OSError:
        return False


def configs(broker: KafpyBroker, *args: str, ok: bool = True) -> str:
    r = subprocess.run([sys.executable, "-m", "kafpy", "configs", "--bootstrap-server",
                        broker.bootstrap, *args], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (r.returncode == 0) == ok, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout if ok else r.stderr


def test_500_connections_from_one_address_against_max_connections_per_ip_100(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory({"max.connections.per.ip": "100"})
    conns = [connect(broker, ONE_ADDRESS) for _ in range(500)]
    try:
        results = [served(c, i) for i, c in enumerate(conns)]
        assert results[:100] == [True] * 100
        assert not any(results[100:])
        others = [connect(broker, OTHER_ADDRESS) for _ in range(10)]
        assert all(served(c, i) for i, c in enumerate(others))
        assert all(served(c, 1000 + i) for i, c in enumerate(conns[:100]))  # still served
        for c in others:
            c.close()
    finally:
        for c in conns:
            c.close()
    log = broker.log_path.read_text()
    assert (
        f"Rejected connection from /{ONE_ADDRESS}, address already has the configured maximum "
        "of 100 connections." in log
    )


def test_connection_limits_change_dynamically(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory()
    out = configs(broker, "--alter", "--entity-type", "brokers", "--entity-default",
                  "--add-config", "max.connections.per.ip=2,"
                  f"max.connections.per.ip.overrides=[{OTHER_ADDRESS}:3]")  # fmt: skip
    assert "Completed updating default config for brokers in the cluster." in out
    ones = [connect(broker, ONE_ADDRESS) for _ in range(3)]
    others = [connect(broker, OTHER_ADDRESS) for _ in range(4)]
    try:
        assert [served(c) for c in ones] == [True, True, False]
        assert [served(c) for c in others] == [True, True, True, False]
    finally:
        for c in ones + others:
            c.close()
    err = configs(broker, "--alter", "--entity-type", "brokers", "--entity-name", "0",
                  "--add-config", "listener.name.plaintext.max.connections=0", ok=False)  # fmt: skip
    assert "Invalid max.connections 0" in err


def test_ip_connection_rate_quota_through_kafpy_configs(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory()
    out = configs(broker, "--alter", "--entity-type", "ips", "--entity-name", ONE_ADDRESS,
                  "--add-config", "connection_creation_rate=0")  # fmt: skip
    assert out.strip() == f"Completed updating config for ip {ONE_ADDRESS}."
    out = configs(broker, "--describe", "--entity-type", "ips", "--entity-name", ONE_ADDRESS)
    assert out.strip() == f"Quota configs for ip '{ONE_ADDRESS}' are connection_creation_rate=0.0"
    configs(broker, "--alter", "--entity-type", "ips", "--entity-default",
            "--add-config", "connection_creation_rate=100")  # fmt: skip
    out = configs(broker, "--describe", "--entity-type", "ips")
    assert "Quota configs for the default ip are connection_creation_rate=100.0" in out

    def blocked() -> bool:
        sock = connect(broker, ONE_ADDRESS)
        try:
            return not served(sock)
        finally:
            sock.close()

    # the brokers apply the change through /config/changes: wait for it
    wait_until(blocked, 15)
    other = connect(broker, OTHER_ADDRESS)
    assert served(other)
    other.close()
    configs(broker, "--alter", "--entity-type", "ips", "--entity-name", ONE_ADDRESS,
            "--delete-config", "connection_creation_rate")  # fmt: skip
    wait_until(lambda: not blocked(), 15)

    err = configs(broker, "--alter", "--entity-type", "ips", "--entity-name", "1.2.3.4.5",
                  "--add-config", "connection_creation_rate=1", ok=False)  # fmt: skip
    assert (
        "The entity name for ips must be a valid IP or resolvable host, but it is: 1.2.3.4.5" in err
    )
    err = configs(broker, "--alter", "--entity-type", "ips", "--entity-name", ONE_ADDRESS,
                  "--add-config", "producer_byte_rate=1", ok=False)  # fmt: skip
    assert (
        "Only connection quota configs can be added for 'ips' using --bootstrap-server. "
        "Unexpected config names: producer_byte_rate" in err
    )
    err = configs(broker, "--alter", "--entity-type", "ips", "--entity-name", ONE_ADDRESS,
                  "--add-config", "connection_creation_rate=-1", ok=False)  # fmt: skip
    assert "Value must be at least 0" in err


@pytest.fixture(autouse=True)
def _loopback_aliases() -> None:
    try:
        s = socket.socket()
        s.bind((ONE_ADDRESS, 0))
        s.close()
    except OSError:
        pytest.skip(f"{ONE_ADDRESS} is not a loopback address here")
