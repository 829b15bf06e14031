"""Rate: Kafka's sampled rate stat (org.apache.kafka.common.metrics.stats.Rate), the measure
behind every quota: client quotas, replication throttles, connection-creation rates."""

from __future__ import annotations

from collections import deque

__all__ = ["Rate"]


class Rate:
    """Kafka's SampledStat Rate: values summed into windows of `window_ms`, `samples`
    of them kept; the rate is per second over the time the kept windows span."""

    __slots__ = ("samples", "window_ms", "_windows")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._windows: deque[list[float]] = deque()  # [start_ms, total]

    def record(self, value: float, now_ms: float) -> None:
        windows = self._windows
        if not windows or now_ms - windows[-1][0] >= self.window_ms:
            windows.append([now_ms, 0.0])
            while len(windows) > self.samples:
                windows.popleft()
        windows[-1][1] += value

    def _purge(self, now_ms: float) -> None:
        windows = self._windows
        while windows and now_ms - windows[0][0] >= self.samples * self.window_ms:
            windows.popleft()

    def window_size_ms(self, now_ms: float) -> float:
        """The time the rate is taken over (Kafka's Rate.windowSize)."""
        self._purge(now_ms)
        elapsed = now_ms - self._windows[0][0] if self._windows else 0.0
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def measure(self, now_ms: float) -> float:
        """Units per second."""
        size = self.window_size_ms(now_ms)
        total = sum(w[1] for w in self._windows)
        return total / size * 1000 if size > 0 else 0.0

    def unrecord(self, value: float) -> None:
        if self._windows:
            self._windows[-1][1] -= value
