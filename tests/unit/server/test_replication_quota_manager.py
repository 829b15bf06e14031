"""ReplicationQuotaManager: the rate over windows against the bound, and which replicas
a throttled-replicas list names."""

from __future__ import annotations

from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.server.replication_quota_manager import ReplicationQuotaManager, throttled_by


def test_rate_over_windows_against_the_bound() -> None:
    time = MockTime()
    quota = ReplicationQuotaManager("Leader", window_num=11, window_size_s=1, time=time)
    quota.record(1000)
    assert not quota.is_quota_exceeded()  # no bound: unlimited
    # a burst in a fresh window counts over the 10 full windows (Kafka's Rate)
    assert quota.rate() == 100.0
    quota.update_quota(50)
    assert quota.is_quota_exceeded()
    quota.update_quota(200)
    assert not quota.is_quota_exceeded()
    time.sleep(5000)
    quota.record(2000)
    assert quota.rate() == 300.0
    assert quota.is_quota_exceeded()
    time.sleep(12000)  # every sample has left the 11 windows
    assert quota.rate() == 0.0 and not quota.is_quota_exceeded()
    quota.update_quota(None)
    quota.record(10**9)
    assert not quota.is_quota_exceeded()


def test_throttled_replicas_lists() -> None:
    tp = TopicPartition("t", 1)
    assert throttled_by(["*"], tp, 5)
    assert throttled_by(["0:2", "1:5"], tp, 5)
    assert not throttled_by(["1:4", "0:5"], tp, 5)
    assert not throttled_by([], tp, 5)
