"""DelayedOperation and DelayedOperationPurgatory: requests that wait for a condition or a timeout.

Kafka parks a fetch that asked for more bytes than are available (and an acks=all
produce waiting for followers) in a purgatory: the operation watches keys (partitions);
whoever changes a partition calls `check_and_complete(key)`, which retries the watching
operations; an operation not completed within its delay expires and completes anyway.

An operation leaves every watch list the moment it completes (checked, expired or forced),
so completed operations never pile up: a consumer's fetch parked on thousands of partitions
used to stay listed under each of them until the next purge, ~3 KB a partition a pass.
Each key's watchers are an insertion-ordered dict, so leaving costs one deletion per
watched key, what watching cost.

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
        # set by the purgatory watching this operation: takes it off its watch lists
        self._unwatch: Callable[[], None] | None = None

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
        if self._unwatch is not None:
            unwatch, self._unwatch = self._unwatch, None
            unwatch()
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

    A completed operation is taken off the watch list of every key it watched at once, so
    the lists hold waiting operations only. `purge_interval` (Kafka's
    `*.purgatory.purge.interval.requests`) is kept for the configuration: with nothing
    completed left in the lists there is nothing to purge on a schedule.
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
        # key -> the waiting operations watching it by id(), in the order they came (a dict
        # as an ordered set: an operation leaves each list in O(1))
        self._watchers: dict[Hashable, dict[int, T]] = {}
        self._watched_entries = 0
        self._delayed = 0
        self.log = component_logger(
            "kafpy.server.DelayedOperationPurgatory", "ExpirationReaper", f"{broker_id}-{name}"
        )

    def try_complete_else_watch(self, operation: T, keys: Iterable[Hashable]) -> bool:
        """Complete `operation` now if it can; else watch it under `keys` until it completes or
        its delay expires. Returns True if it completed here."""
        if operation.try_complete():
            return True
        watched = list(dict.fromkeys(keys))
        for key in watched:
            ops = self._watchers.get(key)
            if ops is None:
                ops = self._watchers[key] = {}
            ops[id(operation)] = operation
        self._watched_entries += len(watched)
        self._delayed += 1
        operation._unwatch = lambda: self._stop_watching(operation, watched)
        operation._timer = self.timer.schedule(
            f"{self.name}-expiration", lambda: self._on_expire(operation), operation.delay_ms
        )
        return False

    def _stop_watching(self, operation: T, keys: list[Hashable]) -> None:
        """Take a completed `operation` off the watch list of each of its `keys`."""
        op_id = id(operation)
        for key in keys:
            ops = self._watchers.get(key)
            if ops is not None and ops.pop(op_id, None) is not None:
                self._watched_entries -= 1
                if not ops:
                    del self._watchers[key]
        self._delayed -= 1

    def _on_expire(self, operation: T) -> None:
        if not operation.is_completed:
            operation._expire()

    def check_and_complete(self, key: Hashable) -> int:
        """Retry the operations watching `key`; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        # a completion takes the operation off this list: walk a copy
        for op in list(ops.values()):
            if not op.is_completed and op.try_complete():
                completed += 1
        return completed

    def watched(self, key: Hashable) -> int:
        """Operations waiting on `key`."""
        return len(self._watchers.get(key, ()))

    @property
    def watched_total(self) -> int:
        """Entries in the watch lists (Kafka's PurgatorySize: an operation counts once per
        key it watches)."""
        return self._watched_entries

    @property
    def delayed(self) -> int:
        """Operations waiting in this purgatory."""
        return self._delayed

    def complete_all(self) -> None:
        """Force every waiting operation to complete (shutdown)."""
        waiting = {op_id: op for ops in self._watchers.values() for op_id, op in ops.items()}
        for op in waiting.values():
            op.force_complete()

    def shutdown(self) -> None:
        self.complete_all()
