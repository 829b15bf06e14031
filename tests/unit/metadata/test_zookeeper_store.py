"""Behaviour of the ZooKeeper store beyond the shared contract: connections and sessions,
and requests sent together rather than one round trip after another.

A `CuttableProxy` between the store and the server lets a test drop the store's
connection (and refuse new ones) while other clients keep working, to check that
watches survive a connection loss and that changes made meanwhile are reported.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import ConnectionLossError, NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import EventType, WatchedEvent
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.metadata.zookeeper_server import ZooKeeperServer, free_port
from kafpy.metadata.zookeeper_store import ZooKeeperStore, split_connect_string
from tests.fixtures.zookeeper import expire_session

WAIT_S = 20.0


class CuttableProxy:
    """A TCP proxy to ZooKeeper whose connections a test can cut and restore."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._refusing = False
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._refusing or self._closed:
                    client.close()
                    continue
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Drop every proxied connection and refuse new ones until `restore()`."""
        with self._lock:
            self._refusing = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def restore(self) -> None:
        with self._lock:
            self._refusing = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._listener.close()


@pytest.fixture
def proxy(zookeeper_server: ZooKeeperServer) -> Iterator[CuttableProxy]:
    proxy = CuttableProxy(zookeeper_server.port)
    yield proxy
    proxy.close()


def direct_client(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect)
    client.start(timeout=WAIT_S)
    return client


def test_split_connect_string() -> None:
    assert split_connect_string("a:1,b:2") == ("a:1,b:2", None)
    assert split_connect_string("a:1,b:2/") == ("a:1,b:2", None)
    assert split_connect_string("a:1/kafka/x/") == ("a:1", "/kafka/x")
    with pytest.raises(ValueError):
        split_connect_string("a:1/kafka//x")


def test_a_missing_chroot_is_created(zookeeper_server: ZooKeeperServer) -> None:
    chroot = f"/missing{uuid.uuid4().hex}/kafka"
    connect = f"{zookeeper_server.connect_string}{chroot}"

    async def scenario() -> None:
        store = ZooKeeperStore(connect)
        await store.start()
        try:
            await store.create("/brokers", b"")
        finally:
            await store.close()

    asyncio.run(scenario())
    client = direct_client(zookeeper_server.connect_string)
    try:
        assert client.exists(f"{chroot}/brokers") is not None
    finally:
        client.stop()
        client.close()


def test_nodes_live_under_the_chroot(
    zookeeper_server: ZooKeeperServer, zookeeper_connect: str
) -> None:
    _, chroot = split_connect_string(zookeeper_connect)

    async def scenario() -> None:
        store = ZooKeeperStore(zookeeper_connect)
        await store.start()
        try:
            await store.create("/a", b"1")
            assert await store.get_children("/") == ["a"]
        finally:
            await store.close()

    asyncio.run(scenario())
    client = direct_client(zookeeper_server.connect_string)
    try:
        assert client.get(f"{chroot}/a")[0] == b"1"
    finally:
        client.stop()
        client.close()


def test_start_fails_clearly_without_a_server() -> None:
    async def scenario() -> None:
        store = ZooKeeperStore(f"127.0.0.1:{free_port()}", connection_timeout_ms=500)
        with pytest.raises(ConnectionLossError, match="Could not connect to ZooKeeper"):
            await store.start()

    asyncio.run(scenario())


def test_a_server_of_the_ensemble_that_is_down_is_named_at_start(
    zookeeper_server: ZooKeeperServer, zookeeper_connect: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, chroot = split_connect_string(zookeeper_connect)
    down = f"127.0.0.1:{free_port()}"
    connect = f"{zookeeper_server.connect_string},{down}{chroot}"

    async def scenario() -> None:
        store = ZooKeeperStore(connect)
        await store.start()
        await store.close()

    with caplog.at_level("WARNING", logger="kafpy.metadata.zookeeper_store"):
        asyncio.run(scenario())
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelname == "WARNING" and r.name == "kafpy.metadata.zookeeper_store"
    ]
    assert warnings == [
        f"[ZooKeeperStore] ZooKeeper server {down} of zookeeper.connect is not reachable (connection refused): "
        "the ensemble serves only while a majority of its servers is up"
    ]


def test_start_fails_naming_the_servers_down() -> None:
    down = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]

    async def scenario() -> None:
        store = ZooKeeperStore(",".join(down), connection_timeout_ms=500)
        with pytest.raises(ConnectionLossError) as e:
            await store.start()
        assert (
            f"Not reachable: {down[0]} (connection refused), {down[1]} (connection refused)."
            in str(e.value)
        )

    asyncio.run(scenario())


def test_session_expiry_calls_the_callbacks_with_a_new_session(zookeeper_connect: str) -> None:
    async def scenario() -> None:
        store = ZooKeeperStore(zookeeper_connect, session_timeout_ms=4000)
        observer = ZooKeeperStore(zookeeper_connect)
        await store.start()
        await observer.start()
        try:
            await store.create("/brokers/ids/1", b"{}", ephemeral=True, make_parents=True)
            gone = asyncio.Event()
            await observer.exists("/brokers/ids/1", watch=lambda event: gone.set())
            expired = asyncio.Event()
            sessions: list[int] = []

            async def on_expired() -> None:
                sessions.append(store.session_id)
                await store.create("/brokers/ids/1", b"{}", ephemeral=True)
                expired.set()

            store.on_session_expired(on_expired)
            old_session = store.session_id

            await expire_session(store, zookeeper_connect, WAIT_S)

            await asyncio.wait_for(gone.wait(), WAIT_S)
            await asyncio.wait_for(expired.wait(), WAIT_S)
            assert sessions == [store.session_id]
            assert store.session_id not in (0, old_session)
            stat = await observer.exists("/brokers/ids/1")
            assert stat is not None and stat.ephemeral_owner == store.session_id
        finally:
            await store.close()
            await observer.close()

    asyncio.run(scenario())


def test_watches_survive_a_connection_loss(
    proxy: CuttableProxy, zookeeper_server: ZooKeeperServer, zookeeper_connect: str
) -> None:
    _, chroot = split_connect_string(zookeeper_connect)
    through_proxy = f"127.0.0.1:{proxy.port}{chroot}"

    async def scenario() -> None:
        store = ZooKeeperStore(through_proxy, session_timeout_ms=20000)
        writer = ZooKeeperStore(zookeeper_connect)
        await store.start()
        await writer.start()
        try:
            for path in ["/changed", "/deleted", "/untouched", "/parent"]:
                await writer.create(path, b"")
            events: asyncio.Queue[WatchedEvent] = asyncio.Queue()
            await store.get("/changed", watch=events.put_nowait)
            await store.get("/deleted", watch=events.put_nowait)
            await store.get("/untouched", watch=events.put_nowait)
            assert await store.exists("/created", watch=events.put_nowait) is None
            await store.get_children("/parent", watch=events.put_nowait)
            session = store.session_id
            reconnected = asyncio.Event()
            store.on_session_expired(lambda: reconnected.set())

            proxy.cut()
            await writer.set("/changed", b"x")
            await writer.delete("/deleted")
            await writer.create("/created", b"")
            await writer.create("/parent/child", b"")
            proxy.restore()

            received = {await asyncio.wait_for(events.get(), WAIT_S) for _ in range(4)}
            assert received == {
                WatchedEvent(EventType.CHANGED, "/changed"),
                WatchedEvent(EventType.DELETED, "/deleted"),
                WatchedEvent(EventType.CREATED, "/created"),
                WatchedEvent(EventType.CHILD, "/parent"),
            }
            # same session, and the untouched node's watch is armed again on the server
            assert store.session_id == session
            assert not reconnected.is_set()
            await writer.set("/untouched", b"y")
            assert await asyncio.wait_for(events.get(), WAIT_S) == WatchedEvent(
                EventType.CHANGED, "/untouched"
            )
            assert events.empty()
        finally:
            await store.close()
            await writer.close()

    asyncio.run(scenario())


def test_a_watch_set_twice_fires_once(zookeeper_connect: str) -> None:
    async def scenario() -> None:
        store = ZooKeeperStore(zookeeper_connect)
        await store.start()
        try:
            await store.create("/a", b"")
            events: list[WatchedEvent] = []
            await store.get("/a", watch=events.append)
            await store.exists("/a", watch=events.append)
            await store.set("/a", b"x")
            fired = asyncio.Event()
            await store.exists("/b", watch=lambda event: fired.set())
            await store.create("/b", b"")
            await asyncio.wait_for(fired.wait(), WAIT_S)
            assert events == [WatchedEvent(EventType.CHANGED, "/a")]
        finally:
            await store.close()

    asyncio.run(scenario())


def test_closed_store_refuses_operations(zookeeper_connect: str) -> None:
    async def scenario() -> None:
        store = ZooKeeperStore(zookeeper_connect)
        await store.start()
        await store.create("/a", b"")
        with pytest.raises(NodeExistsError):
            await store.create("/a", b"")
        await store.close()
        with pytest.raises(ConnectionLossError):
            await store.get("/a")

    asyncio.run(scenario())


class InFlightCountingStore(ZooKeeperStore):
    """A ZooKeeperStore that records the most requests it had in flight at once."""

    def __init__(self, connect: str) -> None:
        super().__init__(connect)
        self.in_flight = 0
        self.most_in_flight = 0
        self.calls = 0

    async def _call(self, action: str, path: str, async_result: object) -> object:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await super()._call(action, path, async_result)
        finally:
            self.in_flight -= 1


def _partitions_tree(partitions: int) -> list[str]:
    return [f"/t/partitions/{p}/state" for p in range(partitions)]


def test_a_recursive_delete_pipelines_its_requests(zookeeper_connect: str) -> None:
    """A topic's znodes go in a few waves of requests sent together (one per tree level),
    not one round trip after another: a 1,000-partition topic once took ~40 s to delete."""

    async def scenario() -> None:
        store = InFlightCountingStore(zookeeper_connect)
        await store.start()
        try:
            for path in _partitions_tree(50):
                await store.create(path, b"{}", make_parents=True)
            store.most_in_flight = 0
            await store.delete("/t", recursive=True)
            assert await store.exists("/t") is None
            assert store.most_in_flight >= 50
        finally:
            await store.close()

    asyncio.run(scenario())


def test_partition_states_are_read_in_one_pipelined_wave(zookeeper_connect: str) -> None:
    async def scenario() -> None:
        store = InFlightCountingStore(zookeeper_connect)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            states = {
                TopicPartition("t", p): LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,), 0), 1)
                for p in range(50)
            }
            for tp, state in states.items():
                await zk.create_topic_partition_state(tp, state)
            store.most_in_flight = 0
            read = await zk.get_topic_partition_states([*states, TopicPartition("t", 99)])
            assert sorted(read) == sorted(states)
            assert store.most_in_flight >= 50
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_topic_znode_goes_in_a_few_transactions(zookeeper_connect: str) -> None:
    """KafkaZkClient knows the layout under /brokers/topics/<t>: its partitions' nodes go in
    transactions of many deletes, not a listing and a delete per node."""

    async def scenario() -> None:
        store = InFlightCountingStore(zookeeper_connect)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            await zk.create_topic_assignment("t", {p: [0] for p in range(120)})
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,), 0), 1)
            for p in range(120):
                await zk.create_topic_partition_state(TopicPartition("t", p), state)
            store.calls = 0
            await zk.delete_topic_znode("t")
            assert not await zk.topic_exists("t")
            assert store.calls <= 10
        finally:
            await store.close()

    asyncio.run(scenario())
