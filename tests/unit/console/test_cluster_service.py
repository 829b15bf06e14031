"""ClusterService's parameter handling and failures that need no broker."""

from __future__ import annotations

import asyncio
import socket

import pytest

from kafpy.console.cluster_service import (
    MAX_LIMIT,
    ClusterService,
    ConsoleError,
    format_timestamp,
    parse_timestamp,
)


def test_timestamps_in_ms_or_iso() -> None:
    assert parse_timestamp("1700000000000") == 1700000000000
    assert parse_timestamp("2026-11-23T10:00:00") == 1795428000000
    assert parse_timestamp("2026-11-23T11:00:00+01:00") == 1795428000000
    with pytest.raises(ConsoleError, match="neither ms since the epoch nor an ISO date"):
        parse_timestamp("yesterday")


def test_format_timestamp() -> None:
    assert format_timestamp(1795428000123) == "2026-11-23T10:00:00.123+00:00"
    assert format_timestamp(-1) == "-"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.asyncio
async def test_unreachable_cluster_is_a_503_naming_the_servers() -> None:
    bootstrap = f"127.0.0.1:{_closed_port()}"
    service = ClusterService(bootstrap, timeout_s=10)
    try:
        with pytest.raises(ConsoleError) as e:
            await service.topics()
    finally:
        await service.close()
    assert e.value.status == 503
    assert e.value.title == "Cannot reach the cluster"
    assert e.value.tried == f"Listing the topics (bootstrap servers: {bootstrap})"
    assert e.value.detail.startswith(f"Could not connect to bootstrap broker ({bootstrap})")
    assert e.value.detail.count("Check") == 1


@pytest.mark.asyncio
async def test_a_hung_broker_times_out_instead_of_hanging() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def never_answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    service = ClusterService(f"127.0.0.1:{port}", timeout_s=0.5)
    try:
        with pytest.raises(ConsoleError) as e:
            await service.brokers()
    finally:
        await service.close()
        for w in accepted:
            w.close()
        server.close()
        await server.wait_closed()
    assert e.value.status == 504
    assert "No answer within 0.5 s" in e.value.detail
    assert accepted, "the console never tried the broker"


@pytest.mark.asyncio
async def test_bad_message_requests_are_refused_before_asking_the_cluster() -> None:
    service = ClusterService(f"127.0.0.1:{_closed_port()}")
    try:
        with pytest.raises(ConsoleError, match=f"between 1 and {MAX_LIMIT}"):
            await service.messages("t", 0, limit=MAX_LIMIT + 1)
        with pytest.raises(ConsoleError, match="either an offset or a timestamp"):
            await service.messages("t", 0, offset=1, timestamp=2)
        with pytest.raises(ConsoleError, match="Unknown reset 'middle'"):
            await service.reset_group_offsets("g", "t", "middle")
    finally:
        await service.close()


@pytest.mark.asyncio
async def test_log_dirs_and_sizes_where_the_broker_serves_describe_log_dirs() -> None:
    """Kafka serves DescribeLogDirs (kafpy's broker does not yet): against a broker that
    advertises it, the console shows each log dir's size and each topic's size."""
    from kafpy.protocol.api_keys import ApiKey
    from tests.unit.client.fake_broker import FakeBroker, metadata_body
    from tests.unit.client.test_admin_client import log_dirs_answer

    broker = FakeBroker(node_id=0)
    broker.versions[int(ApiKey.DESCRIBE_LOG_DIRS)] = (0, 2)
    await broker.start()
    broker.handlers[ApiKey.METADATA] = lambda h, b: metadata_body(
        [broker], topics={"a": {0: 0, 1: 0}}
    )
    broker.handlers[ApiKey.DESCRIBE_LOG_DIRS] = log_dirs_answer
    service = ClusterService(broker.address)
    try:
        [b] = (await service.brokers())["brokers"]
        assert b["log_dirs_note"] is None
        healthy, offline = b["log_dirs"]
        assert (healthy["path"], healthy["size"], healthy["replicas"], healthy["error"]) == (
            "/data/a",
            1244,
            2,
            None,
        )
        assert offline["path"] == "/data/b"
        assert "Disk error" in offline["error"]
        [topic] = (await service.topics())["topics"]
        assert (topic["name"], topic["size"]) == ("a", 1234)  # the future log is not counted
    finally:
        await service.close()
        await broker.stop()
