"""ClientQuotaManager: Kafka's precedence of quota entities, its Rate and throttle times."""

from kafpy.common.client_quota_config import DEFAULT, QuotaType
from kafpy.server.client_quota_manager import ClientQuotaManager, QuotaManagers, Rate


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def test_rate_spans_at_least_all_but_one_window() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, 0)
    assert rate.window_size_ms(0) == 10_000  # a young rate is taken over 10 windows
    assert rate.measure(0) == 1000.0
    for t in range(1, 30):
        rate.record(1000, t * 1000)
    # 11 windows kept, the oldest starting 10 s ago: 11,000 over 10 s
    assert rate.window_size_ms(29_000) == 10_000
    assert rate.measure(29_000) == 1100.0


def test_precedence_of_quota_entities() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    assert m.quota_for("alice", "c1") is None
    m.update_quota((None, DEFAULT), 1.0)
    assert m.quota_for("alice", "c1") == (1.0, ("", "c1"))  # each client its own rate
    m.update_quota((None, "c1"), 2.0)
    assert m.quota_for("alice", "c1") == (2.0, ("", "c1"))
    m.update_quota((DEFAULT, None), 3.0)
    assert m.quota_for("alice", "c1") == (3.0, ("alice", ""))  # all of a user's clients share
    m.update_quota((DEFAULT, DEFAULT), 4.0)
    assert m.quota_for("alice", "c1") == (4.0, ("alice", "c1"))
    m.update_quota((DEFAULT, "c1"), 5.0)
    m.update_quota(("alice", None), 6.0)
    assert m.quota_for("alice", "c1") == (6.0, ("alice", ""))
    m.update_quota(("alice", DEFAULT), 7.0)
    m.update_quota(("alice", "c1"), 8.0)
    assert m.quota_for("alice", "c1") == (8.0, ("alice", "c1"))
    assert m.quota_for("alice", "c2") == (7.0, ("alice", "c2"))
    assert m.quota_for("bob", "c1") == (5.0, ("bob", "c1"))
    m.update_quota(("alice", "c1"), None)
    assert m.quota_for("alice", "c1") == (7.0, ("alice", "c1"))


def test_throttle_time_is_kafkas_formula() -> None:
    clock = Clock()
    m = ClientQuotaManager(QuotaType.PRODUCE, 11, 1, clock)
    m.update_quota((None, "c1"), 1000.0)  # 1000 bytes/s
    assert m.record_and_get_throttle_time_ms("u", "c1", 5000) == 0  # 500 B/s over 10 s
    # 20,000 bytes in all over the 10 s window: 2000 B/s, (2000 - 1000) / 1000 * 10 s
    assert m.record_and_get_throttle_time_ms("u", "c1", 15000) == 10_000
    assert m.record_and_get_throttle_time_ms("u", "c2", 10**9) == 0  # no quota for c2
    m.unrecord("u", "c1", 15000)
    assert m.record_and_get_throttle_time_ms("u", "c1", 0) == 0


def test_quota_managers_apply_an_entitys_configs() -> None:
    q = QuotaManagers()
    q.update_entity(("alice", None), {"producer_byte_rate": "1024", "request_percentage": "50",
                                      "SCRAM-SHA-256": "salt=..."})  # fmt: skip
    assert q.produce.quotas() == {("alice", None): 1024.0}
    assert q.request.quotas() == {("alice", None): 50.0} and not q.fetch.enabled
    q.update_entity(("alice", None), {"consumer_byte_rate": "10"})
    assert not q.produce.enabled and q.fetch.quotas() == {("alice", None): 10.0}
