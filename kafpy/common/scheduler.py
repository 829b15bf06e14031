"""Named one-shot and periodic background tasks (Kafka's KafkaScheduler and MockScheduler).

Tasks carry Kafka's names (`kafka-log-retention`, `kafka-delete-logs`, ...). They run on
a small pool of daemon threads so that file work (fsync, deleting files) never blocks a
broker's event loop. An exception in a task is logged with the task's name and a
periodic task keeps its schedule.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from kafpy.common.time import SYSTEM_TIME, MockTime, MockTimeListener, Time

log = logging.getLogger("kafpy.utils.KafkaScheduler")


class Scheduler(ABC):
    """Runs named functions later, once or periodically."""

    @abstractmethod
    def startup(self) -> None: ...

    @abstractmethod
    def shutdown(self) -> None:
        """Stop running tasks; waits for a task that is running to finish."""

    @abstractmethod
    def schedule(
        self, name: str, fun: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Run `fun` after `delay_ms`, then every `period_ms` if that is positive."""

    @property
    @abstractmethod
    def is_started(self) -> bool: ...


@dataclass(order=True)
class ScheduledTask:
    """One entry of a scheduler's queue; `cancel()` stops it from running again."""

    next_execution_ms: int
    seq: int
    name: str = field(compare=False)
    fun: Callable[[], object] = field(compare=False, repr=False)
    period_ms: int = field(compare=False, default=-1)
    cancelled: bool = field(compare=False, default=False)

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def periodic(self) -> bool:
        return self.period_ms > 0


def _run_task(task: ScheduledTask) -> None:
    log.debug("Beginning execution of scheduled task '%s'.", task.name)
    try:
        task.fun()
    except Exception:
        log.exception("Uncaught exception in scheduled task '%s'", task.name)
    log.debug("Completed execution of scheduled task '%s'.", task.name)


class KafkaScheduler(Scheduler):
    """A scheduler backed by `threads` daemon threads sharing one time-ordered queue."""

    def __init__(
        self,
        threads: int = 1,
        thread_name_prefix: str = "kafka-scheduler-",
        time: Time = SYSTEM_TIME,
    ) -> None:
        if threads < 1:
            raise ValueError(f"background.threads must be at least 1, got {threads}")
        self._threads_n = threads
        self._prefix = thread_name_prefix
        self._time = time
        self._queue: list[ScheduledTask] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._threads: list[threading.Thread] = []
        self._running = False

    @property
    def is_started(self) -> bool:
        return self._running

    def startup(self) -> None:
        log.debug("Initializing task scheduler.")
        with self._cond:
            if self._running:
                raise RuntimeError("This scheduler has already been started!")
            self._running = True
        for i in range(self._threads_n):
            t = threading.Thread(target=self._worker, name=f"{self._prefix}{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def shutdown(self) -> None:
        log.debug("Shutting down task scheduler.")
        with self._cond:
            self._running = False
            self._queue.clear()
            self._cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
        self._threads.clear()

    def schedule(
        self, name: str, fun: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        with self._cond:
            if not self._running:
                raise RuntimeError("Kafka scheduler is not running.")
            task = ScheduledTask(
                self._time.milliseconds() + max(0, delay_ms), next(self._seq), name, fun, period_ms
            )
            heapq.heappush(self._queue, task)
            self._cond.notify()
            return task

    def _worker(self) -> None:
        while True:
            with self._cond:
                while self._running:
                    if not self._queue:
                        self._cond.wait()
                        continue
                    head = self._queue[0]
                    if head.cancelled:
                        heapq.heappop(self._queue)
                        continue
                    wait_ms = head.next_execution_ms - self._time.milliseconds()
                    if wait_ms <= 0:
                        heapq.heappop(self._queue)
                        break
                    # capped: a delay of Long.MAX ms (Kafka's default for some periods)
                    # overflows Condition.wait; waking hourly to re-check is harmless
                    self._cond.wait(min(wait_ms / 1000, 3600.0))
                else:
                    return
            _run_task(head)
            if head.periodic and not head.cancelled:
                with self._cond:
                    if self._running:
                        head.next_execution_ms = self._time.milliseconds() + head.period_ms
                        head.seq = next(self._seq)
                        heapq.heappush(self._queue, head)
                        self._cond.notify()


class MockScheduler(Scheduler, MockTimeListener):
    """A scheduler driven by a MockTime: tasks run on the caller's thread when time moves.

    `tick()` runs everything due now; advancing the MockTime ticks automatically.
    """

    def __init__(self, time: MockTime) -> None:
        self.time = time
        self._queue: list[ScheduledTask] = []
        self._seq = itertools.count()
        self._lock = threading.RLock()
        self._started = True
        time.add_listener(self)

    @property
    def is_started(self) -> bool:
        return self._started

    def startup(self) -> None:
        self._started = True

    def shutdown(self) -> None:
        with self._lock:
            self._started = False
            self._queue.clear()

    def schedule(
        self, name: str, fun: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        with self._lock:
            task = ScheduledTask(
                self.time.milliseconds() + max(0, delay_ms), next(self._seq), name, fun, period_ms
            )
            heapq.heappush(self._queue, task)
        self.tick()
        return task

    def on_time_advanced(self) -> None:
        self.tick()

    def tick(self) -> None:
        """Run every task due at the current mock time, in time order."""
        while True:
            with self._lock:
                if not self._queue or self._queue[0].next_execution_ms > self.time.milliseconds():
                    return
                task = heapq.heappop(self._queue)
                if task.cancelled:
                    continue
            _run_task(task)
            if task.periodic and not task.cancelled:
                with self._lock:
                    task.next_execution_ms += task.period_ms
                    task.seq = next(self._seq)
                    heapq.heappush(self._queue, task)

    def task_names(self) -> list[str]:
        """Names of the tasks still queued (for tests)."""
        with self._lock:
            return sorted(t.name for t in self._queue if not t.cancelled)
