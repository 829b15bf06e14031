"""The MetadataStore interface: ZooKeeper's data model as kafpy uses it.

Both backends (`ZooKeeperStore` over kazoo, `EmbeddedStore` over SQLite) implement it,
and one contract test suite runs against both. The semantics are ZooKeeper's:

- a node has data (bytes), a data version (starting at 0, +1 per set), a child version
  (cversion, +1 per child created or deleted), a creation zxid and an ephemeral owner;
- `create` needs the parent to exist unless `make_parents`; sequential nodes get a
  10-digit, zero-padded counter appended to their name: the number of children ever
  created under the parent (ZooKeeper's cversion also counts deletions, the counter not);
- ephemeral nodes belong to the store's session and vanish when it closes or expires;
- watches are one-shot: a data watch (set by `get` or `exists`) fires once on the next
  create, change or delete of the node; a child watch (set by `get_children`) fires once
  on the next create or delete of a child, or the delete of the node itself;
- watch callbacks are called on the asyncio loop that owns the store, never on another
  thread; a callback may be a plain function or a coroutine function (which is scheduled
  as a task).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass


class EventType(enum.Enum):
    """What happened to a watched node."""

    CREATED = "CREATED"
    DELETED = "DELETED"
    CHANGED = "CHANGED"
    CHILD = "CHILD"


@dataclass(frozen=True)
class WatchedEvent:
    """A watch firing: the event and the path it was set on."""

    type: EventType
    path: str


WatchCallback = Callable[[WatchedEvent], None | Awaitable[None]]


@dataclass(frozen=True)
class Stat:
    """The metadata of a node (the subset of ZooKeeper's Stat kafpy relies on)."""

    version: int
    cversion: int
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    ephemeral_owner: int
    num_children: int
    data_length: int


# Operations of a multi-op transaction: all are applied or none is.
@dataclass(frozen=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True)
class CheckOp:
    """Fails the transaction unless the node exists with this version."""

    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp

# Operations per transaction when many nodes change at once: far below ZooKeeper's request
# limit (jute.maxbuffer, 1 MiB), and only a few round trips per 1,000 partitions.
MULTI_OPS_PER_REQUEST = 100


class MetadataStore(ABC):
    """A hierarchical, versioned key-value store with sessions and watches.

    Paths are absolute, '/'-separated, with no trailing slash (except "/").
    Methods raise the errors of `kafpy.metadata.errors`.
    """

    @abstractmethod
    async def start(self) -> None:
        """Open the session. Must be awaited on the loop that will receive callbacks."""

    @abstractmethod
    async def close(self) -> None:
        """Close the session: its ephemeral nodes are deleted and their watches fire."""

    @property
    @abstractmethod
    def session_id(self) -> int:
        """The current session's id (the ephemeral owner of nodes it creates)."""

    @abstractmethod
    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        """Create a node and return its actual path (different when sequential)."""

    @abstractmethod
    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        """Data and stat of a node; `watch` fires on its next change or deletion."""

    @abstractmethod
    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        """Replace a node's data if its version is `version` (-1: any)."""

    @abstractmethod
    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete a node (and, if `recursive`, its descendants first)."""

    @abstractmethod
    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        """The node's stat or None; `watch` fires on its creation, change or deletion."""

    @abstractmethod
    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        """Names of the node's children, sorted; `watch` fires when that set changes."""

    @abstractmethod
    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        """Apply all `ops` atomically; results per op: created path, new Stat, or None."""

    @abstractmethod
    def on_session_expired(self, callback: Callable[[], object]) -> None:
        """Register a callback (called on the loop) for when the session expires."""

    # Conveniences built on the primitives, shared by both backends.

    async def ensure_path(self, path: str) -> None:
        """Create `path` and its missing ancestors as empty persistent nodes."""
        from kafpy.metadata.errors import NodeExistsError

        if await self.exists(path) is not None:
            return
        try:
            await self.create(path, b"", make_parents=True)
        except NodeExistsError:
            pass

    async def get_data_or_none(self, path: str) -> bytes | None:
        from kafpy.metadata.errors import NoNodeError

        try:
            data, _ = await self.get(path)
        except NoNodeError:
            return None
        return data

    async def get_children_or_empty(self, path: str) -> list[str]:
        from kafpy.metadata.errors import NoNodeError

        try:
            return await self.get_children(path)
        except NoNodeError:
            return []


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
    """The path of the parent of a node (`/` for a top-level node)."""
    index = path.rfind("/")
    return "/" if index == 0 else path[:index]
