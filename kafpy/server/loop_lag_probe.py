"""LoopLagProbe: how late the broker's event loop wakes up, and where it is when it stalls.

Every 10 ms a coroutine on the loop sleeps and measures how much later than asked it woke
(the loop's lag: time some callback held the loop, or the GIL). A watchdog thread sees a
stall while it is happening: once the loop has not ticked for the threshold (50 ms) it
logs a WARN with the innermost frames of the loop thread's stack at that moment, taken
from `sys._current_frames()` (and where the other threads are: one may hold the GIL), one
per stall; when the loop runs again, a second WARN says how long the stall lasted. At
stop, one INFO line gives the lag's percentiles and maximum, and the number of
generation-2 garbage collections with the longest one.
"""

from __future__ import annotations

import asyncio
import gc
import math
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from types import FrameType

from kafpy.common.logger import component_logger

DEFAULT_INTERVAL_S = 0.010
DEFAULT_THRESHOLD_S = 0.050
# lag histogram: bucket i holds lags up to 1.02**i µs (2 % resolution, ~930 buckets to 100 s)
_BUCKET_BASE = 1.02
_BUCKETS = 1000
# the innermost frames; the outer ones are the same start-up frames every time
_STACK_FRAMES = 25


class LoopLagProbe:
    """Samples the running event loop's lag and reports stalls with the loop thread's stack.

    Parameters:
        broker_id: shown in the log lines' `[LoopLagProbe id=N]` prefix.
        interval_s: how often the loop is sampled (10 ms).
        threshold_s: a loop that has not ticked for this long is stalled (50 ms): the
            watchdog thread logs a WARN with its stack.
    """

    def __init__(
        self,
        broker_id: object = None,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        threshold_s: float = DEFAULT_THRESHOLD_S,
    ) -> None:
        self.interval_s = interval_s
        self.threshold_s = threshold_s
        self.log = component_logger(__name__, "LoopLagProbe", broker_id)
        self.stalls = 0
        self._counts = [0] * _BUCKETS
        self._samples = 0
        self._max_s = 0.0
        self._sum_s = 0.0
        self._last_tick = time.monotonic()
        self._stall_reported = False
        self._stopped = threading.Event()
        self._task: asyncio.Task[None] | None = None
        self._watchdog: threading.Thread | None = None
        self._loop_thread_id = 0
        # generation-2 garbage collections: how many, and the longest (they stop the loop)
        self.full_collections = 0
        self._full_collection_max_s = 0.0
        self._collection_started = 0.0

    @classmethod
    def start(cls, broker_id: object = None, *, until: asyncio.Event | None = None) -> LoopLagProbe:
        """Start a probe on the running loop. It stops (and logs its summary) when `until`
        is set, when `stop` is called, or when its task is cancelled as the loop ends."""
        probe = cls(broker_id)
        probe.begin(until)
        return probe

    def begin(self, until: asyncio.Event | None = None) -> None:
        """Start sampling the running loop, and the watchdog thread."""
        self._loop_thread_id = threading.get_ident()
        self._last_tick = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run(until), name="loop-lag-probe")
        self._watchdog = threading.Thread(
            target=self._watch, name="kafka-loop-lag-watchdog", daemon=True
        )
        self._watchdog.start()
        gc.callbacks.append(self._on_gc)

    async def stop(self) -> None:
        """Stop sampling and log the summary line."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._finish()  # a task cancelled before it ran has not finished itself

    async def _run(self, until: asyncio.Event | None) -> None:
        try:
            while until is None or not until.is_set():
                expected = time.monotonic() + self.interval_s
                await asyncio.sleep(self.interval_s)
                now = time.monotonic()
                self._last_tick = now
                lag = max(0.0, now - expected)
                if self._stall_reported:
                    self._stall_reported = False
                    self.log.warning("Event loop was blocked for %.0f ms in all", lag * 1000)
                self._record(lag)
        finally:
            self._finish()

    def _finish(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        self.log.info("%s", self.summary())

    def _record(self, lag_s: float) -> None:
        us = lag_s * 1e6
        bucket = 0 if us < 1.0 else min(_BUCKETS - 1, math.ceil(math.log(us, _BUCKET_BASE)))
        self._counts[bucket] += 1
        self._samples += 1
        self._sum_s += lag_s
        self._max_s = max(self._max_s, lag_s)

    def histogram(self, bounds_s: Sequence[float]) -> tuple[list[int], float]:
        """The samples regrouped under the given upper bounds (seconds, ascending), one
        count per bound and a last one above them all, and the sum of the lags."""
        out = [0] * (len(bounds_s) + 1)
        limits = [
            math.ceil(math.log(b * 1e6, _BUCKET_BASE)) if b * 1e6 >= 1.0 else 0 for b in bounds_s
        ]
        i = 0
        for bucket, count in enumerate(self._counts):
            if not count:
                continue
            while i < len(limits) and bucket > limits[i]:
                i += 1
            out[i] += count
        return out, self._sum_s

    def percentile_ms(self, q: float) -> float:
        """The lag below which a fraction q of the samples fall, in ms (2 % resolution)."""
        if self._samples == 0:
            return 0.0
        rank = max(1, math.ceil(q * self._samples))
        seen = 0
        for bucket, count in enumerate(self._counts):
            seen += count
            if seen >= rank:
                return min(_BUCKET_BASE**bucket / 1000.0, self._max_s * 1000.0)
        return self._max_s * 1000.0

    def summary(self) -> str:
        """The shutdown line: sample count, lag percentiles, maximum and stalls."""
        return (
            f"Event loop lag over {self._samples} samples every {self.interval_s * 1000:g} ms: "
            f"p50 {self.percentile_ms(0.5):.2f} ms, p99 {self.percentile_ms(0.99):.2f} ms, "
            f"p99.9 {self.percentile_ms(0.999):.2f} ms, max {self._max_s * 1000:.2f} ms; "
            f"{self.stalls} stalls over {self.threshold_s * 1000:g} ms; "
            f"{self.full_collections} generation-2 garbage collections, the longest "
            f"{self._full_collection_max_s * 1000:.2f} ms"
        )

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._collection_started = time.perf_counter()
            return
        self.full_collections += 1
        self._full_collection_max_s = max(
            self._full_collection_max_s, time.perf_counter() - self._collection_started
        )

    def _watch(self) -> None:
        while not self._stopped.wait(self.interval_s):
            late = time.monotonic() - self._last_tick - self.interval_s
            if late < self.threshold_s or self._stall_reported:
                continue
            self._stall_reported = True
            self.stalls += 1
            frames = sys._current_frames()
            frame = frames.get(self._loop_thread_id)
            stack = (
                "".join(traceback.format_list(traceback.extract_stack(frame, _STACK_FRAMES)))
                if frame is not None
                else "(gone)\n"
            )
            self.log.warning(
                "Event loop blocked for %.0f ms so far (threshold %g ms); the loop thread "
                "is at:\n%s\nthe other threads (one may hold the GIL) are at:\n%s",
                late * 1000,
                self.threshold_s * 1000,
                stack.rstrip("\n"),
                self._other_threads(frames),
            )

    def _other_threads(self, frames: dict[int, FrameType]) -> str:
        names = {t.ident: t.name for t in threading.enumerate()}
        lines = []
        for ident, frame in frames.items():
            if ident in (self._loop_thread_id, threading.get_ident()):
                continue
            code = frame.f_code
            lines.append(
                f"  {names.get(ident, ident)}: {code.co_name} ({code.co_filename}:{frame.f_lineno})"
            )
        return "\n".join(lines) or "  (none)"
