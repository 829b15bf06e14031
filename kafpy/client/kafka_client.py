"""KafkaClient: requests to a cluster, routed by node, controller or partition leader.

After Kafka's NetworkClient with its Metadata: bootstraps from a list of addresses, keeps a
Cluster view fresh with Metadata requests, holds one BrokerConnection per node, and retries
retriable errors (a lost connection, NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER, ...) after a
backoff and a metadata refresh. Used by the admin client, the console tools and, later,
by the controller channel and replica fetchers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from kafpy.client.client_security import ClientSecurity
from kafpy.client.cluster import Cluster, Node
from kafpy.client.connection import BrokerConnection
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import (
    BrokerNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    LeaderNotAvailableError,
)
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

T = TypeVar("T")
Check = Callable[[dict[str, Any]], None]
BOOTSTRAP_NODE_ID = -1


def parse_bootstrap_servers(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` (or a list of them) as (host, port) pairs; IPv6 hosts in
    brackets (`[::1]:9092`)."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    result: list[tuple[str, int]] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"Invalid bootstrap server '{item}': expected HOST:PORT, e.g. localhost:9092"
            )
        result.append((host, int(port)))
    if not result:
        raise ValueError("No bootstrap server given: expected HOST:PORT, e.g. localhost:9092")
    return result


def error_codes(body: Any) -> list[tuple[int, str | None]]:
    """Every non-zero `error_code` in a response body (with its `error_message`, if any),
    searched through nested structs and arrays."""
    found: list[tuple[int, str | None]] = []
    _collect_error_codes(body, found)
    return found


def _collect_error_codes(value: Any, found: list[tuple[int, str | None]]) -> None:
    # a module function, not a closure calling itself: that closure would be a reference
    # cycle, garbage left for the collector after every response the client reads
    if isinstance(value, Mapping):
        code = value.get("error_code")
        if isinstance(code, int) and code != Errors.NONE:
            found.append((code, value.get("error_message")))
        for v in value.values():
            if isinstance(v, (Mapping, list)):
                _collect_error_codes(v, found)
    elif isinstance(value, list):
        for v in value:
            _collect_error_codes(v, found)


def raise_retriable_errors(body: dict[str, Any]) -> None:
    """A response check: raise the first retriable error code in the body, so that the
    request is retried after a metadata refresh; other errors are left to the caller."""
    for code, message in error_codes(body):
        if Errors.for_code(code).retriable:
            raise error_for_code(code, message)


def raise_not_controller(body: dict[str, Any]) -> None:
    """A response check for requests to the controller: retry on NOT_CONTROLLER."""
    for code, message in error_codes(body):
        if code == Errors.NOT_CONTROLLER:
            raise error_for_code(code, message)


class KafkaClient:
    """An async client of one Kafka cluster.

    Parameters:
        bootstrap_servers: `host:port[,host:port]` or a list of them; the first that
            answers gives the cluster's metadata.
        client_id: Kafka's `client.id`, sent in every request.
        request_timeout_ms: per-request timeout (Kafka's `request.timeout.ms`).
        retries: how many times a request failing with a retriable error is retried.
        retry_backoff_ms: the wait before each retry (Kafka's `retry.backoff.ms`).
        security: `security.protocol` and TLS of every connection (default: PLAINTEXT).
        sleep: how to wait (tests pass a recorder instead of asyncio.sleep).
        security: `security.protocol`, TLS and SASL of every connection (ClientSecurity).

    Use as `async with KafkaClient("localhost:9092") as client: ...`, or call start() and
    close(). `cluster` is the latest metadata; send_to_node / send_to_controller /
    send_to_any / send_to_leader send a request and return the response body.
    """

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        client_id: str = "kafpy",
        request_timeout_ms: int = 30000,
        retries: int = 5,
        retry_backoff_ms: int = 100,
        connect_timeout_ms: int | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        security: ClientSecurity | None = None,
    ) -> None:
        self.security = security
        self.bootstrap_servers = parse_bootstrap_servers(bootstrap_servers)
        self.security = security
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.cluster = Cluster()
        self._sleep = sleep
        self._connections: dict[int, BrokerConnection] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._started = False
        self._closed = False
        self._log = component_logger(__name__, "KafkaClient", client_id)

    async def __aenter__(self) -> KafkaClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- life cycle ---

    async def start(self) -> None:
        """Connect to a bootstrap server and learn the brokers and the controller."""
        if self._started:
            return
        await self._with_retries(self._bootstrap, refresh=False)
        self._started = True

    async def _bootstrap(self) -> None:
        await self._connect_bootstrap_server()
        await self.refresh_metadata([])

    async def close(self) -> None:
        """Close every connection; in-flight requests fail with KafkaConnectionError."""
        self._closed = True
        connections, self._connections = list(self._connections.values()), {}
        for conn in connections:
            await conn.close()

    def _new_connection(self, node_id: int, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(
            host,
            port,
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            node_id=node_id,
            connect_timeout_ms=self.connect_timeout_ms,
            security=self.security,
        )

    # --- connections ---

    async def connection(self, node_id: int) -> BrokerConnection:
        """A ready connection to broker `node_id`, connecting if needed."""
        if self._closed:
            raise KafkaConnectionError("The client is closed.")
        conn = self._connections.get(node_id)
        if conn is not None and conn.connected:
            return conn
        lock = self._locks.setdefault(node_id, asyncio.Lock())
        async with lock:
            conn = self._connections.get(node_id)
            if conn is not None and conn.connected:
                return conn
            node = self.cluster.broker(node_id)
            if node is None and node_id != BOOTSTRAP_NODE_ID:
                await self.refresh_metadata([])
                node = self.cluster.broker(node_id)
            if node is None:
                raise BrokerNotAvailableError(
                    f"Broker {node_id} is not in the cluster's metadata (brokers: "
                    f"{sorted(self.cluster.brokers)})."
                )
            conn = self._new_connection(node_id, node.host, node.port)
            await conn.connect()
            self._connections[node_id] = conn
            return conn

    def _adopt_bootstrap_connection(self) -> None:
        """Once brokers are known, file the bootstrap connection under its node id when
        its address is a broker's advertised one (saves a second connection)."""
        conn = self._connections.get(BOOTSTRAP_NODE_ID)
        if conn is None:
            return
        for node in self.cluster.brokers.values():
            if (node.host, node.port) == (
                conn.host,
                conn.port,
            ) and node.node_id not in self._connections:
                del self._connections[BOOTSTRAP_NODE_ID]
                conn.node_id = node.node_id
                self._connections[node.node_id] = conn
                return

    async def _any_connection(self) -> BrokerConnection:
        """A ready connection to some broker: an open one if any, else a new one to a known
        broker, else to a bootstrap server (the least loaded of the open ones)."""
        ready = [c for c in self._connections.values() if c.connected]
        if ready:
            return min(ready, key=lambda c: c.in_flight_count)
        for node_id in list(self.cluster.brokers):
            try:
                return await self.connection(node_id)
            except KafkaError as e:
                self._log.debug("broker %d unreachable: %s", node_id, e)
        await self._connect_bootstrap_server()
        return self._connections[BOOTSTRAP_NODE_ID]

    async def _connect_bootstrap_server(self) -> None:
        """Connect to the first bootstrap server that answers."""
        failures: list[str] = []
        for host, port in self.bootstrap_servers:
            conn = self._new_connection(BOOTSTRAP_NODE_ID, host, port)
            try:
                await conn.connect()
            except KafkaConnectionError as e:
                failures.append(str(e))
                continue
            old = self._connections.pop(BOOTSTRAP_NODE_ID, None)
            if old is not None:
                old.close()
            self._connections[BOOTSTRAP_NODE_ID] = conn
            return
        if len(failures) == 1:
            raise KafkaConnectionError(failures[0])
        servers = ",".join(f"{h}:{p}" for h, p in self.bootstrap_servers)
        raise KafkaConnectionError(
            f"Could not reach any bootstrap server ({servers}); the last error: {failures[-1]}"
        )

    # --- metadata ---

    async def refresh_metadata(
        self, topics: list[str] | None = None, *, allow_auto_topic_creation: bool = False
    ) -> dict[str, Any]:
        """Ask any broker for metadata (None: all topics; []: brokers and controller only)
        and update `cluster`. Returns the response body. A connection lost on the way (a
        broker restarted since it was opened) is replaced and the request sent again, up
        to `retries` times."""
        for tries_left in range(self.retries, -1, -1):
            conn = await self._any_connection()
            version = conn.pick_version(ApiKey.METADATA)
            request_topics: list[dict[str, Any]] | None
            if topics is None:
                request_topics = [] if version == 0 else None
            else:
                request_topics = [{"name": t} for t in topics]
            try:
                body = await conn.send(
                    ApiKey.METADATA,
                    {"topics": request_topics,
                     "allow_auto_topic_creation": allow_auto_topic_creation},
                    version,
                )  # fmt: skip
                break
            except KafkaConnectionError as e:
                if tries_left == 0 or self._closed:
                    raise
                self._log.debug("metadata request failed (%s); retrying on another connection", e)
                await self.backoff()
        self.cluster.update(body, topics)
        self._adopt_bootstrap_connection()
        return body

    async def leader_for(self, tp: TopicPartition) -> int:
        """The partition's leader, refreshing metadata if it is not known; raises
        LeaderNotAvailableError (retriable) or UnknownTopicOrPartitionError."""
        leader = self.cluster.leader_for(tp)
        if leader is not None:
            return leader
        await self.refresh_metadata([tp.topic])
        leader = self.cluster.leader_for(tp)
        if leader is not None:
            return leader
        topic = self.cluster.topic(tp.topic)
        if topic is None or (
            topic.error_code == Errors.NONE and tp.partition not in topic.partitions
        ):
            raise error_for_code(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                f"Partition {tp} does not exist (the topic has "
                f"{len(topic.partitions) if topic else 0} partitions).",
            )
        raise LeaderNotAvailableError(f"Partition {tp} has no leader at the moment.")

    # --- sending ---

    async def backoff(self) -> None:
        """Wait retry_backoff_ms (for callers running their own retry loops)."""
        await self._sleep(self.retry_backoff_ms / 1000)

    async def _with_retries(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        refresh: bool = True,
        refresh_topics: list[str] | None = None,
    ) -> T:
        """Run `attempt`; on a retriable KafkaError wait retry_backoff_ms, refresh the
        metadata and try again, up to `retries` times. The last error is raised."""
        for tries_left in range(self.retries, -1, -1):
            try:
                return await attempt()
            except KafkaError as e:
                if not e.retriable or tries_left == 0 or self._closed:
                    raise
                self._log.debug("retrying after %s (%d retries left)", e, tries_left)
            await self.backoff()
            if refresh:
                try:
                    await self.refresh_metadata(refresh_topics or [])
                except KafkaError as e:
                    self._log.debug("metadata refresh before retry failed: %s", e)
        raise AssertionError("unreachable")

    async def send_to_node(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        check: Check | None = None,
    ) -> dict[str, Any]:
        """Send to broker `node_id` (reconnecting and retrying on a lost connection).
        `check`, if given, inspects the response and raises to retry or fail."""
        return await self._send_via(
            lambda: self.connection(node_id), api_key, body, version, timeout_ms, check
        )

    async def send_to_controller(
        self,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        check: Check | None = raise_not_controller,
    ) -> dict[str, Any]:
        """Send to the active controller; on NOT_CONTROLLER (or no controller known) the
        metadata is refreshed and the request sent again to the new controller."""
        return await self._send_via(
            self._controller_connection, api_key, body, version, timeout_ms, check
        )

    async def _controller_connection(self) -> BrokerConnection:
        controller = self.cluster.controller_id
        if self.cluster.broker(controller) is None:
            await self.refresh_metadata([])
            controller = self.cluster.controller_id
            if self.cluster.broker(controller) is None:
                raise error_for_code(
                    Errors.NOT_CONTROLLER, "The cluster has no active controller right now."
                )
        return await self.connection(controller)

    async def send_to_any(
        self,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        check: Check | None = None,
    ) -> dict[str, Any]:
        """Send to whichever broker is connected and least loaded."""
        return await self._send_via(self._any_connection, api_key, body, version, timeout_ms, check)

    async def send_to_leader(
        self,
        tp: TopicPartition,
        api_key: int,
        body: Mapping[str, Any] | Callable[[int], Mapping[str, Any]],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        check: Check | None = raise_retriable_errors,
    ) -> dict[str, Any]:
        """Send to the leader of `tp`. By default a retriable error code in the response
        (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, ...) refreshes the topic's metadata
        and retries. `body` may be a function of the version picked, for requests whose
        shape depends on it."""

        async def leader_connection() -> BrokerConnection:
            return await self.connection(await self.leader_for(tp))

        return await self._send_via(
            leader_connection, api_key, body, version, timeout_ms, check, refresh_topics=[tp.topic]
        )

    async def _send_via(
        self,
        pick: Callable[[], Awaitable[BrokerConnection]],
        api_key: int,
        body: Mapping[str, Any] | Callable[[int], Mapping[str, Any]],
        version: int | None,
        timeout_ms: int | None,
        check: Check | None,
        refresh_topics: list[str] | None = None,
    ) -> dict[str, Any]:
        """Send on the connection `pick` gives (picked again for each retry), at
        `version` or the highest both sides support, and `check` the response."""
        await self.start()

        async def attempt() -> dict[str, Any]:
            conn = await pick()
            chosen = version if version is not None else conn.pick_version(api_key)
            value = body(chosen) if callable(body) else body
            response = await conn.send(api_key, value, chosen, timeout_ms=timeout_ms)
            if check is not None:
                check(response)
            return response

        return await self._with_retries(attempt, refresh_topics=refresh_topics)

    def node(self, node_id: int) -> Node | None:
        return self.cluster.broker(node_id)
