"""Clocks: the real one, and a mock one that tests advance by hand so they never sleep."""

from __future__ import annotations

import threading
import time as _time
from abc import ABC, abstractmethod


class Time(ABC):
    """A source of wall-clock and monotonic time in Kafka's units."""

    @abstractmethod
    def milliseconds(self) -> int:
        """Wall-clock time in ms since the epoch (used for timestamps and file ages)."""

    @abstractmethod
    def nanoseconds(self) -> int:
        """A monotonic clock in ns (used for durations)."""

    @abstractmethod
    def sleep(self, ms: float) -> None:
        """Block the calling thread for `ms` milliseconds."""

    def hi_res_milliseconds(self) -> float:
        return self.nanoseconds() / 1_000_000


class SystemTime(Time):
    """The machine's clocks."""

    def milliseconds(self) -> int:
        return _time.time_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return _time.monotonic_ns()

    def sleep(self, ms: float) -> None:
        _time.sleep(ms / 1000)


SYSTEM_TIME: Time = SystemTime()


class MockTime(Time):
    """A clock that only moves when `sleep` or `advance` is called.

    Listeners (such as a MockScheduler) are told after each move so that tasks due by
    the new time run at once, on the caller's thread.
    """

    def __init__(self, current_ms: int = 1_600_000_000_000, nanos: int = 0) -> None:
        self._ms = current_ms
        self._nanos = nanos
        self._lock = threading.Lock()
        self._listeners: list[MockTimeListener] = []

    def milliseconds(self) -> int:
        return self._ms

    def nanoseconds(self) -> int:
        return self._nanos

    def sleep(self, ms: float) -> None:
        self.advance(int(ms))

    def advance(self, ms: int) -> None:
        with self._lock:
            self._ms += ms
            self._nanos += ms * 1_000_000
        for listener in list(self._listeners):
            listener.on_time_advanced()

    def add_listener(self, listener: MockTimeListener) -> None:
        self._listeners.append(listener)


class MockTimeListener(ABC):
    """Something that must react when a MockTime moves."""

    @abstractmethod
    def on_time_advanced(self) -> None: ...
