"""The MetadataStore contract, run against every backend: ZooKeeper's semantics.

The same scenarios run on the embedded store (on disk and in memory) and on a real
ZooKeeper server, so the embedded store behaves as ZooKeeper does.

Watches are asserted without sleeping: to show that a one-shot watch did *not* fire
again, a fresh "barrier" watch is triggered afterwards and awaited; watch events of a
session are delivered in order, so a second firing would have arrived before it.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.errors import (
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from kafpy.metadata.store import (
    CheckOp,
    CreateOp,
    DeleteOp,
    EventType,
    MetadataStore,
    SetDataOp,
    Stat,
    WatchedEvent,
)

WAIT_S = 20.0


class Backend:
    """Opens sessions on one fresh store of a backend and closes them after the test."""

    def __init__(self) -> None:
        self.sessions: list[MetadataStore] = []

    def new_store(self) -> MetadataStore:
        raise NotImplementedError

    async def session(self) -> MetadataStore:
        store = self.new_store()
        await store.start()
        self.sessions.append(store)
        return store

    async def close_all(self) -> None:
        for store in self.sessions:
            await store.close()


class EmbeddedBackend(Backend):
    def __init__(self, data_dir: Path | None) -> None:
        super().__init__()
        self.data_dir = data_dir

    def new_store(self) -> MetadataStore:
        if self.data_dir is None and self.sessions:
            first = self.sessions[0]
            assert isinstance(first, EmbeddedStore)
            return first.new_session()
        return EmbeddedStore(self.data_dir)


class ZooKeeperBackend(Backend):
    def __init__(self, connect: str) -> None:
        super().__init__()
        self.connect = connect

    def new_store(self) -> MetadataStore:
        from kafpy.metadata.zookeeper_store import ZooKeeperStore

        return ZooKeeperStore(self.connect)


@pytest.fixture(params=["embedded", "embedded-memory", "zookeeper"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        return EmbeddedBackend(tmp_path / "metadata")
    if request.param == "embedded-memory":
        return EmbeddedBackend(None)
    return ZooKeeperBackend(request.getfixturevalue("zookeeper_connect"))


def contract(test: Callable[[Backend], Awaitable[None]]) -> Callable[[Backend], None]:
    """Run an async scenario on a fresh event loop, closing the backend's sessions after."""

    @functools.wraps(test)
    def run(backend: Backend) -> None:
        async def main() -> None:
            try:
                await asyncio.wait_for(test(backend), 60)
            finally:
                await backend.close_all()

        asyncio.run(main())

    return run


class Recorder:
    """A watch callback recording its events, on which a test can wait."""

    def __init__(self) -> None:
        self.events: list[WatchedEvent] = []
        self.threads: list[int] = []
        self._queue: asyncio.Queue[WatchedEvent] = asyncio.Queue()

    def __call__(self, event: WatchedEvent) -> None:
        self.events.append(event)
        self.threads.append(threading.get_ident())
        self._queue.put_nowait(event)

    async def next(self) -> WatchedEvent:
        return await asyncio.wait_for(self._queue.get(), WAIT_S)


async def barrier(store: MetadataStore, path: str = "/barrier") -> None:
    """Wait until every watch event the store's session was sent so far has been delivered."""
    if await store.exists(path) is None:
        try:
            await store.create(path)
        except NodeExistsError:
            pass
    fired = Recorder()
    await store.get(path, watch=fired)
    await store.set(path, b"")
    assert (await fired.next()).type is EventType.CHANGED


# Create, get, exists


@contract
async def test_create_and_get(backend: Backend) -> None:
    store = await backend.session()
    assert await store.create("/a", b"hello") == "/a"
    data, stat = await store.get("/a")
    assert data == b"hello"
    assert (stat.version, stat.cversion, stat.num_children) == (0, 0, 0)
    assert stat.data_length == 5
    assert stat.ephemeral_owner == 0
    assert stat.czxid == stat.mzxid > 0
    assert stat.ctime == stat.mtime > 0
    assert await store.exists("/a") == stat
    assert await store.exists("/missing") is None


@contract
async def test_create_existing_node_fails(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/a", b"1")
    with pytest.raises(NodeExistsError) as failure:
        await store.create("/a", b"2")
    assert "/a" in str(failure.value)
    assert (await store.get("/a"))[0] == b"1"


@contract
async def test_create_needs_the_parent_unless_make_parents(backend: Backend) -> None:
    store = await backend.session()
    with pytest.raises(NoNodeError) as failure:
        await store.create("/x/y/z", b"data")
    assert "/x/y/z" in str(failure.value)
    assert await store.exists("/x") is None
    assert await store.create("/x/y/z", b"data", make_parents=True) == "/x/y/z"
    assert (await store.get("/x/y"))[0] == b""
    assert (await store.exists("/x/y")).ephemeral_owner == 0  # type: ignore[union-attr]
    assert (await store.get("/x/y/z"))[0] == b"data"


@contract
async def test_ensure_path_is_idempotent(backend: Backend) -> None:
    store = await backend.session()
    await store.ensure_path("/brokers/ids")
    await store.ensure_path("/brokers/ids")
    assert await store.get_children("/brokers") == ["ids"]


@contract
async def test_get_of_a_missing_node_fails(backend: Backend) -> None:
    store = await backend.session()
    with pytest.raises(NoNodeError):
        await store.get("/missing")
    assert await store.get_data_or_none("/missing") is None
    assert await store.get_children_or_empty("/missing") == []


@contract
async def test_sequential_nodes_count_from_the_parent_cversion(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/q")
    assert await store.create("/q/item-", b"", sequential=True) == "/q/item-0000000000"
    assert await store.create("/q/item-", b"", sequential=True) == "/q/item-0000000001"
    await store.create("/q/plain")
    assert await store.create("/q/item-", b"", sequential=True) == "/q/item-0000000003"
    await store.delete("/q/plain")
    await store.delete("/q/item-0000000000")
    # ZooKeeper's counter counts the creations of children, while the cversion it
    # reports counts their creations and deletions
    assert (await store.exists("/q")).cversion == 6  # type: ignore[union-attr]
    assert await store.create("/q/item-", b"", sequential=True) == "/q/item-0000000004"
    assert await store.create("/q/", b"", sequential=True) == "/q/0000000005"
    stat = await store.exists("/q")
    assert stat is not None and (stat.cversion, stat.num_children) == (8, 4)


# Set and delete


@contract
async def test_set_checks_the_version(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/a", b"v0")
    stat = await store.set("/a", b"v1", version=0)
    assert stat.version == 1
    assert stat.data_length == 2
    with pytest.raises(BadVersionError) as failure:
        await store.set("/a", b"stale", version=0)
    assert "/a" in str(failure.value)
    assert (await store.set("/a", b"v2")).version == 2
    data, stat = await store.get("/a")
    assert data == b"v2"
    assert stat.version == 2
    assert stat.mzxid > stat.czxid
    with pytest.raises(NoNodeError):
        await store.set("/missing", b"x")


@contract
async def test_delete(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/a", b"")
    await store.set("/a", b"x")
    with pytest.raises(BadVersionError):
        await store.delete("/a", version=0)
    await store.delete("/a", version=1)
    assert await store.exists("/a") is None
    with pytest.raises(NoNodeError):
        await store.delete("/a")


@contract
async def test_delete_of_a_node_with_children(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/t/p/0", b"", make_parents=True)
    await store.create("/t/p/1", b"")
    await store.create("/t_other", b"")
    await store.create("/t0", b"")
    with pytest.raises(NotEmptyError) as failure:
        await store.delete("/t")
    assert "/t" in str(failure.value)
    await store.delete("/t", recursive=True)
    assert await store.exists("/t") is None
    assert await store.exists("/t/p/0") is None
    # siblings whose names start alike are untouched
    assert await store.exists("/t_other") is not None
    assert await store.exists("/t0") is not None
    with pytest.raises(NoNodeError):
        await store.delete("/t", recursive=True)


@contract
async def test_recursive_delete_checks_the_version_first(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/t/child", b"", make_parents=True)
    with pytest.raises(BadVersionError):
        await store.delete("/t", version=3, recursive=True)
    assert await store.exists("/t/child") is not None


@contract
async def test_children_are_sorted(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/c")
    for name in ["b", "a", "c10", "c2", "_x"]:
        await store.create(f"/c/{name}")
    assert await store.get_children("/c") == sorted(["b", "a", "c10", "c2", "_x"])
    assert await store.get_children("/c/a") == []
    with pytest.raises(NoNodeError):
        await store.get_children("/missing")


@contract
async def test_stat_counts_children_like_zookeeper(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/p", b"data")
    before = await store.exists("/p")
    await store.create("/p/a")
    await store.create("/p/b")
    await store.delete("/p/a")
    after = await store.exists("/p")
    assert before is not None and after is not None
    assert (after.cversion, after.num_children) == (3, 1)
    # children do not change the parent's data version or mzxid
    assert (after.version, after.mzxid, after.czxid) == (0, before.mzxid, before.czxid)
    assert (await store.exists("/p/b")).czxid > before.czxid  # type: ignore[union-attr]


# Ephemeral nodes and sessions


@contract
async def test_ephemeral_nodes_belong_to_the_session(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/brokers/ids", make_parents=True)
    await store.create("/brokers/ids/1", b"{}", ephemeral=True)
    stat = await store.exists("/brokers/ids/1")
    assert stat is not None
    assert stat.ephemeral_owner == store.session_id != 0
    with pytest.raises(NoChildrenForEphemeralsError):
        await store.create("/brokers/ids/1/child")
    with pytest.raises(NoChildrenForEphemeralsError):
        await store.create("/brokers/ids/1/child", make_parents=True)


@contract
async def test_ephemeral_nodes_vanish_when_the_session_closes(backend: Backend) -> None:
    owner = await backend.session()
    observer = await backend.session()
    assert owner.session_id != observer.session_id
    await owner.create("/brokers/ids", make_parents=True)
    await owner.create("/brokers/ids/1", b"{}", ephemeral=True)
    await owner.create("/controller", b"{}", ephemeral=True)
    await owner.create("/persistent", b"")

    data_watch, child_watch = Recorder(), Recorder()
    assert await observer.exists("/brokers/ids/1", watch=data_watch) is not None
    assert await observer.get_children("/brokers/ids", watch=child_watch) == ["1"]
    await owner.close()

    assert await data_watch.next() == WatchedEvent(EventType.DELETED, "/brokers/ids/1")
    assert await child_watch.next() == WatchedEvent(EventType.CHILD, "/brokers/ids")
    assert await observer.exists("/brokers/ids/1") is None
    assert await observer.exists("/controller") is None
    assert await observer.exists("/persistent") is not None


@contract
async def test_another_session_can_delete_an_ephemeral_node(backend: Backend) -> None:
    owner = await backend.session()
    other = await backend.session()
    await owner.create("/e", b"", ephemeral=True)
    await other.delete("/e")
    await other.create("/e", b"mine", ephemeral=True)
    await owner.close()
    assert (await other.get("/e"))[0] == b"mine"


# Watches


@contract
async def test_data_watch_fires_once_on_change(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/a", b"0")
    watch = Recorder()
    await store.get("/a", watch=watch)
    await store.set("/a", b"1")
    assert await watch.next() == WatchedEvent(EventType.CHANGED, "/a")
    await store.set("/a", b"2")
    await store.delete("/a")
    await barrier(store)
    assert len(watch.events) == 1


@contract
async def test_data_watch_fires_on_delete(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/a", b"0")
    watch = Recorder()
    await store.exists("/a", watch=watch)
    await store.delete("/a")
    assert await watch.next() == WatchedEvent(EventType.DELETED, "/a")


@contract
async def test_exists_watch_fires_on_creation(backend: Backend) -> None:
    store = await backend.session()
    watch = Recorder()
    assert await store.exists("/later", watch=watch) is None
    await store.create("/later", b"")
    assert await watch.next() == WatchedEvent(EventType.CREATED, "/later")


@contract
async def test_get_of_a_missing_node_sets_no_watch(backend: Backend) -> None:
    store = await backend.session()
    watch = Recorder()
    with pytest.raises(NoNodeError):
        await store.get("/later", watch=watch)
    await store.create("/later", b"")
    await barrier(store)
    assert watch.events == []


@contract
async def test_child_watch_fires_once(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/p")
    watch = Recorder()
    assert await store.get_children("/p", watch=watch) == []
    await store.create("/p/a")
    assert await watch.next() == WatchedEvent(EventType.CHILD, "/p")
    await store.create("/p/b")
    await barrier(store)
    assert len(watch.events) == 1

    await store.get_children("/p", watch=watch)
    await store.delete("/p/a")
    assert await watch.next() == WatchedEvent(EventType.CHILD, "/p")
    # a change of the parent's data is not a child event
    await store.get_children("/p", watch=watch)
    await store.set("/p", b"new")
    await barrier(store)
    assert len(watch.events) == 2


@contract
async def test_child_watch_fires_when_the_node_is_deleted(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/p")
    watch = Recorder()
    await store.get_children("/p", watch=watch)
    await store.delete("/p")
    assert await watch.next() == WatchedEvent(EventType.DELETED, "/p")


@contract
async def test_watches_are_called_on_the_loop_thread(backend: Backend) -> None:
    store = await backend.session()
    other = await backend.session()
    await store.create("/a", b"")
    data_watch, child_watch = Recorder(), Recorder()
    await store.get("/a", watch=data_watch)
    await store.get_children("/", watch=child_watch)
    await other.set("/a", b"x")
    await other.create("/b")
    await data_watch.next()
    await child_watch.next()
    loop_thread = threading.get_ident()
    assert data_watch.threads == child_watch.threads == [loop_thread]


@contract
async def test_coroutine_watch_callbacks_run_as_tasks(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/a", b"")
    seen: asyncio.Queue[tuple[WatchedEvent, bytes]] = asyncio.Queue()

    async def on_change(event: WatchedEvent) -> None:
        data, _ = await store.get(event.path)
        seen.put_nowait((event, data))

    await store.get("/a", watch=on_change)
    await store.set("/a", b"new")
    event, data = await asyncio.wait_for(seen.get(), WAIT_S)
    assert event == WatchedEvent(EventType.CHANGED, "/a")
    assert data == b"new"


@contract
async def test_watches_of_other_sessions_fire(backend: Backend) -> None:
    watcher = await backend.session()
    writer = await backend.session()
    await writer.create("/a", b"")
    first, second = Recorder(), Recorder()
    await watcher.get("/a", watch=first)
    await writer.get("/a", watch=second)
    await writer.set("/a", b"x")
    assert await first.next() == WatchedEvent(EventType.CHANGED, "/a")
    assert await second.next() == WatchedEvent(EventType.CHANGED, "/a")


# Multi-op transactions


@contract
async def test_multi_applies_all_operations(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/s", b"0")
    await store.create("/gone", b"")
    results = await store.multi(
        [
            CheckOp("/s", 0),
            CreateOp("/n", b"new"),
            CreateOp("/n/child", b"c"),
            CreateOp("/n/seq-", b"", sequential=True),
            SetDataOp("/s", b"1", version=0),
            DeleteOp("/gone"),
        ]
    )
    assert results[0] is None
    assert results[1:4] == ["/n", "/n/child", "/n/seq-0000000001"]
    assert isinstance(results[4], Stat) and results[4].version == 1
    assert results[5] is None
    assert (await store.get("/n/child"))[0] == b"c"
    assert (await store.get("/s"))[0] == b"1"
    assert await store.exists("/gone") is None


@pytest.mark.parametrize(
    "failing_op, error",
    [
        (CheckOp("/s", 5), BadVersionError),
        (SetDataOp("/s", b"x", version=7), BadVersionError),
        (CreateOp("/s", b""), NodeExistsError),
        (CreateOp("/missing/child", b""), NoNodeError),
        (DeleteOp("/missing"), NoNodeError),
        (DeleteOp("/p"), NotEmptyError),
    ],
)
def test_multi_is_all_or_nothing(backend: Backend, failing_op: object, error: type) -> None:
    async def scenario(backend: Backend) -> None:
        store = await backend.session()
        await store.create("/s", b"0")
        await store.create("/p/c", b"", make_parents=True)
        watch = Recorder()
        await store.get("/s", watch=watch)
        with pytest.raises(error):
            await store.multi(
                [CreateOp("/new", b""), SetDataOp("/s", b"changed"), failing_op]  # type: ignore[list-item]
            )
        assert await store.exists("/new") is None
        data, stat = await store.get("/s")
        assert (data, stat.version) == (b"0", 0)
        await barrier(store)
        assert watch.events == []

    contract(scenario)(backend)


@contract
async def test_multi_fires_watches(backend: Backend) -> None:
    store = await backend.session()
    await store.create("/s", b"0")
    data_watch, child_watch = Recorder(), Recorder()
    await store.get("/s", watch=data_watch)
    await store.get_children("/", watch=child_watch)
    await store.multi([SetDataOp("/s", b"1"), CreateOp("/t", b"")])
    assert await data_watch.next() == WatchedEvent(EventType.CHANGED, "/s")
    assert await child_watch.next() == WatchedEvent(EventType.CHILD, "/")


@contract
async def test_invalid_paths_are_rejected(backend: Backend) -> None:
    store = await backend.session()
    for path in ["relative", "/trailing/", "/double//slash", "/dot/./x", ""]:
        with pytest.raises(ValueError):
            await store.create(path, b"")
        with pytest.raises(ValueError):
            await store.get(path)
