"""The embedded metadata store: ZooKeeper's data model in-process, persisted in SQLite.

`kafpy server` uses it when no `zookeeper.connect` is configured, and tests use it to run
several brokers in one process. Every `EmbeddedStore` is one *session* (a ZooKeeper
client's) on the `EmbeddedServer` of its data directory, shared by all sessions on that
directory in this process: it holds the open sessions and the watches they set, over the
`MetadataDatabase` (kafpy.metadata.metadata_database) that keeps the nodes in SQLite, so
sessions see each other's writes, ephemeral nodes and watches exactly as ZooKeeper clients
of one ensemble do.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter
from typing import TypeVar

from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.metadata.errors import ConnectionLossError
from kafpy.metadata.metadata_database import (
    DB_FILE_NAME,
    Fired,
    MetadataDatabase,
    Node,
    Transaction,
)
from kafpy.metadata.store import (
    CheckOp,
    CreateOp,
    DeleteOp,
    EventType,
    MetadataStore,
    Op,
    SetDataOp,
    Stat,
    WatchCallback,
    WatchedEvent,
    validate_path,
)

__all__ = ["DB_FILE_NAME", "EmbeddedServer", "EmbeddedStore"]

T = TypeVar("T")

# the longest stretch of one event-loop iteration spent answering requests
_SLICE_S = 0.005


class EmbeddedServer:
    """What a ZooKeeper server is to its clients, for the sessions on one metadata
    database in this process: the open sessions, the watches they set, and the database.

    Obtain one through `open()`; it closes its database when its last session closes.
    Sessions and watches change under the database's lock, as transactions do.
    """

    _registry: dict[str, EmbeddedServer] = {}
    _registry_lock = threading.Lock()

    def __init__(self, database: MetadataDatabase, key: str) -> None:
        self.database = database
        self.key = key
        self.lock = database.lock
        self.sessions: dict[int, EmbeddedStore] = {}
        # path -> session id -> callbacks
        self.data_watches: dict[str, dict[int, set[WatchCallback]]] = {}
        self.child_watches: dict[str, dict[int, set[WatchCallback]]] = {}

    @classmethod
    def open(cls, data_dir: Path | None, time: Time = SYSTEM_TIME) -> EmbeddedServer:
        """The server of `data_dir` already open in this process, or a newly opened one
        (a new in-memory one for None)."""
        if data_dir is None:
            database = MetadataDatabase(None, time)
            return cls(database, f"memory:{id(database)}")
        with cls._registry_lock:
            key = str(Path(data_dir).resolve())
            server = cls._registry.get(key)
            if server is None:
                server = cls(MetadataDatabase(Path(data_dir), time), key)
                cls._registry[key] = server
            return server

    # Sessions

    def add_session(self, store: EmbeddedStore) -> int:
        with self.lock:
            session_id = self.database.new_session_id()
            self.sessions[session_id] = store
            return session_id

    def end_session(self, session_id: int) -> None:
        """Forget the session's watches and delete its ephemeral nodes (firing watches)."""
        with self.lock:
            self.sessions.pop(session_id, None)
            for registry in (self.data_watches, self.child_watches):
                for path in list(registry):
                    registry[path].pop(session_id, None)
                    if not registry[path]:
                        del registry[path]
            if self.database.is_closed:
                return
            self.transact(session_id, lambda txn: txn.delete_ephemerals(session_id), write=True)

    def release(self) -> None:
        """Close the database if no session is open on it any more."""
        with self.lock:
            if self.sessions or self.database.is_closed:
                return
            with self._registry_lock:
                if self._registry.get(self.key) is self:
                    del self._registry[self.key]
            self.database.close()

    def transact(
        self,
        session_id: int,
        body: Callable[[Transaction], T],
        *,
        write: bool,
    ) -> T:
        """Run `body` in one database transaction, then fire the watches it triggered."""
        with self.lock:
            result, fired = self.database.transact(session_id, body, write=write)
            self._fire(fired)
            return result

    # Watches

    def add_watch(self, kind: str, path: str, session_id: int, callback: WatchCallback) -> None:
        registry = self.data_watches if kind == "data" else self.child_watches
        with self.lock:
            registry.setdefault(path, {}).setdefault(session_id, set()).add(callback)

    def _fire(self, fired: Fired) -> None:
        for path, event_type in fired.data:
            self._trigger(self.data_watches, path, event_type)
            if event_type is EventType.DELETED:
                self._trigger(self.child_watches, path, EventType.DELETED)
        for parent in fired.child:
            self._trigger(self.child_watches, parent, EventType.CHILD)

    def _trigger(
        self, registry: dict[str, dict[int, set[WatchCallback]]], path: str, event_type: EventType
    ) -> None:
        watchers = registry.pop(path, None)
        if not watchers:
            return
        event = WatchedEvent(event_type, path)
        for session_id, callbacks in watchers.items():
            session = self.sessions.get(session_id)
            if session is not None:
                for callback in callbacks:
                    session._deliver(callback, event)


class EmbeddedStore(MetadataStore):
    """A session on the embedded (SQLite) metadata database of `data_dir`.

    `data_dir=None` keeps the nodes in memory; further sessions on the same in-memory
    database come from `new_session()`. Sessions on the same directory in one process share
    one database: each sees the others' nodes, ephemeral nodes and watches. `time` sets the
    clock of the ctime/mtime stats.
    """

    def __init__(self, data_dir: Path | str | None, *, time: Time = SYSTEM_TIME) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._time = time
        self._server: EmbeddedServer | None = None
        self._session_id = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._expiry_callbacks: list[Callable[[], object]] = []
        self._tasks: set[asyncio.Future[object]] = set()
        self._log = component_logger(__name__, "EmbeddedStore")
        self._burst_started: float | None = None

    def new_session(self) -> EmbeddedStore:
        """Another (not yet started) session on this store's database, in memory or not.

        For an in-memory store, the database lives while at least one session is open.
        """
        store = EmbeddedStore(self.data_dir, time=self._time)
        if self.data_dir is None:
            store._server = self._open_server()
        return store

    def _open_server(self) -> EmbeddedServer:
        if self._server is None or self._server.database.is_closed:
            self._server = EmbeddedServer.open(self.data_dir, self._time)
        return self._server

    async def start(self) -> None:
        if self._session_id:
            return
        self._loop = asyncio.get_running_loop()
        server = self._open_server()
        self._session_id = server.add_session(self)
        self._log.debug("Session 0x%x opened on %s", self._session_id, server.database.describe())

    async def close(self) -> None:
        server, session_id = self._server, self._session_id
        if server is None or not session_id:
            return
        self._session_id = 0
        server.end_session(session_id)
        server.release()
        self._log.debug("Session 0x%x closed", session_id)

    async def expire_session(self) -> None:
        """Simulate the expiry of this session (for tests).

        As with ZooKeeper: its ephemeral nodes are deleted (firing other sessions'
        watches), its own watches are lost, then a new session takes its place and the
        `on_session_expired` callbacks are called on the loop.
        """
        server = self._require_server()
        old_session = self._session_id
        self._session_id = 0
        server.end_session(old_session)
        self._session_id = server.add_session(self)
        self._log.info("Session 0x%x expired; new session 0x%x", old_session, self._session_id)
        assert self._loop is not None
        for callback in list(self._expiry_callbacks):
            self._loop.call_soon_threadsafe(self._run_callback, callback, ())

    @property
    def session_id(self) -> int:
        return self._session_id

    def on_session_expired(self, callback: Callable[[], object]) -> None:
        self._expiry_callbacks.append(callback)

    # Operations

    def _require_server(self) -> EmbeddedServer:
        if self._server is None or not self._session_id:
            raise ConnectionLossError(
                "The embedded metadata store session is not open: call start() first "
                "(or it was closed)."
            )
        return self._server

    def _transact(self, body: Callable[[Transaction], T], *, write: bool) -> T:
        return self._require_server().transact(self._session_id, body, write=write)

    async def _request(self, body: Callable[[Transaction], T], *, write: bool) -> T:
        """One request, answered at once, unless this loop iteration has already spent more
        than _SLICE_S in the store: then it waits for the loop's other work first.
        (ZooKeeper answers over the network, so its callers' loops run other work between
        two requests; without the pause a burst of requests, such as a controller creating
        1,000 partition state nodes, would hold the loop for all its length. The check comes
        before the request: 1,000 concurrent callers, each woken in the same iteration,
        would each make one request past the slice if it came after.)"""
        while self._burst_started is not None and perf_counter() - self._burst_started > _SLICE_S:
            await asyncio.sleep(0)  # _end_burst, queued before, runs first
        result = self._transact(body, write=write)
        if self._burst_started is None:
            self._burst_started = perf_counter()
            asyncio.get_running_loop().call_soon(self._end_burst)
        return result

    def _end_burst(self) -> None:
        self._burst_started = None

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        def body(txn: Transaction) -> str:
            return txn.create(
                path, data, ephemeral=ephemeral, sequential=sequential, make_parents=make_parents
            )

        return await self._request(body, write=True)

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        validate_path(path)

        def body(txn: Transaction) -> Node:
            node = txn.existing(path)
            if watch is not None:
                self._add_watch("data", path, watch)
            return node

        node = await self._request(body, write=False)
        return node.data, node.stat()

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        validate_path(path)
        return await self._request(lambda txn: txn.set(path, data, version), write=True)

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        await self._request(lambda txn: txn.delete(path, version, recursive), write=True)

    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        validate_path(path)

        def body(txn: Transaction) -> Node | None:
            node = txn.node(path)
            if watch is not None:
                self._add_watch("data", path, watch)
            return node

        found = await self._request(body, write=False)
        return found.stat() if found is not None else None

    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        validate_path(path)

        def body(txn: Transaction) -> list[str]:
            children = txn.children(path)
            if watch is not None:
                self._add_watch("child", path, watch)
            return children

        return await self._request(body, write=False)

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        def body(txn: Transaction) -> list[str | Stat | None]:
            results: list[str | Stat | None] = []
            for op in ops:
                if isinstance(op, CreateOp):
                    results.append(
                        txn.create(
                            op.path, op.data, ephemeral=op.ephemeral, sequential=op.sequential
                        )
                    )
                elif isinstance(op, SetDataOp):
                    results.append(txn.set(op.path, op.data, op.version))
                elif isinstance(op, DeleteOp):
                    txn.delete(op.path, op.version)
                    results.append(None)
                elif isinstance(op, CheckOp):
                    txn.check(op.path, op.version)
                    results.append(None)
                else:
                    raise TypeError(f"Unknown metadata operation {op!r}.")
            return results

        return await self._request(body, write=True)

    # Watch delivery

    def _add_watch(self, kind: str, path: str, callback: WatchCallback) -> None:
        assert self._server is not None
        self._server.add_watch(kind, path, self._session_id, callback)

    def _deliver(self, callback: WatchCallback, event: WatchedEvent) -> None:
        """Called by the server (under its lock): run the callback later on our loop."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._run_callback, callback, (event,))

    def _run_callback(self, callback: Callable[..., object], args: tuple[object, ...]) -> None:
        if not self._session_id:
            return  # closed meanwhile
        try:
            result = callback(*args)
        except Exception:
            self._log.exception("Metadata callback %r failed", callback)
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Future[object]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("Metadata callback failed", exc_info=task.exception())
