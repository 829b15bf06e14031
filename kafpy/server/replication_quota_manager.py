"""ReplicationQuotaManager: the throttle on replication traffic of partitions being moved.

As Kafka's `kafka.server.ReplicationQuotaManager`: one for the leader side (bytes this
broker sends to followers of leader-throttled partitions) and one for the follower side
(bytes it fetches for follower-throttled partitions). Each holds a bound in bytes/s (the
dynamic broker configs leader.replication.throttled.rate /
follower.replication.throttled.rate; none means unlimited) and measures the recorded
bytes as a rate over `replication.quota.window.num` windows of
`replication.quota.window.size.seconds`, as Kafka's Rate stat does. Which partitions are
throttled comes from the topic configs leader.replication.throttled.replicas /
follower.replication.throttled.replicas: `*`, or `partition:broker` entries naming this
broker. A throttled partition whose replica is not in sync is left out of fetches while
the rate is over the bound; in-sync replicas and other partitions are never held back.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic_partition import TopicPartition

LEADER_REPLICATION_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_REPLICATION_THROTTLED_RATE = "follower.replication.throttled.rate"
ALL_REPLICAS = "*"


def throttled_by(replicas: Sequence[str], tp: TopicPartition, broker_id: int) -> bool:
    """Whether a topic's throttled-replicas list (`*` or `partition:broker` entries) names
    this broker's replica of `tp`."""
    return ALL_REPLICAS in replicas or f"{tp.partition}:{broker_id}" in replicas


class ReplicationQuotaManager:
    """A bytes/s bound on throttled replication, measured over sliding windows.

    Parameters:
        name: "Leader" or "Follower", for logs.
        window_num: the number of samples kept (replication.quota.window.num).
        window_size_s: each sample's span (replication.quota.window.size.seconds).
        time: the clock.
    """

    def __init__(
        self, name: str, window_num: int = 11, window_size_s: int = 1, time: Time = SYSTEM_TIME
    ) -> None:
        self.name = name
        self.window_num = window_num
        self.window_ms = window_size_s * 1000
        self.time = time
        self.bound: float | None = None
        # [start ms, bytes] per sample, oldest first
        self._samples: list[list[int]] = []

    def update_quota(self, bytes_per_second: float | None) -> None:
        """A new bound (None: unlimited)."""
        self.bound = bytes_per_second

    def _purge(self, now: int) -> None:
        horizon = now - self.window_num * self.window_ms
        while self._samples and self._samples[0][0] <= horizon:
            self._samples.pop(0)

    def record(self, value: int) -> None:
        """Count `value` bytes of throttled replication now."""
        if value <= 0:
            return
        now = self.time.milliseconds()
        self._purge(now)
        if not self._samples or now >= self._samples[-1][0] + self.window_ms:
            self._samples.append([now, 0])
        self._samples[-1][1] += value

    def rate(self) -> float:
        """Bytes/s over the kept samples; the elapsed time counts at least the full windows
        but one, so a burst in a fresh window is not measured over milliseconds."""
        now = self.time.milliseconds()
        self._purge(now)
        if not self._samples:
            return 0.0
        total = sum(s[1] for s in self._samples)
        elapsed = now - self._samples[0][0]
        elapsed = max(elapsed, (self.window_num - 1) * self.window_ms, 1)
        return total * 1000.0 / elapsed

    def is_quota_exceeded(self) -> bool:
        return self.bound is not None and self.rate() > self.bound
