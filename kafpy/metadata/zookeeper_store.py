"""The ZooKeeper metadata store: a real Apache ZooKeeper ensemble, through kazoo.

kazoo runs its own threads: requests complete and watches fire there. This module
bridges both onto the asyncio loop that started the store: requests use kazoo's
`*_async` variants whose completion settles an asyncio future through
`loop.call_soon_threadsafe`, and watch events are handed to the loop the same way.

kazoo forgets its watches whenever the connection drops, even if the session survives
(it does not send ZooKeeper's SetWatches on reconnection). The store therefore keeps
its own registry of outstanding watches, like the Java client's watch manager, and when
the connection comes back with the same session it sets them again, firing at once
those whose node changed in the meantime (by comparing the node's mzxid, or pzxid for
children, with the one last seen). When the session expires the watches are dropped; once
kazoo has opened a new session, the `on_session_expired` callbacks are called.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import Callable, Sequence
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType as KazooEventType
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry

from kafpy.common.logger import component_logger
from kafpy.metadata.errors import (
    BadVersionError,
    ConnectionLossError,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kafpy.metadata.store import (
    MULTI_OPS_PER_REQUEST,
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
    parent_of,
    validate_path,
)
from kafpy.metadata.store_factory import DEFAULT_SESSION_TIMEOUT_MS

DATA = "data"
CHILD = "child"


def split_connect_string(connect: str) -> tuple[str, str | None]:
    """`host:port,host:port/chroot` -> (`host:port,host:port`, `/chroot` or None)."""
    hosts, slash, chroot = connect.partition("/")
    if not slash or chroot.strip("/") == "":
        return hosts, None
    chroot = "/" + chroot.rstrip("/")
    validate_path(chroot)
    return hosts, chroot


def unreachable_servers(hosts: str, timeout_s: float = 1.0) -> list[tuple[str, str]]:
    """(`host:port`, why) for each server of `hosts` (`host:port,...`) that refuses or does
    not answer a TCP connection. Blocks for up to `timeout_s` per silent server."""
    out = []
    for server in (h.strip() for h in hosts.split(",")):
        host, sep, port = server.rpartition(":")
        if not sep:
            host, port = server, "2181"
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                pass
        except (OSError, ValueError) as e:
            # "connection refused", "timed out", "name or service not known"
            reason = (e.strerror if isinstance(e, OSError) and e.strerror else str(e)).lower()
            out.append((server, reason or type(e).__name__))
    return out


def to_stat(stat: ZnodeStat) -> Stat:
    return Stat(
        version=stat.version,
        cversion=stat.cversion,
        czxid=stat.czxid,
        mzxid=stat.mzxid,
        ctime=stat.ctime,
        mtime=stat.mtime,
        ephemeral_owner=stat.ephemeralOwner,
        num_children=stat.numChildren,
        data_length=stat.dataLength,
    )


def translate_error(error: BaseException, action: str, path: str) -> BaseException:
    """The kafpy.metadata error for a kazoo exception raised while `action` on `path`."""
    if isinstance(error, MetadataStoreError | ValueError | TypeError):
        return error
    if isinstance(error, kz.NoNodeError):
        if action == "create":
            return NoNodeError(
                f"Cannot create {path}: its parent {parent_of(path)} does not exist.", path
            )
        return NoNodeError(f"Node {path} does not exist.", path)
    if isinstance(error, kz.NodeExistsError):
        return NodeExistsError(f"Node {path} already exists.", path)
    if isinstance(error, kz.BadVersionError):
        return BadVersionError(
            f"Cannot {action} {path}: its version is not the expected one.", path
        )
    if isinstance(error, kz.NotEmptyError):
        return NotEmptyError(
            f"Cannot delete {path}: it has children (delete them first or delete recursively).",
            path,
        )
    if isinstance(error, kz.NoChildrenForEphemeralsError):
        return NoChildrenForEphemeralsError(
            f"Cannot create {path}: its parent {parent_of(path)} is ephemeral and cannot have "
            "children.",
            path,
        )
    if isinstance(error, kz.SessionExpiredError):
        return SessionExpiredError(f"Cannot {action} {path}: the ZooKeeper session expired.", path)
    if isinstance(error, kz.ConnectionClosedError):
        return ConnectionLossError(f"Cannot {action} {path}: the ZooKeeper store is closed.", path)
    if isinstance(error, kz.ConnectionLoss | KazooTimeoutError | kz.OperationTimeoutError):
        return ConnectionLossError(
            f"Lost the connection to ZooKeeper during {action} of {path}; the outcome is unknown.",
            path,
        )
    if isinstance(error, kz.KazooException):
        return MetadataStoreError(f"ZooKeeper failed to {action} {path}: {error!r}.", path)
    return error


class _KazooWatcher:
    """The watcher given to kazoo for one (kind, path): forwards its event to the loop.

    Equal for the same store, kind and path, so kazoo keeps one per path however many
    times the store sets it.
    """

    def __init__(self, store: ZooKeeperStore, kind: str, path: str) -> None:
        self.store = store
        self.kind = kind
        self.path = path

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _KazooWatcher)
            and other.store is self.store
            and (other.kind, other.path) == (self.kind, self.path)
        )

    def __hash__(self) -> int:
        return hash((id(self.store), self.kind, self.path))

    def __call__(self, event: Any) -> None:
        # on a kazoo thread; NONE means the connection dropped: re-armed on reconnection
        if event.type == KazooEventType.NONE:
            return
        self.store._call_on_loop(self.store._trigger, self.kind, self.path, EventType(event.type))


class ZooKeeperStore(MetadataStore):
    """The metadata store on a ZooKeeper ensemble (`zookeeper.connect`), through kazoo.

    `connect` is `host:port[,host:port...][/chroot]`; a missing chroot is created, as
    Kafka does. `session_timeout_ms` is asked of the server (which bounds it by its
    min/maxSessionTimeout); `connection_timeout_ms` bounds the wait for the first
    connection in `start()` (ConnectionLossError after it).
    """

    def __init__(
        self,
        connect: str,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
    ) -> None:
        self.connect = connect
        self.hosts, self.chroot = split_connect_string(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self._client: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_id = 0
        self._closing = False
        self._session_lost = False
        self._suspended = False
        # path -> callbacks, and the node's mzxid (None: absent) / pzxid when last seen
        self._data_watches: dict[str, set[WatchCallback]] = {}
        self._child_watches: dict[str, set[WatchCallback]] = {}
        self._seen_mzxid: dict[str, int | None] = {}
        self._seen_pzxid: dict[str, int] = {}
        self._expiry_callbacks: list[Callable[[], object]] = []
        self._tasks: set[asyncio.Future[Any]] = set()
        self._log = component_logger(__name__, "ZooKeeperStore")

    # Session

    async def start(self) -> None:
        if self._client is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._closing = False
        if self.chroot is not None:
            await self._loop.run_in_executor(None, self._ensure_chroot)
        client = self._new_client(self.connect)
        client.add_listener(self._on_state_change)
        try:
            await self._loop.run_in_executor(
                None, lambda: client.start(timeout=self.connection_timeout_ms / 1000)
            )
        except Exception as e:
            await self._loop.run_in_executor(None, self._stop_client, client)
            raise await self._loop.run_in_executor(None, self._connect_error, e) from e
        self._client = client
        self._session_id = self._current_session_id()
        self._log.info("Connected to ZooKeeper %s, session 0x%x", self.connect, self._session_id)
        if "," in self.hosts:
            # the session is up through one server: say which others an operator should fix
            for server, reason in await self._loop.run_in_executor(
                None, unreachable_servers, self.hosts
            ):
                self._log.warning(
                    "ZooKeeper server %s of zookeeper.connect is not reachable (%s): the "
                    "ensemble serves only while a majority of its servers is up",
                    server,
                    reason,
                )

    def _new_client(self, hosts: str) -> KazooClient:
        return KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0),
        )

    def _connect_error(self, error: BaseException) -> ConnectionLossError:
        """(Blocking: probes the servers.) The error naming the servers not reachable."""
        unreachable = unreachable_servers(self.hosts)
        down = ""
        if unreachable:
            down = " Not reachable: " + ", ".join(f"{s} ({why})" for s, why in unreachable) + "."
            if "," in self.hosts and len(unreachable) < len(self.hosts.split(",")):
                down += " The others do not serve without a majority of the ensemble."
        return ConnectionLossError(
            f"Could not connect to ZooKeeper at {self.connect} within "
            f"{self.connection_timeout_ms} ms ({error!r}).{down} Check zookeeper.connect and "
            "that ZooKeeper is running."
        )

    def _ensure_chroot(self) -> None:
        """Create the chroot through a client without it (in an executor thread)."""
        assert self.chroot is not None
        client = self._new_client(self.hosts)
        try:
            client.start(timeout=self.connection_timeout_ms / 1000)
        except Exception as e:
            self._stop_client(client)
            raise self._connect_error(e) from e
        try:
            client.ensure_path(self.chroot)
        finally:
            self._stop_client(client)

    @staticmethod
    def _stop_client(client: KazooClient) -> None:
        client.stop()
        client.close()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        self._closing = True
        self._data_watches.clear()
        self._child_watches.clear()
        assert self._loop is not None
        await self._loop.run_in_executor(None, self._stop_client, client)
        self._log.info("Closed ZooKeeper session 0x%x", self._session_id)
        self._session_id = 0

    @property
    def session_id(self) -> int:
        return self._session_id

    def on_session_expired(self, callback: Callable[[], object]) -> None:
        self._expiry_callbacks.append(callback)

    def _current_session_id(self) -> int:
        client_id = self._client.client_id if self._client is not None else None
        return int(client_id[0]) if client_id else 0

    def _on_state_change(self, state: str) -> None:
        # on a kazoo thread: must not block
        if self._closing:
            return
        if state == KazooState.LOST:
            self._session_lost = True
            self._call_on_loop(self._on_session_lost)
        elif state == KazooState.SUSPENDED:
            self._suspended = True
        elif state == KazooState.CONNECTED:
            lost, self._session_lost = self._session_lost, False
            suspended, self._suspended = self._suspended, False
            if lost:
                self._call_on_loop(self._on_new_session)
            elif suspended:
                self._call_on_loop(self._spawn, self._rearm_watches())

    def _on_session_lost(self) -> None:
        self._log.warning("ZooKeeper session 0x%x expired", self._session_id)
        self._data_watches.clear()
        self._child_watches.clear()
        self._seen_mzxid.clear()
        self._seen_pzxid.clear()

    def _on_new_session(self) -> None:
        if self._client is None:
            return
        self._session_id = self._current_session_id()
        self._log.info("New ZooKeeper session 0x%x", self._session_id)
        for callback in list(self._expiry_callbacks):
            self._run_callback(callback, ())

    async def _rearm_watches(self) -> None:
        """After a reconnection with the same session: set kazoo's watches again."""
        for path in list(self._data_watches):
            try:
                stat = await self._call(
                    "watch", path, self._kazoo().exists_async(path, _KazooWatcher(self, DATA, path))
                )
            except MetadataStoreError as e:
                self._log.warning("Could not set the watch on %s again: %s", path, e)
                continue
            seen = self._seen_mzxid.get(path)
            if stat is None and seen is not None:
                self._trigger(DATA, path, EventType.DELETED)
            elif stat is not None and seen is None:
                self._trigger(DATA, path, EventType.CREATED)
            elif stat is not None and stat.mzxid != seen:
                self._trigger(DATA, path, EventType.CHANGED)
        for path in list(self._child_watches):
            try:
                _, stat = await self._call(
                    "watch",
                    path,
                    self._kazoo().get_children_async(
                        path, _KazooWatcher(self, CHILD, path), include_data=True
                    ),
                )
            except NoNodeError:
                self._trigger(CHILD, path, EventType.DELETED)
                continue
            except MetadataStoreError as e:
                self._log.warning("Could not set the watch on %s again: %s", path, e)
                continue
            if stat.pzxid != self._seen_pzxid.get(path):
                self._trigger(CHILD, path, EventType.CHILD)

    # Bridging kazoo onto the loop

    def _kazoo(self) -> KazooClient:
        if self._client is None:
            raise ConnectionLossError(
                f"The ZooKeeper store for {self.connect} is not started (call start() first) "
                "or was closed."
            )
        return self._client

    def _call_on_loop(self, function: Callable[..., object], *args: object) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(function, *args)
            except RuntimeError:
                pass  # the loop closed meanwhile

    async def _call(self, action: str, path: str, async_result: Any) -> Any:
        """Await a kazoo IAsyncResult, translating its error."""
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()

        def settle(result: Any) -> None:
            if future.done():
                return
            if result.successful():
                future.set_result(result.value)
            else:
                future.set_exception(result.exception)

        async_result.rawlink(lambda result: self._call_on_loop(settle, result))
        try:
            return await future
        except BaseException as e:
            translated = translate_error(e, action, path)
            if translated is e:
                raise
            raise translated from e

    def _trigger(self, kind: str, path: str, event_type: EventType) -> None:
        """A watch event (on the loop): call, once, the callbacks watching `path`."""
        registry = self._data_watches if kind == DATA else self._child_watches
        callbacks = registry.pop(path, None)
        (self._seen_mzxid if kind == DATA else self._seen_pzxid).pop(path, None)
        if not callbacks:
            return
        event = WatchedEvent(event_type, path)
        for callback in callbacks:
            self._run_callback(callback, (event,))

    def _run_callback(self, callback: Callable[..., object], args: tuple[object, ...]) -> None:
        try:
            result = callback(*args)
        except Exception:
            self._log.exception("Metadata callback %r failed", callback)
            return
        if inspect.isawaitable(result):
            self._spawn(result)

    def _spawn(self, awaitable: Any) -> None:
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("Metadata callback failed", exc_info=task.exception())

    def _register(self, kind: str, path: str, callback: WatchCallback) -> _KazooWatcher:
        # registered before the request is sent, so that an event arriving right after
        # the response (before this coroutine resumes) still finds the callback
        registry = self._data_watches if kind == DATA else self._child_watches
        registry.setdefault(path, set()).add(callback)
        return _KazooWatcher(self, kind, path)

    def _unregister(self, kind: str, path: str, callback: WatchCallback) -> None:
        registry = self._data_watches if kind == DATA else self._child_watches
        callbacks = registry.get(path)
        if callbacks is not None:
            callbacks.discard(callback)
            if not callbacks:
                del registry[path]

    # Operations

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        validate_path(path + "0" if sequential else path)
        created: str = await self._call(
            "create",
            path,
            self._kazoo().create_async(
                path, bytes(data), ephemeral=ephemeral, sequence=sequential, makepath=make_parents
            ),
        )
        return created

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        validate_path(path)
        watcher = self._register(DATA, path, watch) if watch is not None else None
        try:
            data, stat = await self._call("get", path, self._kazoo().get_async(path, watcher))
        except BaseException:
            if watch is not None:
                self._unregister(DATA, path, watch)
            raise
        if watch is not None:
            self._seen_mzxid[path] = stat.mzxid
        return data, to_stat(stat)

    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        validate_path(path)
        watcher = self._register(DATA, path, watch) if watch is not None else None
        try:
            stat = await self._call("exists", path, self._kazoo().exists_async(path, watcher))
        except BaseException:
            if watch is not None:
                self._unregister(DATA, path, watch)
            raise
        if watch is not None:
            self._seen_mzxid[path] = stat.mzxid if stat is not None else None
        return to_stat(stat) if stat is not None else None

    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        validate_path(path)
        watcher = self._register(CHILD, path, watch) if watch is not None else None
        try:
            children, stat = await self._call(
                "list the children of",
                path,
                self._kazoo().get_children_async(path, watcher, include_data=True),
            )
        except BaseException:
            if watch is not None:
                self._unregister(CHILD, path, watch)
            raise
        if watch is not None:
            self._seen_pzxid[path] = stat.pzxid
        return sorted(children)

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        validate_path(path)
        stat = await self._call("set", path, self._kazoo().set_async(path, bytes(data), version))
        return to_stat(stat)

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        validate_path(path)
        if path == "/":
            raise ValueError("The root node / cannot be deleted.")
        if recursive:
            stat = await self.exists(path)
            if stat is None:
                raise NoNodeError(f"Node {path} does not exist.", path)
            if version != -1 and stat.version != version:
                raise BadVersionError(
                    f"Cannot delete {path}: expected version {version} but it is {stat.version}.",
                    path,
                )
            await self._delete_descendants(path)
        await self._call("delete", path, self._kazoo().delete_async(path, version))

    async def _delete_descendants(self, path: str) -> None:
        """Delete everything under `path`, deepest level first. Each level's listings are
        sent together (kazoo pipelines them on the one connection), then its deletes, in
        transactions of MULTI_OPS_PER_REQUEST: a topic of 1,000 partitions costs a few
        round trips, not 4,000."""
        levels: list[list[str]] = []
        current = [path]
        while current:
            listings = await asyncio.gather(*(self._children_or_empty(p) for p in current))
            current = [
                f"{parent.rstrip('/')}/{child}"
                for parent, children in zip(current, listings, strict=True)
                for child in children
            ]
            if current:
                levels.append(current)
        for level in reversed(levels):
            chunks = [
                level[i : i + MULTI_OPS_PER_REQUEST]
                for i in range(0, len(level), MULTI_OPS_PER_REQUEST)
            ]
            await asyncio.gather(*(self._delete_all(chunk) for chunk in chunks))

    async def _delete_all(self, paths: list[str]) -> None:
        """Delete `paths` in one transaction; if one of them went meanwhile, the others one
        by one."""
        try:
            await self.multi([DeleteOp(p) for p in paths])
        except NoNodeError:
            await asyncio.gather(*(self._delete_if_exists(p) for p in paths))

    async def _children_or_empty(self, path: str) -> list[str]:
        try:
            return await self.get_children(path)
        except NoNodeError:
            return []

    async def _delete_if_exists(self, path: str) -> None:
        try:
            await self._call("delete", path, self._kazoo().delete_async(path))
        except NoNodeError:
            pass  # deleted by someone else meanwhile

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        transaction = self._kazoo().transaction()
        for op in ops:
            if isinstance(op, CreateOp):
                validate_path(op.path + "0" if op.sequential else op.path)
                transaction.create(
                    op.path, bytes(op.data), ephemeral=op.ephemeral, sequence=op.sequential
                )
            elif isinstance(op, SetDataOp):
                validate_path(op.path)
                transaction.set_data(op.path, bytes(op.data), op.version)
            elif isinstance(op, DeleteOp):
                validate_path(op.path)
                transaction.delete(op.path, op.version)
            elif isinstance(op, CheckOp):
                validate_path(op.path)
                transaction.check(op.path, op.version)
            else:
                raise TypeError(f"Unknown metadata operation {op!r}.")
        if not ops:
            return []
        results = await self._call(
            "commit a transaction on", ops[0].path, transaction.commit_async()
        )
        failures = [
            (op, result)
            for op, result in zip(ops, results, strict=True)
            if isinstance(result, Exception) and not isinstance(result, kz.RolledBackError)
        ]
        if failures:
            op, error = failures[0]
            action = {CreateOp: "create", SetDataOp: "set", DeleteOp: "delete", CheckOp: "check"}
            raise translate_error(error, action[type(op)], op.path) from error
        converted: list[str | Stat | None] = []
        for op, result in zip(ops, results, strict=True):
            if isinstance(op, CreateOp):
                converted.append(result)
            elif isinstance(op, SetDataOp):
                converted.append(to_stat(result))
            else:
                converted.append(None)
        return converted
