"""BrokerConnection against a FakeBroker: framing, pipelining, versions, timeouts, loss."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from kafpy.client.connection import BrokerConnection, ConnectionState, client_version_range
from kafpy.common.errors import (
    KafkaConnectionError,
    KafkaError,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import REQUESTS
from tests.unit.client.fake_broker import CLOSE, NO_RESPONSE, FakeBroker, Raw, metadata_body

OUR_API_VERSIONS_MAX = REQUESTS[ApiKey.API_VERSIONS].valid_versions[1]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def connection(broker: FakeBroker, **kwargs: Any) -> BrokerConnection:
    return BrokerConnection("127.0.0.1", broker.port, node_id=broker.node_id, **kwargs)


def test_connect_learns_versions_and_picks_the_highest_common_one() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            broker.versions[int(ApiKey.METADATA)] = (0, 4)
            broker.handlers[ApiKey.METADATA] = lambda h, b: metadata_body([broker])
            conn = connection(broker, client_id="tester")
            assert not conn.connected
            await conn.connect()
            assert conn.connected and conn.state is ConnectionState.READY
            assert conn.api_versions[int(ApiKey.METADATA)] == (0, 4)
            assert conn.pick_version(ApiKey.METADATA) == 4
            body = await conn.send(ApiKey.METADATA, {"topics": None})
            assert body["brokers"][0]["port"] == broker.port
            request = broker.requests_of(ApiKey.METADATA)[0]
            assert request.header.api_version == 4
            assert request.header.client_id == "tester"
            # the frame the broker read was exactly one int32-prefixed request
            assert request.body["topics"] is None
            await conn.close()

    run(scenario())


def test_api_versions_fallback_on_unsupported_version() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            broker.versions[int(ApiKey.API_VERSIONS)] = (0, 2)
            assert OUR_API_VERSIONS_MAX > 2, "the codec should know a flexible ApiVersions"
            conn = connection(broker)
            await conn.connect()
            seen = [r.header.api_version for r in broker.requests_of(ApiKey.API_VERSIONS)]
            assert seen == [OUR_API_VERSIONS_MAX, 2]
            assert conn.api_versions[int(ApiKey.API_VERSIONS)] == (0, 2)
            assert int(ApiKey.PRODUCE) in conn.api_versions
            await conn.close()

    run(scenario())


def test_api_versions_at_our_highest_needs_no_retry() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            broker.versions[int(ApiKey.API_VERSIONS)] = (0, OUR_API_VERSIONS_MAX)
            conn = connection(broker)
            await conn.connect()
            seen = [r.header.api_version for r in broker.requests_of(ApiKey.API_VERSIONS)]
            assert seen == [OUR_API_VERSIONS_MAX]
            await conn.close()

    run(scenario())


def test_unsupported_version_without_a_lower_range_is_refused() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:

            def refuse(h: Any, b: Any) -> dict[str, Any]:
                return {
                    "error_code": 35,
                    "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 99}],
                }

            broker.handlers[ApiKey.API_VERSIONS] = refuse
            broker.versions[int(ApiKey.API_VERSIONS)] = (0, 99)
            conn = connection(broker)
            with pytest.raises(UnsupportedVersionError, match="ApiVersions"):
                await conn.connect()
            assert conn.state is ConnectionState.DISCONNECTED

    run(scenario())


def test_no_common_version_and_unknown_api() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            lo, hi = client_version_range(ApiKey.METADATA)
            broker.versions[int(ApiKey.METADATA)] = (hi + 1, hi + 3)
            del broker.versions[int(ApiKey.PRODUCE)]
            conn = connection(broker)
            await conn.connect()
            with pytest.raises(UnsupportedVersionError, match="no version in common"):
                await conn.send(ApiKey.METADATA, {})
            with pytest.raises(UnsupportedVersionError, match="does not support the Produce"):
                await conn.send(ApiKey.PRODUCE, {})
            with pytest.raises(UnsupportedVersionError, match="v99"):
                await conn.send(ApiKey.FETCH, {}, 99)
            assert conn.connected  # refused before anything was written
            await conn.close()

    run(scenario())


def test_pipelined_requests_are_matched_by_correlation_id() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            gates: dict[int, asyncio.Event] = {}

            async def answer_when_let(h: Any, b: Any) -> dict[str, Any]:
                gate = gates.setdefault(h.correlation_id, asyncio.Event())
                await gate.wait()
                return metadata_body([broker], controller_id=h.correlation_id)

            broker.handlers[ApiKey.METADATA] = answer_when_let
            conn = connection(broker)
            await conn.connect()
            calls = [asyncio.ensure_future(conn.send(ApiKey.METADATA, {})) for _ in range(3)]
            while len(broker.requests_of(ApiKey.METADATA)) < 3:
                await asyncio.sleep(0)
            ids = [r.header.correlation_id for r in broker.requests_of(ApiKey.METADATA)]
            assert len(set(ids)) == 3 and conn.in_flight_count == 3
            for cid in reversed(ids):  # answered out of order
                gates.setdefault(cid, asyncio.Event()).set()
            results = await asyncio.gather(*calls)
            assert [r["controller_id"] for r in results] == ids
            assert conn.in_flight_count == 0
            await conn.close()

    run(scenario())


def test_responses_split_across_many_reads() -> None:
    async def scenario() -> None:
        async with FakeBroker(split_writes=True) as broker:
            broker.handlers[ApiKey.METADATA] = lambda h, b: metadata_body(
                [broker], topics={"t": {0: 0, 1: 0}}
            )
            conn = connection(broker)
            await conn.connect()
            body = await conn.send(ApiKey.METADATA, {"topics": [{"name": "t"}]})
            assert [p["partition_index"] for p in body["topics"][0]["partitions"]] == [0, 1]
            await conn.close()

    run(scenario())


def test_timeout_raises_and_drops_the_connection_failing_the_others() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            broker.handlers[ApiKey.METADATA] = lambda h, b: NO_RESPONSE
            conn = connection(broker, request_timeout_ms=60_000)
            await conn.connect()
            other = asyncio.ensure_future(conn.send(ApiKey.METADATA, {}))
            with pytest.raises(
                RequestTimedOutError, match="Metadata request .* timed out after 20 ms"
            ):
                await conn.send(ApiKey.METADATA, {}, timeout_ms=20)
            with pytest.raises(KafkaConnectionError, match="timed out"):
                await other
            assert not conn.connected
            with pytest.raises(KafkaConnectionError, match="connect first"):
                await conn.send(ApiKey.METADATA, {})

    run(scenario())


def test_connection_loss_fails_every_in_flight_request() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            hold = asyncio.Event()

            async def hang(h: Any, b: Any) -> Any:
                await hold.wait()
                return NO_RESPONSE

            broker.handlers[ApiKey.METADATA] = hang
            broker.handlers[ApiKey.LIST_OFFSETS] = lambda h, b: CLOSE
            conn = connection(broker)
            await conn.connect()
            waiting = [asyncio.ensure_future(conn.send(ApiKey.METADATA, {})) for _ in range(2)]
            with pytest.raises(KafkaConnectionError, match="lost"):
                await conn.send(ApiKey.LIST_OFFSETS, {"replica_id": -1, "topics": []})
            for call in waiting:
                with pytest.raises(KafkaConnectionError):
                    await call
            assert conn.state is ConnectionState.DISCONNECTED
            # and it can connect again
            await conn.connect()
            assert conn.connected and broker.connections == 2
            await conn.close()

    run(scenario())


def test_connection_refused_names_the_address() -> None:
    async def scenario() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        conn = BrokerConnection("127.0.0.1", port, node_id=3)
        with pytest.raises(KafkaConnectionError, match=f"node 3 \\(127.0.0.1:{port}\\)"):
            await conn.connect()
        assert conn.state is ConnectionState.DISCONNECTED

    run(scenario())


def test_send_no_response_and_close() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            broker.handlers[ApiKey.PRODUCE] = lambda h, b: NO_RESPONSE
            broker.handlers[ApiKey.METADATA] = lambda h, b: metadata_body([broker])
            conn = connection(broker)
            await conn.connect()
            await conn.send_no_response(
                ApiKey.PRODUCE, {"acks": 0, "timeout_ms": 1000, "topic_data": []}
            )
            # the next request's answer is still matched correctly
            assert (await conn.send(ApiKey.METADATA, {}))["controller_id"] == 0
            assert [r.body["acks"] for r in broker.requests_of(ApiKey.PRODUCE)] == [0]
            hanging = asyncio.ensure_future(
                conn.send(ApiKey.PRODUCE, {"acks": 1, "topic_data": []})
            )
            while len(broker.requests_of(ApiKey.PRODUCE)) < 2:
                await asyncio.sleep(0)
            conn.close()  # closes at once, even without await
            with pytest.raises(KafkaConnectionError, match="was closed"):
                await hanging
            await conn.close()  # twice is fine, and awaitable
            assert not conn.connected

    run(scenario())


def test_cancelled_request_leaves_the_connection_usable() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            gate = asyncio.Event()

            async def late(h: Any, b: Any) -> dict[str, Any]:
                if h.correlation_id == first_id[0]:
                    await gate.wait()
                return metadata_body([broker], controller_id=h.correlation_id)

            first_id: list[int] = []
            broker.handlers[ApiKey.METADATA] = late
            conn = connection(broker)
            await conn.connect()
            first_id.append(conn._next_correlation_id)
            call = asyncio.ensure_future(conn.send(ApiKey.METADATA, {}))
            while not broker.requests_of(ApiKey.METADATA):
                await asyncio.sleep(0)
            call.cancel()
            gate.set()  # its late answer is dropped quietly
            body = await conn.send(ApiKey.METADATA, {})
            assert body["controller_id"] == first_id[0] + 1
            assert conn.connected
            await conn.close()

    run(scenario())


def test_unknown_correlation_id_closes_the_connection() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            bogus = (8).to_bytes(4, "big") + (12345).to_bytes(4, "big") + b"\0\0\0\0"
            broker.handlers[ApiKey.METADATA] = lambda h, b: Raw(bogus)
            conn = connection(broker)
            await conn.connect()
            with pytest.raises(KafkaConnectionError, match="correlation id 12345"):
                await conn.send(ApiKey.METADATA, {})
            assert not conn.connected

    run(scenario())


def test_undecodable_response_fails_only_its_request() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:

            def garbage_then_fine(h: Any, b: Any) -> Any:
                if h.correlation_id % 2:
                    return metadata_body([broker])
                return Raw(
                    (6).to_bytes(4, "big") + h.correlation_id.to_bytes(4, "big") + b"\xff\xff"
                )

            broker.handlers[ApiKey.METADATA] = garbage_then_fine
            conn = connection(broker)
            await conn.connect()
            if conn._next_correlation_id % 2:
                await conn.send(ApiKey.METADATA, {})
            with pytest.raises(KafkaError, match="Could not decode the Metadata"):
                await conn.send(ApiKey.METADATA, {})
            assert (await conn.send(ApiKey.METADATA, {}))["controller_id"] == 0
            await conn.close()

    run(scenario())


def test_client_version_range_is_capped_at_what_kafpy_serves() -> None:
    from kafpy.protocol.api_versions import SUPPORTED_VERSIONS

    lo, hi = client_version_range(ApiKey.FETCH)
    assert hi == min(REQUESTS[ApiKey.FETCH].valid_versions[1], SUPPORTED_VERSIONS[ApiKey.FETCH][1])
    assert lo == REQUESTS[ApiKey.FETCH].valid_versions[0]
