"""FakeBroker: a tiny asyncio Kafka broker for client tests, answering with canned bodies.

It speaks the real framing (int32 size prefix) and encodes/decodes with kafpy's codec, so
the client is tested against the wire format rather than against itself. Each request is
handled in its own task, so a test can answer requests out of order, late, or never.
Handlers get (header, body) and return a response body dict, `NO_RESPONSE`, `CLOSE`
(drop the connection), or `Raw(bytes)` (a frame written as it is, size prefix included).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kafpy.client.kafka_client import KafkaClient
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import RequestHeader, decode_request_header, encode_response
from kafpy.protocol.messages import REQUESTS
from kafpy.records.builder import build_batch

EARLIEST_TIMESTAMP = -2

NO_RESPONSE = object()
CLOSE = object()


@dataclass
class Raw:
    """A frame to write as it is."""

    data: bytes


Handler = Callable[[RequestHeader, dict[str, Any]], Any]


@dataclass
class Received:
    header: RequestHeader
    body: dict[str, Any]
    frame: bytes


@dataclass
class FakeBroker:
    """A broker on 127.0.0.1 (a free port) with per-API handlers.

    `versions` is the ApiVersions table it advertises (default: what kafpy's broker
    advertises); ApiVersions above its own range gets Kafka's v0-format UNSUPPORTED_VERSION
    answer. `received` lists every request in arrival order."""

    node_id: int = 0
    versions: dict[int, tuple[int, int]] = field(
        default_factory=lambda: {int(k): v for k, v in SUPPORTED_VERSIONS.items()}
    )
    handlers: dict[int, Handler] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    connections: int = 0
    split_writes: bool = False

    def __post_init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        self.drop_connections()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()

    async def __aenter__(self) -> FakeBroker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def drop_connections(self) -> None:
        for writer in self._writers:
            writer.close()
        self._writers.clear()

    def requests_of(self, api_key: int) -> list[Received]:
        return [r for r in self.received if r.header.api_key == api_key]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        lock = asyncio.Lock()
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big", signed=True)
                frame = await reader.readexactly(size)
                header, offset = decode_request_header(frame)
                body = self._decode_body(header, frame, offset)
                self.received.append(Received(header, body, frame))
                task = asyncio.get_running_loop().create_task(
                    self._answer(header, body, writer, lock)
                )
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # a cancelled handler ends quietly: asyncio would log it as an error
        finally:
            writer.close()

    def _decode_body(self, header: RequestHeader, frame: bytes, offset: int) -> dict[str, Any]:
        if header.api_key == ApiKey.API_VERSIONS and header.api_version > self.versions[18][1]:
            return {}  # a real broker cannot parse a version it does not know either
        return REQUESTS[ApiKey(header.api_key)].decode(header.api_version, frame, offset)

    async def _answer(
        self,
        header: RequestHeader,
        body: dict[str, Any],
        writer: asyncio.StreamWriter,
        lock: asyncio.Lock,
    ) -> None:
        version = header.api_version
        handler = self.handlers.get(header.api_key)
        if handler is None and header.api_key == ApiKey.API_VERSIONS:
            handler = self._api_versions
        if handler is None:
            raise AssertionError(f"FakeBroker has no handler for API key {header.api_key}")
        result = handler(header, body)
        if inspect.isawaitable(result):
            result = await result
        if result is NO_RESPONSE:
            return
        if result is CLOSE:
            writer.close()
            return
        if isinstance(result, Raw):
            parts: list[bytes | memoryview] = [result.data]
        else:
            if header.api_key == ApiKey.API_VERSIONS and result.get("error_code") == 35:
                version = 0
            parts = encode_response(header.api_key, version, header.correlation_id, result)
        async with lock:
            if self.split_writes:
                data = b"".join(bytes(p) for p in parts)
                for i in range(len(data)):
                    writer.write(data[i : i + 1])
                    await writer.drain()
            else:
                writer.writelines(parts)
                await writer.drain()

    def _api_versions(self, header: RequestHeader, body: dict[str, Any]) -> dict[str, Any]:
        lo, hi = self.versions[int(ApiKey.API_VERSIONS)]
        if header.api_version > hi:
            return {
                "error_code": int(Errors.UNSUPPORTED_VERSION),
                "api_keys": [{"api_key": 18, "min_version": lo, "max_version": hi}],
            }
        return {
            "error_code": 0,
            "api_keys": [
                {"api_key": k, "min_version": v[0], "max_version": v[1]}
                for k, v in sorted(self.versions.items())
            ],
        }


def metadata_body(
    brokers: list[FakeBroker],
    *,
    controller_id: int = 0,
    topics: dict[str, dict[int, int]] | None = None,
    topic_errors: dict[str, int] | None = None,
    cluster_id: str = "fake-cluster",
) -> dict[str, Any]:
    """A Metadata response body: `topics` maps a topic to {partition: leader}."""
    topic_list = []
    for name, leaders in (topics or {}).items():
        topic_list.append(
            {
                "error_code": 0,
                "name": name,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": leader,
                        "leader_epoch": 0,
                        "replica_nodes": [leader],
                        "isr_nodes": [leader],
                        "offline_replicas": [],
                    }
                    for p, leader in sorted(leaders.items())
                ],
            }
        )
    for name, code in (topic_errors or {}).items():
        topic_list.append(
            {"error_code": code, "name": name, "is_internal": False, "partitions": []}
        )
    return {
        "brokers": [
            {"node_id": b.node_id, "host": "127.0.0.1", "port": b.port, "rack": None}
            for b in brokers
        ],
        "cluster_id": cluster_id,
        "controller_id": controller_id,
        "topics": topic_list,
    }


AsyncHandler = Callable[[RequestHeader, dict[str, Any]], Awaitable[Any]]


async def no_sleep(seconds: float) -> None:
    """A KafkaClient `sleep` that does not wait (backoffs in tests)."""


class FakeLog:
    """A FakeBroker serving Metadata, ListOffsets and Fetch for topic "t" with two
    partitions whose logs are byte strings of batches."""

    def __init__(self) -> None:
        self.broker = FakeBroker()
        self.data: dict[int, bytes] = {0: b"", 1: b""}
        self.start: dict[int, int] = {0: 0, 1: 0}
        self.end: dict[int, int] = {0: 0, 1: 0}
        self.error: dict[int, int] = {}

    def append(self, partition: int, values: list[bytes], **kwargs: Any) -> None:
        batch = build_batch(values, base_offset=self.end[partition], timestamp=1000, **kwargs)
        self.data[partition] += batch
        self.end[partition] += len(values)

    async def __aenter__(self) -> FakeLog:
        await self.broker.start()
        self.broker.handlers[ApiKey.METADATA] = lambda h, b: metadata_body(
            [self.broker], topics={"t": {0: 0, 1: 0}}
        )
        self.broker.handlers[ApiKey.LIST_OFFSETS] = self.list_offsets
        self.broker.handlers[ApiKey.FETCH] = self.fetch
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.broker.stop()

    def list_offsets(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        t = body["topics"][0]
        p = t["partitions"][0]
        i = p["partition_index"]
        offset = self.start[i] if p["timestamp"] == EARLIEST_TIMESTAMP else self.end[i]
        return {
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": i, "error_code": 0, "timestamp": -1, "offset": offset}
                    ],
                }
            ]
        }

    def fetch(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        partitions = []
        for p in body["topics"][0]["partitions"]:
            i, offset = p["partition"], p["fetch_offset"]
            code = self.error.pop(i, 0)
            if not code and not self.start[i] <= offset <= self.end[i]:
                code = 1
            partitions.append(
                {
                    "partition_index": i,
                    "error_code": code,
                    "high_watermark": self.end[i],
                    "records": None if code else self.data[i],
                }
            )
        return {"responses": [{"topic": "t", "partitions": partitions}]}

    def client(self) -> KafkaClient:
        return KafkaClient(self.broker.address, sleep=no_sleep, retries=2)


class TwoBrokers:
    """Fake brokers 0 and 1 serving Metadata, with FindCoordinator naming broker
    `coordinator` (or failing with `find_error`), and a KafkaClient bootstrapped on 0;
    `async with` starts and stops them."""

    def __init__(self) -> None:
        self.b0 = FakeBroker(node_id=0)
        self.b1 = FakeBroker(node_id=1)
        self.coordinator = 1
        self.find_error = 0

    async def start(self) -> KafkaClient:
        for b in (self.b0, self.b1):
            await b.start()
            b.handlers[ApiKey.METADATA] = lambda h, body: metadata_body([self.b0, self.b1])
            b.handlers[ApiKey.FIND_COORDINATOR] = self.find_coordinator
        self.client = KafkaClient(self.b0.address, sleep=no_sleep, retries=3)
        await self.client.start()
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()
        for b in (self.b0, self.b1):
            await b.stop()

    def find_coordinator(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        return {"error_code": self.find_error, "node_id": self.coordinator, "host": "127.0.0.1",
                "port": (self.b0, self.b1)[self.coordinator].port}  # fmt: skip
