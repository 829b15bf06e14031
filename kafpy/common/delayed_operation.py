"""DelayedOperation and DelayedOperationPurgatory: requests that wait for a condition or a timeout.

Kafka parks a fetch that asked for more bytes than are available (and an acks=all
produce waiting for followers) in a purgatory: the operation watches keys (partitions);
whoever changes a partition calls `check_and_complete(key)`, which retries the watching
operations; an operation not completed within its delay expires and completes anyway.

Completed operations do not pile up in the watch lists: a check of a key drops the
completed operations it walks past (as Kafka's Watchers do), and once the entries of
completed operations outnumber both the purge interval and the entries of waiting ones,
every list is purged (Kafka purges on its count of watched operations against the delayed
ones). A consumer's fetch parked on thousands of partitions and completed by one of them
used to stay listed under all the others until `purge_interval` more operations had come,
~3 KB a partition a consumer pass. Completion itself stays O(1) however many keys the
operation watched; a purge walks every list, at most once per as many dead entries as
there are entries, so its cost per entry is constant.

Everything here runs on the broker's event loop, so there are no locks: a completion is
decided and carried out without interleaving. Timers go through `TimerScheduler`, by
default the loop's `call_later`; tests pass a MockScheduler driven by MockTime.

It lives in common/ because both server/ (fetch, produce, DeleteRecords) and coordinator/
(heartbeats, joins) park operations here.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from kafpy.common.logger import component_logger


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class TimerScheduler(Protocol):
    """What the purgatory needs to run something after a delay (a Scheduler fits)."""

    def schedule(self, name: str, fun: Callable[[], Any], delay_ms: int) -> Cancellable: ...


class LoopTimer:
    """Timers on the running asyncio loop (`call_later`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop

    def schedule(self, name: str, fun: Callable[[], Any], delay_ms: int) -> Cancellable:
        loop = self._loop or asyncio.get_running_loop()
        return loop.call_later(delay_ms / 1000.0, fun)


class DelayedOperation(ABC):
    """An operation that completes when `try_complete` finds its condition met, or on timeout.

    Subclasses implement `try_complete` (check the condition; if met, return
    `self.force_complete()`), `on_complete` (build the answer: called exactly once) and
    `on_expiration` (called after on_complete when the delay ran out).
    """

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._completed = False
        self._timer: Cancellable | None = None
        # set by the purgatory watching this operation: tells it the operation completed
        self._on_watched_completion: Callable[[], None] | None = None

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now unless already completed; True if this call completed it."""
        if self._completed:
            return False
        self._completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._on_watched_completion is not None:
            completed, self._on_watched_completion = self._on_watched_completion, None
            completed()
        self.on_complete()
        return True

    def _expire(self) -> None:
        self._timer = None
        if self.force_complete():
            self.on_expiration()

    @abstractmethod
    def try_complete(self) -> bool: ...

    @abstractmethod
    def on_complete(self) -> None: ...

    def on_expiration(self) -> None:  # noqa: B027 - optional hook
        """Called after `on_complete` when the operation timed out."""


T = TypeVar("T", bound=DelayedOperation)


class DelayedOperationPurgatory(Generic[T]):
    """Delayed operations watched by key (Kafka's DelayedOperationPurgatory).

    `purge_interval` (Kafka's `*.purgatory.purge.interval.requests`): how many watch-list
    entries of completed operations may wait for a purge when fewer operations wait.
    """

    def __init__(
        self,
        name: str,
        broker_id: int = 0,
        timer: TimerScheduler | None = None,
        purge_interval: int = 1000,
    ) -> None:
        self.name = name
        self.timer: TimerScheduler = timer or LoopTimer()
        self.purge_interval = purge_interval
        self._watchers: dict[Hashable, list[T]] = {}
        self._entries = 0  # in the watch lists, completed operations' included
        self._live_entries = 0  # of the operations still waiting
        self._delayed = 0
        self.log = component_logger(
            "kafpy.server.DelayedOperationPurgatory", "ExpirationReaper", f"{broker_id}-{name}"
        )

    def try_complete_else_watch(self, operation: T, keys: Iterable[Hashable]) -> bool:
        """Complete `operation` now if it can; else watch it under `keys` until it completes or
        its delay expires. Returns True if it completed here."""
        if operation.try_complete():
            return True
        watchers = self._watchers
        n = 0
        for key in keys:
            ops = watchers.get(key)
            if ops is None:
                watchers[key] = [operation]
            else:
                ops.append(operation)
            n += 1
        self._entries += n
        self._live_entries += n
        self._delayed += 1
        operation._on_watched_completion = lambda: self._completed_watched(n)
        operation._timer = self.timer.schedule(
            f"{self.name}-expiration", lambda: self._on_expire(operation), operation.delay_ms
        )
        self._maybe_purge()
        return False

    def _completed_watched(self, entries: int) -> None:
        """A watched operation completed: its `entries` are dead from now on."""
        self._live_entries -= entries
        self._delayed -= 1

    def _on_expire(self, operation: T) -> None:
        if not operation.is_completed:
            operation._expire()
        self._maybe_purge()

    def check_and_complete(self, key: Hashable) -> int:
        """Retry the operations watching `key`, dropping the completed ones from its list;
        returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for op in list(ops):  # a completion may watch new operations under `key`
            if not op.is_completed and op.try_complete():
                completed += 1
        ops = self._watchers.get(key)
        if ops is not None:
            alive = [op for op in ops if not op.is_completed]
            self._entries -= len(ops) - len(alive)
            if alive:
                self._watchers[key] = alive
            else:
                del self._watchers[key]
        self._maybe_purge()
        return completed

    def _maybe_purge(self) -> None:
        dead = self._entries - self._live_entries
        if dead > self.purge_interval and dead > self._live_entries:
            self.purge_completed()

    def purge_completed(self) -> int:
        """Drop completed operations from every watch list; returns how many entries went."""
        dropped = 0
        for key, ops in list(self._watchers.items()):
            alive = [op for op in ops if not op.is_completed]
            dropped += len(ops) - len(alive)
            if alive:
                self._watchers[key] = alive
            else:
                del self._watchers[key]
        self._entries -= dropped
        return dropped

    def watched(self, key: Hashable) -> int:
        """Operations waiting on `key`."""
        return sum(1 for op in self._watchers.get(key, ()) if not op.is_completed)

    @property
    def watched_total(self) -> int:
        """Entries in the watch lists, completed operations' not purged yet included (Kafka's
        PurgatorySize: an operation counts once per key it watches)."""
        return self._entries

    @property
    def delayed(self) -> int:
        """Operations waiting in this purgatory."""
        return self._delayed

    def complete_all(self) -> None:
        """Force every waiting operation to complete (shutdown)."""
        waiting = {id(op): op for ops in self._watchers.values() for op in ops}
        self._watchers.clear()
        self._entries = 0  # the completions below take the live entries to 0
        for op in waiting.values():
            op.force_complete()

    def shutdown(self) -> None:
        self.complete_all()
