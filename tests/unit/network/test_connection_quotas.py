"""Tests of ConnectionQuotas, on a real SocketServer over loopback (127.0.0.1 and 127.0.0.2
as two client addresses): per-IP limits and overrides, listener and broker-wide
max.connections (the acceptor waits), the inter-broker listener's exemption, creation
rates (the acceptor is delayed: asserted through the quota's metrics) and IP rate quotas
(the connection is closed after a delay)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.network.connection_quotas import (
    INT_MAX,
    ConnectionQuotaConfig,
    ConnectionQuotas,
    parse_max_connections_per_ip_overrides,
)
from kafpy.network.socket_server import SocketServer
from kafpy.testing.wait import async_wait_until
from tests.unit.network.test_socket_server import EchoHandler, metadata_request, read_response

LOGGER = "kafpy.network.SocketServer"
OTHER_ADDRESS = "127.0.0.2"
WAIT_S = 10.0

Scenario = Callable[[SocketServer], Awaitable[None]]


def with_quotas(
    config: ConnectionQuotaConfig,
    scenario: Scenario,
    listeners: Sequence[str] = ("PLAINTEXT",),
) -> None:
    async def main() -> None:
        server = SocketServer(
            [(name, "127.0.0.1", 0) for name in listeners],
            security_protocols={name: "PLAINTEXT" for name in listeners},
            connection_quotas=ConnectionQuotas(config),
        )
        await server.startup(EchoHandler())
        try:
            await asyncio.wait_for(scenario(server), 60)
        finally:
            await server.shutdown()

    asyncio.run(main())


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def connect(
    server: SocketServer, source: str = "127.0.0.1", listener: str = "PLAINTEXT"
) -> Conn:
    return await asyncio.open_connection(
        "127.0.0.1", server.bound_port(listener), local_addr=(source, 0)
    )


async def served(conn: Conn, correlation_id: int = 1, timeout: float = WAIT_S) -> bool:
    """Whether the connection answers a Metadata request (False: closed by the broker)."""
    reader, writer = conn
    try:
        writer.write(metadata_request(correlation_id))
        await writer.drain()
        cid, _ = await asyncio.wait_for(read_response(reader), timeout)
        return bool(cid == correlation_id)
    except (asyncio.IncompleteReadError, ConnectionError):
        return False


async def closed_by_broker(conn: Conn, timeout: float = WAIT_S) -> bool:
    try:
        return await asyncio.wait_for(conn[0].read(1), timeout) == b""
    except ConnectionError:
        return True


def test_500_connections_from_one_address_against_max_connections_per_ip_100(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(server: SocketServer) -> None:
        conns = [await connect(server) for _ in range(100)]
        await async_wait_until(lambda: server.connection_quotas.get("127.0.0.1") == 100, WAIT_S)
        extra = [await connect(server) for _ in range(400)]
        # every connection over the limit is closed at once, never served
        closed = await asyncio.gather(*(closed_by_broker(c) for c in extra))
        assert all(closed)
        assert server.connection_quotas.get("127.0.0.1") == 100
        # the first 100 are still served, and so is every other address
        results = await asyncio.gather(*(served(c, i) for i, c in enumerate(conns)))
        assert all(results)
        others = [await connect(server, OTHER_ADDRESS) for _ in range(20)]
        assert all(await asyncio.gather(*(served(c, i) for i, c in enumerate(others))))
        assert server.connection_quotas.get(OTHER_ADDRESS) == 20
        # a slot freed is a slot the address may use again
        conns[0][1].close()
        await async_wait_until(lambda: server.connection_quotas.get("127.0.0.1") == 99, WAIT_S)
        assert await served(await connect(server), 7)
        for _, writer in conns[1:] + extra + others:
            writer.close()

    with caplog.at_level(logging.INFO, logger=LOGGER):
        with_quotas(ConnectionQuotaConfig(max_connections_per_ip=100), scenario)
    assert (
        "Rejected connection from /127.0.0.1, address already has the configured maximum of "
        "100 connections." in caplog.text
    )


def test_an_override_raises_or_lowers_one_address_limit() -> None:
    config = ConnectionQuotaConfig(
        max_connections_per_ip=0,
        max_connections_per_ip_overrides=parse_max_connections_per_ip_overrides(
            "127.0.0.1:3,127.0.0.2:1"
        ),
    )

    async def scenario(server: SocketServer) -> None:
        ones = [await connect(server) for _ in range(4)]
        assert [await served(c, i) for i, c in enumerate(ones[:3])] == [True] * 3
        assert await closed_by_broker(ones[3])
        twos = [await connect(server, OTHER_ADDRESS) for _ in range(2)]
        assert await served(twos[0])
        assert await closed_by_broker(twos[1])
        for _, writer in ones + twos:
            writer.close()

    with_quotas(config, scenario)


def test_listener_max_connections_makes_the_acceptor_wait_for_a_slot() -> None:
    config = ConnectionQuotaConfig(
        listener_max_connections={"PLAINTEXT": 2}, inter_broker_listener_name="PLAINTEXT"
    )

    async def scenario(server: SocketServer) -> None:
        quotas = server.connection_quotas
        first = [await connect(server) for _ in range(2)]
        third = await connect(server)  # TCP-connected (backlog), not taken by the broker
        await asyncio.sleep(0.3)
        assert quotas.listener_count("PLAINTEXT") == 2
        served_third = asyncio.ensure_future(served(third, 3))
        await asyncio.sleep(0.3)
        assert not served_third.done()  # waiting, not closed
        first[0][1].close()  # a slot frees: the third is taken and served
        assert await served_third
        assert quotas.listener_count("PLAINTEXT") == 2
        assert quotas.listener_metrics("PLAINTEXT").blocked_time_ns > 0
        for _, writer in first[1:] + [third]:
            writer.close()

    with_quotas(config, scenario)


def test_inter_broker_listener_exempt_from_max_connections_closes_lru_of_others() -> None:
    config = ConnectionQuotaConfig(max_connections=2, inter_broker_listener_name="INTERNAL")

    async def scenario(server: SocketServer) -> None:
        quotas = server.connection_quotas
        old = await connect(server, listener="EXTERNAL")
        assert await served(old, 1)
        recent = await connect(server, listener="EXTERNAL")
        assert await served(recent, 2)
        # the external listener is full: its acceptor waits
        waiting = await connect(server, listener="EXTERNAL")
        # the inter-broker listener is exempt: taken at once, and the least recently used
        # external connection makes room
        internal = await connect(server, listener="INTERNAL")
        assert await served(internal, 3)
        assert await closed_by_broker(old)
        assert await served(recent, 4)
        assert quotas.total_count == 2
        assert not quotas.max_connections_exceeded("EXTERNAL")
        for _, writer in (recent, waiting, internal):
            writer.close()

    with_quotas(config, scenario, listeners=("EXTERNAL", "INTERNAL"))


def test_lowering_max_connections_dynamically_closes_the_excess() -> None:
    async def scenario(server: SocketServer) -> None:
        conns = [await connect(server) for _ in range(4)]
        assert all([await served(c, i) for i, c in enumerate(conns)])
        server.reconfigure_connection_quotas(
            ConnectionQuotaConfig(max_connections=2, inter_broker_listener_name="INTERNAL")
        )
        closed = await asyncio.gather(*(closed_by_broker(c, 2) for c in conns[:2]))
        assert all(closed)  # the two least recently used
        assert await served(conns[3], 9)
        assert server.connection_quotas.total_count == 2
        for _, writer in conns:
            writer.close()

    with_quotas(ConnectionQuotaConfig(inter_broker_listener_name="INTERNAL"), scenario)


def test_broker_connection_creation_rate_delays_the_acceptor() -> None:
    config = ConnectionQuotaConfig(max_connection_creation_rate=5, quota_window_num=2)

    async def scenario(server: SocketServer) -> None:
        conns = [await connect(server) for _ in range(15)]
        # each connection is taken (delayed, never closed)
        assert all(await asyncio.gather(*(served(c, i, 30) for i, c in enumerate(conns))))
        metrics = server.connection_quotas.listener_metrics("PLAINTEXT")
        assert metrics.throttle_count > 0
        assert metrics.connection_accept_throttle_time > 0
        assert metrics.blocked_time_ns > 0
        for _, writer in conns:
            writer.close()

    with_quotas(config, scenario)


def test_listener_connection_creation_rate_delays_only_its_listener() -> None:
    config = ConnectionQuotaConfig(
        listener_max_connection_creation_rate={"SLOW": 3},
        inter_broker_listener_name="FAST",
        quota_window_num=2,
    )

    async def scenario(server: SocketServer) -> None:
        slow = [await connect(server, listener="SLOW") for _ in range(10)]
        fast = [await connect(server, listener="FAST") for _ in range(6)]
        assert all(await asyncio.gather(*(served(c, i) for i, c in enumerate(fast))))
        assert all(await asyncio.gather(*(served(c, i, 30) for i, c in enumerate(slow))))
        quotas = server.connection_quotas
        assert quotas.listener_metrics("SLOW").throttle_count > 0
        assert quotas.listener_metrics("FAST").throttle_count == 0
        for _, writer in slow + fast:
            writer.close()

    with_quotas(config, scenario, listeners=("SLOW", "FAST"))


def test_ip_connection_rate_quota_closes_the_excess_after_a_delay() -> None:
    async def scenario(server: SocketServer) -> None:
        quotas = server.connection_quotas
        quotas.update_ip_connection_rate_quota("127.0.0.1", 2)
        conns = [await connect(server) for _ in range(8)]
        results = await asyncio.gather(*(served(c, i) for i, c in enumerate(conns)))
        assert 1 <= sum(results) < 8  # the first ones served, the rest throttled and closed
        assert quotas.listener_metrics("PLAINTEXT").ip_throttle_count > 0
        assert quotas.get("127.0.0.1") == sum(results)  # throttled ones were never counted
        # another address is not held to it
        others = [await connect(server, OTHER_ADDRESS) for _ in range(8)]
        assert all(await asyncio.gather(*(served(c, i) for i, c in enumerate(others))))
        # a quota of 0 blocks the address; removing it lifts the quota
        quotas.update_ip_connection_rate_quota(None, 0)
        blocked = await connect(server, OTHER_ADDRESS)
        assert not await served(blocked)
        quotas.update_ip_connection_rate_quota(None, None)
        quotas.update_ip_connection_rate_quota("127.0.0.1", None)
        assert quotas.connection_rate_for_ip("127.0.0.1") == INT_MAX
        assert await served(await connect(server, OTHER_ADDRESS))
        for _, writer in conns + others:
            writer.close()

    with_quotas(ConnectionQuotaConfig(quota_window_num=2), scenario)


def test_config_from_props() -> None:
    props = {
        "max.connections.per.ip": "10",
        "max.connections.per.ip.overrides": "127.0.0.1:20, localhost:30",
        "max.connections": "100",
        "listener.name.external.max.connections": "50",
        "listener.name.external.max.connection.creation.rate": "7",
    }
    config = ConnectionQuotaConfig.from_props(props, ["EXTERNAL", "INTERNAL"], "INTERNAL")
    assert config.max_connections_per_ip == 10
    assert config.max_connections_per_ip_overrides["127.0.0.1"] in (20, 30)
    assert config.max_connections == 100 and config.max_connection_creation_rate == INT_MAX
    assert config.listener_max_connections == {"EXTERNAL": 50}
    assert config.listener_max_connection_creation_rate == {"EXTERNAL": 7}
    assert config.failed_authentication_delay_ms == 100
    assert ConnectionQuotaConfig.from_props({}, ["PLAINTEXT"]).max_connections_per_ip == INT_MAX


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"max.connections.per.ip": "0"},
         "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
         "property is set."),
        ({"max.connections.per.ip.overrides": "127.0.0.1"},
         "it must be in the format 'key1:value1,key2:value2'"),
        ({"max.connections.per.ip.overrides": "bad/host:3"},
         "max.connections.per.ip.overrides contains invalid addresses : bad/host"),
        ({"max.connections": "-1"}, "max.connections"),
        ({"listener.name.plaintext.max.connections": "0"}, "Invalid max.connections 0"),
    ],
)  # fmt: skip
def test_config_errors_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=".*") as e:
        ConnectionQuotaConfig.from_props(props, ["PLAINTEXT"])
    assert message in str(e.value)
