"""MetadataDatabase: the nodes of the embedded metadata store, persisted in SQLite.

What ZooKeeper's ZKDatabase is to its server: the node tree, in `<data_dir>/metadata.db`
(or in memory), with ZooKeeper's stats, version checks and zxids. A `Transaction` runs
the node operations of one SQLite transaction and records the watch events they cause
(`Fired`), which the caller delivers once the transaction has committed. One process at a
time may open a data directory (`metadata.lock`); when it opens it, the ephemeral nodes of
the sessions of a previous run are deleted, as ZooKeeper expires the sessions of clients
that died. Sessions and watches are the embedded store's (kafpy.metadata.embedded_store).

SQLite calls are short (metadata is small) and run directly on the event loop.
"""

from __future__ import annotations

import fcntl
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

from kafpy.common.logger import component_logger
from kafpy.common.time import Time
from kafpy.metadata.errors import (
    BadVersionError,
    ConnectionLossError,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from kafpy.metadata.store import EventType, Stat, parent_of, validate_path

__all__ = ["DB_FILE_NAME", "LOCK_FILE_NAME", "Fired", "MetadataDatabase", "Node", "Transaction"]

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
class Node:
    """One node as stored: its data and ZooKeeper's stat fields."""

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


@dataclass
class Fired:
    """Watch events produced by one transaction, delivered once it commits."""

    data: list[tuple[str, EventType]] = field(default_factory=list)
    child: list[str] = field(default_factory=list)


class Transaction:
    """The node operations of one SQLite transaction, with ZooKeeper's checks and stats."""

    def __init__(self, conn: sqlite3.Connection, zxid: int, now_ms: int, session_id: int) -> None:
        self.conn = conn
        self.zxid = zxid
        self.now_ms = now_ms
        self.session_id = session_id
        self.fired = Fired()

    def node(self, path: str) -> Node | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM nodes WHERE path = ?", (path,)).fetchone()
        return Node(*row) if row is not None else None

    def existing(self, path: str) -> Node:
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

    def children(self, path: str) -> list[str]:
        """The names of the children of an existing node, sorted."""
        self.existing(path)
        rows = self.conn.execute("SELECT path FROM nodes WHERE parent = ?", (path,)).fetchall()
        return sorted(row[0].rsplit("/", 1)[1] for row in rows)

    def delete_ephemerals(self, session_id: int) -> None:
        """Delete the ephemeral nodes of a session."""
        rows = self.conn.execute(
            "SELECT path FROM nodes WHERE ephemeral_owner = ?", (session_id,)
        ).fetchall()
        for (path,) in rows:
            self._delete_node(path)

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
    """One SQLite metadata database: its connection and its data directory's lock.

    Every transaction runs under `lock` (an RLock, also held by the embedded server around
    its sessions and watches), so sessions on several threads or loops are safe.
    """

    def __init__(self, data_dir: Path | None, time: Time) -> None:
        self.data_dir = data_dir
        self.time = time
        self.lock = threading.RLock()
        self._lock_file: IO[bytes] | None = None
        self._log = component_logger(__name__, "MetadataDatabase")
        self._conn: sqlite3.Connection | None
        if data_dir is None:
            self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._initialize()
        else:
            data_dir.mkdir(parents=True, exist_ok=True)
            self._lock_file = self._lock_directory(data_dir)
            self._conn = sqlite3.connect(
                data_dir / DB_FILE_NAME, isolation_level=None, check_same_thread=False
            )
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                # a committed transaction survives a process crash; a power loss may lose
                # the last ones but never corrupts the database
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._initialize()
            except sqlite3.DatabaseError as e:
                self._conn.close()
                self._lock_file.close()
                raise MetadataStoreError(
                    f"The metadata database {self.describe()} cannot be read ({e}). Restore it "
                    "from a backup, or move it away to start with empty metadata."
                ) from e

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
        conn = self._open_connection()
        with self.lock:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            (user_version,) = conn.execute("PRAGMA user_version").fetchone()
            if user_version == 0:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif user_version != SCHEMA_VERSION:
                conn.execute("ROLLBACK")
                raise MetadataStoreError(
                    f"The metadata database {self.describe()} has schema version "
                    f"{user_version}; this kafpy reads version {SCHEMA_VERSION}."
                )
            now = self.time.milliseconds()
            conn.execute(
                f"INSERT OR IGNORE INTO nodes ({_COLUMNS}) "
                "VALUES ('/', NULL, x'', 0, 0, 0, 0, 0, ?, ?, 0, 0)",
                (now, now),
            )
            # the sessions of a previous run are dead: their ephemeral nodes go
            dead = conn.execute("SELECT path FROM nodes WHERE ephemeral_owner != 0").fetchall()
            if dead:
                txn = Transaction(conn, self._next_counter("zxid"), now, 0)
                for (path,) in dead:
                    txn._delete_node(path)
                self._log.info(
                    "Deleted %d ephemeral nodes of sessions of a previous run", len(dead)
                )
            conn.execute("COMMIT")

    def describe(self) -> str:
        return "in memory" if self.data_dir is None else str(self.data_dir / DB_FILE_NAME)

    @property
    def is_closed(self) -> bool:
        return self._conn is None

    def _open_connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ConnectionLossError(f"The metadata database {self.describe()} is closed.")
        return self._conn

    def _next_counter(self, name: str) -> int:
        conn = self._open_connection()
        conn.execute(
            "INSERT INTO counters (name, value) VALUES (?, 1) "
            "ON CONFLICT(name) DO UPDATE SET value = value + 1",
            (name,),
        )
        (value,) = conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(value)

    def new_session_id(self) -> int:
        """A session id never handed out before by this database."""
        with self.lock:
            conn = self._open_connection()
            conn.execute("BEGIN IMMEDIATE")
            session_id = self._next_counter("session")
            conn.execute("COMMIT")
            return session_id

    def transact(
        self,
        session_id: int,
        body: Callable[[Transaction], T],
        *,
        write: bool,
    ) -> tuple[T, Fired]:
        """Run `body` in one SQLite transaction: all of it or, if it raises, none of it.
        Returns its result and the watch events it caused (none for a read)."""
        with self.lock:
            conn = self._open_connection()
            if not write:
                txn = Transaction(conn, 0, 0, session_id)
                return body(txn), txn.fired
            conn.execute("BEGIN IMMEDIATE")
            try:
                txn = Transaction(
                    conn, self._next_counter("zxid"), self.time.milliseconds(), session_id
                )
                result = body(txn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result, txn.fired

    def close(self) -> None:
        """Close the connection and release the data directory's lock."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None
