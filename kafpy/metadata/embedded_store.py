"""The embedded metadata store: ZooKeeper's data model in-process, persisted in SQLite.

`kafpy server` uses it when no `zookeeper.connect` is configured, and tests use it to run
several brokers in one process. The nodes live in `<data_dir>/metadata.db`; every
`EmbeddedStore` is one *session* on a `MetadataDatabase` shared by all sessions on that
file in this process, which owns the SQLite connection, the open sessions and the watch
registry, so sessions see each other's writes, ephemeral nodes and watches exactly as
ZooKeeper clients of one ensemble do. One process at a time may open a data directory
(`metadata.lock`); when it opens it, the ephemeral nodes of the sessions of a previous
run are deleted, as ZooKeeper expires the sessions of clients that died.

SQLite calls are short (metadata is small) and run directly on the event loop.
"""

from __future__ import annotations

import asyncio
import fcntl
import inspect
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.metadata.errors import (
    BadVersionError,
    ConnectionLossError,
    MetadataStoreError,
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
    Op,
    SetDataOp,
    Stat,
    WatchCallback,
    WatchedEvent,
)

T = TypeVar("T")

DB_FILE_NAME = "metadata.db"
LOCK_FILE_NAME = "metadata.lock"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    path TEXT PRIMARY KEY,
    parent TEXT,
    data BLOB NOT NULL,
    version INTEGER NOT NULL,
    cversion INTEGER NOT NULL,
    czxid INTEGER NOT NULL,
    mzxid INTEGER NOT NULL,
    pzxid INTEGER NOT NULL,
    ctime INTEGER NOT NULL,
    mtime INTEGER NOT NULL,
    ephemeral_owner INTEGER NOT NULL,
    num_children INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS nodes_by_parent ON nodes(parent);
CREATE INDEX IF NOT EXISTS nodes_by_owner ON nodes(ephemeral_owner) WHERE ephemeral_owner != 0;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_COLUMNS = (
    "path, parent, data, version, cversion, czxid, mzxid, pzxid, ctime, mtime, "
    "ephemeral_owner, num_children"
)


@dataclass
class _Node:
    path: str
    parent: str | None
    data: bytes
    version: int
    cversion: int
    czxid: int
    mzxid: int
    pzxid: int
    ctime: int
    mtime: int
    ephemeral_owner: int
    num_children: int

    def stat(self) -> Stat:
        return Stat(
            version=self.version,
            cversion=self.cversion,
            czxid=self.czxid,
            mzxid=self.mzxid,
            ctime=self.ctime,
            mtime=self.mtime,
            ephemeral_owner=self.ephemeral_owner,
            num_children=self.num_children,
            data_length=len(self.data),
        )


def validate_path(path: str) -> None:
    """Raise ValueError unless `path` is a valid absolute ZooKeeper path."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"Invalid metadata path {path!r}: it must start with '/'.")
    if path == "/":
        return
    if path.endswith("/"):
        raise ValueError(f"Invalid metadata path {path!r}: it must not end with '/'.")
    if "\x00" in path:
        raise ValueError(f"Invalid metadata path {path!r}: it contains a NUL character.")
    for name in path[1:].split("/"):
        if name in ("", ".", ".."):
            raise ValueError(f"Invalid metadata path {path!r}: empty, '.' or '..' element.")


def parent_of(path: str) -> str:
    index = path.rfind("/")
    return "/" if index == 0 else path[:index]


def _child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


@dataclass
class _Fired:
    """Watch events produced by one transaction, delivered once it commits."""

    data: list[tuple[str, EventType]] = field(default_factory=list)
    child: list[str] = field(default_factory=list)


class _Transaction:
    """The node operations of one SQLite transaction, with ZooKeeper's checks and stats."""

    def __init__(self, conn: sqlite3.Connection, zxid: int, now_ms: int, session_id: int) -> None:
        self.conn = conn
        self.zxid = zxid
        self.now_ms = now_ms
        self.session_id = session_id
        self.fired = _Fired()

    def node(self, path: str) -> _Node | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM nodes WHERE path = ?", (path,)).fetchone()
        return _Node(*row) if row is not None else None

    def existing(self, path: str) -> _Node:
        node = self.node(path)
        if node is None:
            raise NoNodeError(f"Node {path} does not exist.", path)
        return node

    def create(
        self,
        path: str,
        data: bytes,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        validate_path(path + "0" if sequential else path)
        if path == "/":
            raise NodeExistsError("Node / exists: the root always does.", path)
        parent_path = parent_of(path)
        parent = self.node(parent_path)
        if parent is None:
            if not make_parents:
                raise NoNodeError(
                    f"Cannot create {path}: its parent {parent_path} does not exist.", path
                )
            self._create_ancestors(parent_path)
            parent = self.existing(parent_path)
        if parent.ephemeral_owner != 0:
            raise NoChildrenForEphemeralsError(
                f"Cannot create {path}: its parent {parent_path} is ephemeral and cannot "
                "have children.",
                path,
            )
        if sequential:
            # ZooKeeper numbers from its internal child counter, which counts creations
            # only; the cversion it reports counts creations and deletions (so
            # creations = (cversion + children) / 2)
            counter = (parent.cversion + parent.num_children) // 2
            path = f"{path}{counter:010d}"
            validate_path(path)
        if self.node(path) is not None:
            raise NodeExistsError(f"Node {path} already exists.", path)
        owner = self.session_id if ephemeral else 0
        self.conn.execute(
            f"INSERT INTO nodes ({_COLUMNS}) VALUES (?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, 0)",
            (
                path,
                parent_path,
                bytes(data),
                self.zxid,
                self.zxid,
                self.zxid,
                self.now_ms,
                self.now_ms,
                owner,
            ),
        )
        self._children_changed(parent_path, +1)
        self.fired.data.append((path, EventType.CREATED))
        return path

    def _create_ancestors(self, path: str) -> None:
        missing = []
        while path != "/" and self.node(path) is None:
            missing.append(path)
            path = parent_of(path)
        for ancestor in reversed(missing):
            self.create(ancestor, b"")

    def set(self, path: str, data: bytes, version: int) -> Stat:
        node = self.existing(path)
        if version != -1 and node.version != version:
            raise BadVersionError(
                f"Cannot set {path}: expected version {version} but it is {node.version}.", path
            )
        node.data = bytes(data)
        node.version += 1
        node.mzxid = self.zxid
        node.mtime = self.now_ms
        self.conn.execute(
            "UPDATE nodes SET data = ?, version = ?, mzxid = ?, mtime = ? WHERE path = ?",
            (node.data, node.version, node.mzxid, node.mtime, path),
        )
        self.fired.data.append((path, EventType.CHANGED))
        return node.stat()

    def check(self, path: str, version: int) -> None:
        node = self.existing(path)
        if version != -1 and node.version != version:
            raise BadVersionError(
                f"Check of {path} failed: expected version {version} but it is {node.version}.",
                path,
            )

    def delete(self, path: str, version: int, recursive: bool = False) -> None:
        validate_path(path)
        if path == "/":
            raise ValueError("The root node / cannot be deleted.")
        node = self.existing(path)
        if version != -1 and node.version != version:
            raise BadVersionError(
                f"Cannot delete {path}: expected version {version} but it is {node.version}.",
                path,
            )
        if node.num_children > 0:
            if not recursive:
                raise NotEmptyError(
                    f"Cannot delete {path}: it has {node.num_children} children "
                    "(delete them first or delete recursively).",
                    path,
                )
            # '0' is the character after '/': this range is exactly the descendants
            rows = self.conn.execute(
                "SELECT path FROM nodes WHERE path > ? AND path < ?", (path + "/", path + "0")
            ).fetchall()
            for (descendant,) in sorted(rows, key=lambda r: r[0].count("/"), reverse=True):
                self._delete_node(descendant)
        self._delete_node(path)

    def _delete_node(self, path: str) -> None:
        self.conn.execute("DELETE FROM nodes WHERE path = ?", (path,))
        self._children_changed(parent_of(path), -1)
        self.fired.data.append((path, EventType.DELETED))

    def _children_changed(self, parent_path: str, delta: int) -> None:
        self.conn.execute(
            "UPDATE nodes SET cversion = cversion + 1, num_children = num_children + ?, "
            "pzxid = ? WHERE path = ?",
            (delta, self.zxid, parent_path),
        )
        self.fired.child.append(parent_path)


class MetadataDatabase:
    """One metadata database and everything shared by the sessions open on it in this process.

    It owns the SQLite connection (and the data directory's lock), the registry of open
    sessions and the watches they set, and runs every transaction under one lock, so
    sessions on several threads or loops are safe. Obtain one through `open()`; it closes
    itself when its last session closes.
    """

    _registry: dict[str, MetadataDatabase] = {}
    _registry_lock = threading.Lock()

    def __init__(self, data_dir: Path | None, time: Time) -> None:
        self.data_dir = data_dir
        self.time = time
        self.lock = threading.RLock()
        self.sessions: dict[int, EmbeddedStore] = {}
        # path -> session id -> callbacks
        self.data_watches: dict[str, dict[int, set[WatchCallback]]] = {}
        self.child_watches: dict[str, dict[int, set[WatchCallback]]] = {}
        self._lock_file: IO[bytes] | None = None
        self._log = component_logger(__name__, "MetadataDatabase")
        if data_dir is None:
            self.key = f"memory:{id(self)}"
            self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._initialize()
        else:
            data_dir.mkdir(parents=True, exist_ok=True)
            self.key = str(data_dir.resolve())
            self._lock_file = self._lock_directory(data_dir)
            self.conn = sqlite3.connect(
                data_dir / DB_FILE_NAME, isolation_level=None, check_same_thread=False
            )
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                # a committed transaction survives a process crash; a power loss may lose
                # the last ones but never corrupts the database
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self._initialize()
            except sqlite3.DatabaseError as e:
                self.conn.close()
                self._lock_file.close()
                raise MetadataStoreError(
                    f"The metadata database {self.describe()} cannot be read ({e}). Restore it "
                    "from a backup, or move it away to start with empty metadata."
                ) from e

    @classmethod
    def open(cls, data_dir: Path | None, time: Time = SYSTEM_TIME) -> MetadataDatabase:
        """The database of `data_dir` already open in this process, or a newly opened one."""
        if data_dir is None:
            return cls(None, time)
        with cls._registry_lock:
            key = str(Path(data_dir).resolve())
            database = cls._registry.get(key)
            if database is None:
                database = cls(Path(data_dir), time)
                cls._registry[key] = database
            return database

    @staticmethod
    def _lock_directory(data_dir: Path) -> IO[bytes]:
        lock_file = open(data_dir / LOCK_FILE_NAME, "ab")
        try:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            lock_file.close()
            raise MetadataStoreError(
                f"The metadata database in {data_dir} is in use by another process "
                f"({LOCK_FILE_NAME} is locked); stop that process or use another data "
                "directory."
            ) from e
        return lock_file

    def _initialize(self) -> None:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            (user_version,) = self.conn.execute("PRAGMA user_version").fetchone()
            if user_version == 0:
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif user_version != SCHEMA_VERSION:
                self.conn.execute("ROLLBACK")
                raise MetadataStoreError(
                    f"The metadata database {self.describe()} has schema version "
                    f"{user_version}; this kafpy reads version {SCHEMA_VERSION}."
                )
            now = self.time.milliseconds()
            self.conn.execute(
                f"INSERT OR IGNORE INTO nodes ({_COLUMNS}) "
                "VALUES ('/', NULL, x'', 0, 0, 0, 0, 0, ?, ?, 0, 0)",
                (now, now),
            )
            # the sessions of a previous run are dead: their ephemeral nodes go
            dead = self.conn.execute("SELECT path FROM nodes WHERE ephemeral_owner != 0").fetchall()
            if dead:
                zxid = self._next_counter("zxid")
                txn = _Transaction(self.conn, zxid, now, 0)
                for (path,) in dead:
                    txn._delete_node(path)
                self._log.info(
                    "Deleted %d ephemeral nodes of sessions of a previous run", len(dead)
                )
            self.conn.execute("COMMIT")

    def describe(self) -> str:
        return "in memory" if self.data_dir is None else str(self.data_dir / DB_FILE_NAME)

    def _next_counter(self, name: str) -> int:
        self.conn.execute(
            "INSERT INTO counters (name, value) VALUES (?, 1) "
            "ON CONFLICT(name) DO UPDATE SET value = value + 1",
            (name,),
        )
        (value,) = self.conn.execute(
            "SELECT value FROM counters WHERE name = ?", (name,)
        ).fetchone()
        return int(value)

    # Sessions

    def add_session(self, store: EmbeddedStore) -> int:
        with self.lock:
            self._check_open()
            self.conn.execute("BEGIN IMMEDIATE")
            session_id = self._next_counter("session")
            self.conn.execute("COMMIT")
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
            if self.conn is None:
                return

            def delete_ephemerals(txn: _Transaction) -> None:
                rows = txn.conn.execute(
                    "SELECT path FROM nodes WHERE ephemeral_owner = ?", (session_id,)
                ).fetchall()
                for (path,) in rows:
                    txn._delete_node(path)

            self.transact(session_id, delete_ephemerals, write=True)

    def release(self) -> None:
        """Close the database if no session is open on it any more."""
        with self.lock:
            if self.sessions or self.conn is None:
                return
            with self._registry_lock:
                if self._registry.get(self.key) is self:
                    del self._registry[self.key]
            self.conn.close()
            self.conn = None  # type: ignore[assignment]
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None

    def _check_open(self) -> None:
        if self.conn is None:
            raise ConnectionLossError(f"The metadata database {self.describe()} is closed.")

    # Transactions

    def transact(
        self,
        session_id: int,
        body: Callable[[_Transaction], T],
        *,
        write: bool,
    ) -> T:
        """Run `body` in one SQLite transaction: all of it or, if it raises, none of it."""
        with self.lock:
            self._check_open()
            if not write:
                return body(_Transaction(self.conn, 0, 0, session_id))
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                txn = _Transaction(
                    self.conn, self._next_counter("zxid"), self.time.milliseconds(), session_id
                )
                result = body(txn)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            self._fire(txn.fired)
            return result

    # Watches

    def add_watch(self, kind: str, path: str, session_id: int, callback: WatchCallback) -> None:
        registry = self.data_watches if kind == "data" else self.child_watches
        with self.lock:
            registry.setdefault(path, {}).setdefault(session_id, set()).add(callback)

    def _fire(self, fired: _Fired) -> None:
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
        self._database: MetadataDatabase | None = None
        self._session_id = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._expiry_callbacks: list[Callable[[], object]] = []
        self._tasks: set[asyncio.Future[object]] = set()
        self._log = component_logger(__name__, "EmbeddedStore")

    def new_session(self) -> EmbeddedStore:
        """Another (not yet started) session on this store's database, in memory or not.

        For an in-memory store, the database lives while at least one session is open.
        """
        store = EmbeddedStore(self.data_dir, time=self._time)
        if self.data_dir is None:
            store._database = self._open_database()
        return store

    def _open_database(self) -> MetadataDatabase:
        if self._database is None or self._database.conn is None:
            self._database = MetadataDatabase.open(self.data_dir, self._time)
        return self._database

    async def start(self) -> None:
        if self._session_id:
            return
        self._loop = asyncio.get_running_loop()
        database = self._open_database()
        self._session_id = database.add_session(self)
        self._log.debug("Session 0x%x opened on %s", self._session_id, database.describe())

    async def close(self) -> None:
        database, session_id = self._database, self._session_id
        if database is None or not session_id:
            return
        self._session_id = 0
        database.end_session(session_id)
        database.release()
        self._log.debug("Session 0x%x closed", session_id)

    async def expire_session(self) -> None:
        """Simulate the expiry of this session (for tests).

        As with ZooKeeper: its ephemeral nodes are deleted (firing other sessions'
        watches), its own watches are lost, then a new session takes its place and the
        `on_session_expired` callbacks are called on the loop.
        """
        database = self._require_database()
        old_session = self._session_id
        self._session_id = 0
        database.end_session(old_session)
        self._session_id = database.add_session(self)
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

    def _require_database(self) -> MetadataDatabase:
        if self._database is None or not self._session_id:
            raise ConnectionLossError(
                "The embedded metadata store session is not open: call start() first "
                "(or it was closed)."
            )
        return self._database

    def _transact(self, body: Callable[[_Transaction], T], *, write: bool) -> T:
        database = self._require_database()
        return database.transact(self._session_id, body, write=write)

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        def body(txn: _Transaction) -> str:
            return txn.create(
                path, data, ephemeral=ephemeral, sequential=sequential, make_parents=make_parents
            )

        return self._transact(body, write=True)

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        validate_path(path)

        def body(txn: _Transaction) -> _Node:
            node = txn.existing(path)
            if watch is not None:
                self._add_watch("data", path, watch)
            return node

        node = self._transact(body, write=False)
        return node.data, node.stat()

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        validate_path(path)
        return self._transact(lambda txn: txn.set(path, data, version), write=True)

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        self._transact(lambda txn: txn.delete(path, version, recursive), write=True)

    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        validate_path(path)

        def body(txn: _Transaction) -> _Node | None:
            node = txn.node(path)
            if watch is not None:
                self._add_watch("data", path, watch)
            return node

        found = self._transact(body, write=False)
        return found.stat() if found is not None else None

    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        validate_path(path)

        def body(txn: _Transaction) -> list[str]:
            txn.existing(path)
            rows = txn.conn.execute("SELECT path FROM nodes WHERE parent = ?", (path,)).fetchall()
            if watch is not None:
                self._add_watch("child", path, watch)
            return sorted(row[0].rsplit("/", 1)[1] for row in rows)

        return self._transact(body, write=False)

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        def body(txn: _Transaction) -> list[str | Stat | None]:
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

        return self._transact(body, write=True)

    # Watch delivery

    def _add_watch(self, kind: str, path: str, callback: WatchCallback) -> None:
        assert self._database is not None
        self._database.add_watch(kind, path, self._session_id, callback)

    def _deliver(self, callback: WatchCallback, event: WatchedEvent) -> None:
        """Called by the database (under its lock): run the callback later on our loop."""
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
