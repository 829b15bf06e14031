"""Tests of SocketServer on loopback: framing, in-order responses, size limits, bad frames."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kafpy.network.request_channel import CloseConnection, Request, ResponseParts
from kafpy.network.socket_server import SocketServer, _run_eagerly
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request, encode_response
from kafpy.testing.wait import async_wait_until

H = TypeVar("H")

LOGGER = "kafpy.network.SocketServer"


class EchoHandler:
    """Answers Metadata requests with one topic named after the correlation id; Produce
    with acks=0 gets no answer; the first request of a connection can be held back."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.hold: asyncio.Event | None = None

    async def handle(self, request: Request) -> ResponseParts | None:
        self.requests.append(request)
        if request.header.client_id == "close-me":
            raise CloseConnection("the test asked for it")
        if self.hold is not None and len(self.requests) == 1:
            await self.hold.wait()
        if request.api_key == ApiKey.PRODUCE:
            return None
        body = {
            "brokers": [],
            "topics": [{"name": f"t{request.header.correlation_id}", "partitions": []}],
        }
        return encode_response(
            request.api_key, request.api_version, request.header.correlation_id, body
        )


def metadata_request(correlation_id: int, client_id: str = "test") -> bytes:
    return encode_request(
        RequestHeader(ApiKey.METADATA, 1, correlation_id, client_id), {"topics": None}
    )


def produce_request(correlation_id: int, records: bytes = b"") -> bytes:
    body = {"acks": 0, "timeout_ms": 100, "topic_data": [{"name": "t", "partition_data": [
        {"index": 0, "records": records}]}]}  # fmt: skip
    return encode_request(RequestHeader(ApiKey.PRODUCE, 7, correlation_id, "test"), body)


def truncated_metadata_request(correlation_id: int) -> bytes:
    """A Metadata v1 request announcing 5 topics and carrying none."""
    frame = metadata_request(correlation_id)[4:-4] + struct.pack(">i", 5)
    return struct.pack(">i", len(frame)) + frame


async def read_response(
    reader: asyncio.StreamReader, api_key: int = ApiKey.METADATA, version: int = 1
) -> tuple[int, dict[str, Any]]:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return decode_response(api_key, version, await reader.readexactly(size))


def with_server(
    scenario: Callable[[SocketServer, H], Awaitable[None]],
    max_request_size: int = 1 << 20,
    handler: H | None = None,
) -> None:
    """Run `scenario` against a server on a free port with `handler` (an EchoHandler by
    default), shut down afterwards."""

    async def main() -> None:
        server = SocketServer([("PLAINTEXT", "127.0.0.1", 0)], max_request_size=max_request_size)
        used: Any = handler if handler is not None else EchoHandler()
        await server.startup(used)
        try:
            await asyncio.wait_for(scenario(server, used), 20)
        finally:
            await server.shutdown()

    asyncio.run(main())


# how long a test waits for the server to get somewhere (never what it asserts)
WAIT_S = 10.0


async def connect(server: SocketServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.bound_port("PLAINTEXT"))


def test_pipelined_requests_answered_in_order() -> None:
    async def scenario(server: SocketServer, handler: EchoHandler) -> None:
        handler.hold = asyncio.Event()
        reader, writer = await connect(server)
        writer.write(b"".join(metadata_request(i) for i in range(5)))
        await asyncio.sleep(0.05)
        assert len(handler.requests) == 1  # one request at a time per connection
        handler.hold.set()
        got = [await read_response(reader) for _ in range(5)]
        assert [cid for cid, _ in got] == list(range(5))
        assert [b["topics"][0]["name"] for _, b in got] == [f"t{i}" for i in range(5)]
        req = handler.requests[0]
        assert req.listener_name == "PLAINTEXT" and req.client_address[0] == "127.0.0.1"
        assert req.header.client_id == "test" and req.body == {"topics": None}
        writer.close()

    with_server(scenario)


def test_frames_split_anywhere_and_large_frames() -> None:
    big = bytes(range(256)) * 1000  # a 256 kB payload, read into its own buffer

    async def scenario(server: SocketServer, handler: EchoHandler) -> None:
        reader, writer = await connect(server)
        data = metadata_request(1) + produce_request(2, big) + metadata_request(3)
        for i in range(0, len(data), 7001):
            writer.write(data[i : i + 7001])
            await writer.drain()
        assert (await read_response(reader))[0] == 1
        assert (await read_response(reader))[0] == 3  # acks=0: nothing for request 2
        records = handler.requests[1].body["topic_data"][0]["partition_data"][0]["records"]  # type: ignore[index]
        assert bytes(records) == big
        assert not records.readonly  # the produce path may patch batch headers in place
        writer.close()

    with_server(scenario)


@pytest.mark.parametrize(
    "frame, reason",
    [
        (struct.pack(">i", 2_000_000), "invalid request size 2000000"),
        (struct.pack(">i", -5), "invalid request size -5"),
        (struct.pack(">i", 3) + b"abc", "request header does not decode"),
        (
            struct.pack(">i", 10) + struct.pack(">hhih", 3, 1, 7, 50),
            "request header does not decode",
        ),
        (
            truncated_metadata_request(9),
            "Metadata v1 request with correlation id 9 does not decode",
        ),
    ],
)
def test_bad_frame_closes_only_that_connection(
    frame: bytes, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(server: SocketServer, handler: EchoHandler) -> None:
        good_reader, good_writer = await connect(server)
        bad_reader, bad_writer = await connect(server)
        bad_writer.write(frame)
        assert await bad_reader.read() == b""  # closed by the server
        good_writer.write(metadata_request(42))
        assert (await read_response(good_reader))[0] == 42
        good_writer.close()
        bad_writer.close()

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with_server(scenario, max_request_size=1_000_000)
    assert any(
        reason in r.getMessage() and "127.0.0.1" in r.getMessage() for r in caplog.records
    ), [r.getMessage() for r in caplog.records]


def test_handler_can_close_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(server: SocketServer, handler: EchoHandler) -> None:
        reader, writer = await connect(server)
        writer.write(metadata_request(1, client_id="close-me") + metadata_request(2))
        assert await reader.read() == b""
        writer.close()

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with_server(scenario)
    assert any("the test asked for it" in r.getMessage() for r in caplog.records)


def test_shutdown_closes_connections() -> None:
    async def main() -> None:
        server = SocketServer([("PLAINTEXT", "127.0.0.1", 0)])
        await server.startup(EchoHandler())
        reader, writer = await connect(server)
        writer.write(metadata_request(1))
        await read_response(reader)
        assert server.connection_count == 1
        await server.shutdown()
        assert await reader.read() == b""
        writer.close()

    asyncio.run(main())


class ReplicationHandler:
    """Produce requests (acks=1 here, answered) release the connection once 'appended' (at
    once, or, with `release_at_once=False`, once `may_release` is set: as one whose batches
    are validated in a thread first) and then wait for 'replication' (`replicated[cid]`);
    Metadata answers at once."""

    def __init__(self, release_at_once: bool = True) -> None:
        self.started: list[int] = []
        self.replicated: dict[int, asyncio.Event] = {}
        self.may_release = asyncio.Event()
        if release_at_once:
            self.may_release.set()

    async def handle(self, request: Request) -> ResponseParts | None:
        cid = request.header.correlation_id
        self.started.append(cid)
        if request.api_key == ApiKey.PRODUCE:
            if not self.may_release.is_set():
                await self.may_release.wait()
            request.context["release"]()  # appended: the next may start
            event = self.replicated.setdefault(cid, asyncio.Event())
            await event.wait()
            body: dict[str, Any] = {"responses": [], "throttle_time_ms": 0}
        else:
            body = {"brokers": [], "topics": []}
        return encode_response(request.api_key, request.api_version, cid, body)


def test_released_requests_wait_together_and_are_answered_in_order() -> None:
    async def scenario(server: SocketServer, handler: ReplicationHandler) -> None:
        reader, writer = await connect(server)
        acks1 = [
            encode_request(
                RequestHeader(ApiKey.PRODUCE, 7, i, "test"),
                {"acks": 1, "timeout_ms": 100, "topic_data": []},
            )  # fmt: skip
            for i in range(3)
        ]
        writer.write(b"".join(acks1) + metadata_request(3))
        await async_wait_until(lambda: len(handler.started) == 4, WAIT_S, interval_s=0.01)
        # all three produce requests are waiting at once, and the Metadata behind them
        assert handler.started == [0, 1, 2, 3]
        for cid in (2, 1, 0):  # replicated in reverse order ...
            handler.replicated[cid].set()
            await asyncio.sleep(0.01)
        # ... answered in the order they came
        got = [(await read_response(reader, ApiKey.PRODUCE, 7))[0] for _ in range(3)]
        assert got == [0, 1, 2]
        assert (await read_response(reader))[0] == 3
        writer.close()

    with_server(scenario, handler=ReplicationHandler())


def test_a_request_released_after_it_first_waited_lets_the_next_start() -> None:
    async def scenario(server: SocketServer, handler: ReplicationHandler) -> None:
        reader, writer = await connect(server)
        produce = encode_request(
            RequestHeader(ApiKey.PRODUCE, 7, 0, "test"),
            {"acks": -1, "timeout_ms": 100, "topic_data": []},
        )  # fmt: skip
        writer.write(produce + metadata_request(1))
        await async_wait_until(lambda: bool(handler.started), WAIT_S, interval_s=0.01)
        await asyncio.sleep(0.05)
        assert handler.started == [0]  # the produce has not released the connection yet
        handler.may_release.set()
        await async_wait_until(lambda: handler.started == [0, 1], WAIT_S, interval_s=0.01)
        assert handler.started == [0, 1]
        handler.replicated[0].set()
        assert (await read_response(reader, ApiKey.PRODUCE, 7))[0] == 0
        assert (await read_response(reader))[0] == 1
        writer.close()

    with_server(scenario, handler=ReplicationHandler(release_at_once=False))


def test_run_eagerly_finishes_a_coroutine_that_never_waits_without_a_task() -> None:
    async def main() -> None:
        seen: list[str] = []

        async def quick() -> int:
            seen.append("ran")
            return 1

        done, task = _run_eagerly(quick())
        assert (done, task, seen) == (True, None, ["ran"])

    asyncio.run(main())


def test_run_eagerly_hands_the_rest_to_a_task() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        first: asyncio.Future[str] = loop.create_future()
        second: asyncio.Future[str] = loop.create_future()
        seen: list[str] = []

        async def waits() -> str:
            seen.append("start")
            seen.append(await first)
            await asyncio.sleep(0)  # a bare yield
            try:
                await second
            except ValueError as e:
                seen.append(f"caught {e}")
            return "result"

        done, task = _run_eagerly(waits())
        assert not done and task is not None
        assert seen == ["start"]  # ran up to its first wait, at once
        first.set_result("first")
        await asyncio.sleep(0.01)
        assert seen == ["start", "first"] and not task.done()
        second.set_exception(ValueError("second failed"))  # the coroutine's await raises it
        assert await task == "result"
        assert seen == ["start", "first", "caught second failed"]

    asyncio.run(main())


def test_cancelling_the_task_of_run_eagerly_reaches_the_coroutine() -> None:
    async def main() -> None:
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        seen: list[str] = []

        async def waits() -> None:
            try:
                await never
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        done, task = _run_eagerly(waits())
        assert not done and task is not None
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seen == ["cancelled"] and never.cancelled()

    asyncio.run(main())


def test_a_listener_on_an_address_not_of_this_host_says_so() -> None:
    # 203.0.113.0/24 is TEST-NET-3: never an address of this host
    async def main() -> None:
        server = SocketServer([("PLAINTEXT", "203.0.113.7", 0)], max_request_size=1 << 20)
        with pytest.raises(OSError) as e:
            await server.bind()
        assert e.value.strerror == (
            "listener PLAINTEXT cannot bind 203.0.113.7:0: cannot assign requested address "
            "(203.0.113.7 is not an address of this host: name one of its addresses, or "
            "0.0.0.0 for all, in listeners; what clients connect to goes in "
            "advertised.listeners)"
        )
        await server.shutdown()

    asyncio.run(main())
