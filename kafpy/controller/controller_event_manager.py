"""ControllerEventManager: the controller's queue, processing one event at a time.

As Kafka's `kafka.controller.ControllerEventManager`: ZooKeeper watches, broker responses
and start-up/shutdown all become `ControllerEvent`s put on one queue; a single task takes
them in order and runs each to completion before the next, so the controller's state is
only ever touched by one event. Each event is logged with its name and how long it
waited and ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.controller.controller_state import ControllerState


class ControllerEvent:
    """One unit of controller work: a name, the controller state it runs in, and its body."""

    def __init__(
        self, name: str, state: ControllerState, process: Callable[[], Awaitable[None]]
    ) -> None:
        self.name = name
        self.state = state
        self.process = process
        self.enqueue_time_ns = 0

    def __repr__(self) -> str:
        return self.name


class ControllerEventManager:
    """Runs controller events one by one on the asyncio loop, in the order they were put."""

    def __init__(self, broker_id: int, time: Time = SYSTEM_TIME) -> None:
        self.time = time
        self.log = component_logger(
            "kafpy.controller.ControllerEventManager",
            "ControllerEventThread controllerId",
            broker_id,
        )
        self._queue: asyncio.Queue[ControllerEvent | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._processing = False
        self.state = ControllerState.IDLE
        # events processed and their time in ms, per state (Kafka's ControllerStats timers)
        self.state_timings: dict[ControllerState, tuple[int, float]] = {}

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="controller-event-thread"
            )

    async def close(self) -> None:
        """Stop after the event in progress; events still queued are dropped."""
        if self._task is None:
            return
        self.clear()
        self._queue.put_nowait(None)
        task, self._task = self._task, None
        try:
            await task
        except asyncio.CancelledError:
            pass

    def put(self, event: ControllerEvent) -> None:
        event.enqueue_time_ns = self.time.nanoseconds()
        self._queue.put_nowait(event)

    def clear(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()

    def clear_and_put(self, event: ControllerEvent) -> None:
        """Drop what is queued and put `event` (Kafka does this on session expiry)."""
        self.clear()
        self.put(event)

    @property
    def is_idle(self) -> bool:
        """True when no event is queued or running."""
        return not self._processing and self._queue.empty()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            self._processing = True
            self.state = event.state
            start_ns = self.time.nanoseconds()
            queued_ms = (start_ns - event.enqueue_time_ns) / 1e6
            self.log.debug("Processing event %s", event.name)
            try:
                await event.process()
            except asyncio.CancelledError:
                raise
            except Exception:
                self.log.exception("Error processing event %s", event.name)
            finally:
                elapsed_ms = (self.time.nanoseconds() - start_ns) / 1e6
                count, total = self.state_timings.get(event.state, (0, 0.0))
                self.state_timings[event.state] = (count + 1, total + elapsed_ms)
                self.log.debug(
                    "Processed event %s in %.3f ms (queued %.3f ms)",
                    event.name,
                    elapsed_ms,
                    queued_ms,
                )
                self.state = ControllerState.IDLE
                self._processing = False
