"""DelayedOperation and DelayedOperationPurgatory: requests that wait for a condition or a timeout.

Kafka parks a fetch that asked for more bytes than are available (and an acks=all
produce waiting for followers) in a purgatory: the operation watches keys (partitions);
whoever changes a partition calls `check_and_complete(key)`, which retries the watching
operations; an operation not completed within its delay expires and completes anyway.

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

    `purge_interval`: after this many operations were added, completed operations are
    dropped from the watch lists (completion removes them only from the key that
    completed them).
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
        self._added_since_purge = 0
        self.log = component_logger(
            "kafpy.server.DelayedOperationPurgatory", "ExpirationReaper", f"{broker_id}-{name}"
        )

    def try_complete_else_watch(self, operation: T, keys: Iterable[Hashable]) -> bool:
        """Complete `operation` now if it can; else watch it under `keys` until it completes or
        its delay expires. Returns True if it completed here."""
        if operation.try_complete():
            return True
        for key in keys:
            self._watchers.setdefault(key, []).append(operation)
        operation._timer = self.timer.schedule(
            f"{self.name}-expiration", lambda: self._on_expire(operation), operation.delay_ms
        )
        self._added_since_purge += 1
        if self._added_since_purge >= self.purge_interval:
            self.purge_completed()
        return False

    def _on_expire(self, operation: T) -> None:
        if not operation.is_completed:
            operation._expire()

    def check_and_complete(self, key: Hashable) -> int:
        """Retry the operations watching `key`; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        remaining: list[T] = []
        for op in ops:
            if op.is_completed:
                continue
            if op.try_complete():
                completed += 1
            else:
                remaining.append(op)
        if remaining:
            self._watchers[key] = remaining
        else:
            self._watchers.pop(key, None)
        return completed

    def purge_completed(self) -> int:
        """Drop completed operations from every watch list; returns how many were dropped."""
        dropped = 0
        for key in list(self._watchers):
            ops = self._watchers[key]
            alive = [op for op in ops if not op.is_completed]
            dropped += len(ops) - len(alive)
            if alive:
                self._watchers[key] = alive
            else:
                del self._watchers[key]
        self._added_since_purge = 0
        return dropped

    def watched(self, key: Hashable) -> int:
        """Operations (not yet completed) watching `key`."""
        return sum(1 for op in self._watchers.get(key, ()) if not op.is_completed)

    @property
    def watched_total(self) -> int:
        """Entries in the watch lists, completed ones not yet purged included (Kafka's
        PurgatorySize: an operation counts once per key it watches)."""
        return sum(len(ops) for ops in self._watchers.values())

    @property
    def delayed(self) -> int:
        """Operations waiting in this purgatory."""
        return len({id(op) for ops in self._watchers.values() for op in ops if not op.is_completed})

    def complete_all(self) -> None:
        """Force every waiting operation to complete (shutdown)."""
        ops = {id(op): op for ops in self._watchers.values() for op in ops}
        self._watchers.clear()
        for op in ops.values():
            op.force_complete()

    def shutdown(self) -> None:
        self.complete_all()
