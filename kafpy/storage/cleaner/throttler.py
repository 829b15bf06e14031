"""Throttler: holds a caller back so that its observed rate stays under a target rate."""

from __future__ import annotations

import threading

from kafpy.common.time import SYSTEM_TIME, Time


class Throttler:
    """Rate limiting for the cleaner's I/O (Kafka's kafka.utils.Throttler).

    Callers report work with `maybe_throttle(amount)`; every `check_interval_ms` the rate
    since the last check is computed and, if above `desired_rate_per_sec`, the caller
    sleeps for as long as it takes to bring the rate back down. Shared by all cleaner
    threads, so the limit is for the cleaner as a whole.
    """

    def __init__(
        self,
        desired_rate_per_sec: float,
        check_interval_ms: int = 300,
        time: Time = SYSTEM_TIME,
    ) -> None:
        if desired_rate_per_sec <= 0:
            raise ValueError(
                f"log.cleaner.io.max.bytes.per.second must be positive, got {desired_rate_per_sec}"
            )
        self.desired_rate_per_sec = desired_rate_per_sec
        self.check_interval_ms = check_interval_ms
        self.time = time
        self._lock = threading.Lock()
        self._period_start_ms = time.milliseconds()
        self._observed_so_far = 0.0

    def maybe_throttle(self, observed: float) -> None:
        with self._lock:
            self._observed_so_far += observed
            now = self.time.milliseconds()
            elapsed_ms = now - self._period_start_ms
            if elapsed_ms < self.check_interval_ms or self._observed_so_far <= 0:
                return
            rate_per_sec = self._observed_so_far * 1000.0 / max(elapsed_ms, 1)
            sleep_ms = 0
            if rate_per_sec > self.desired_rate_per_sec:
                # how long the observed amount should have taken at the desired rate
                desired_ms = self._observed_so_far * 1000.0 / self.desired_rate_per_sec
                sleep_ms = int(desired_ms - elapsed_ms)
            self._period_start_ms = now
            self._observed_so_far = 0.0
        if sleep_ms > 0:
            self.time.sleep(sleep_ms)
