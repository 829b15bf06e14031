"""Tests of broker_metrics: the meters' arithmetic and the exposition of the collector
(rendered by prometheus-client and read back with its parser)."""

from __future__ import annotations

import os
import resource
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kafpy.common.file_descriptors import open_file_count
from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages.fetch import FetchMetadata
from kafpy.server.broker_metrics import (
    BrokerMetricsCollector,
    BrokerTopicStats,
    RequestMetrics,
    new_registry,
)
from kafpy.server.delayed_fetch import PartitionFetchInfo
from kafpy.server.fetch_session import FetchManager, FetchSessionCache
from kafpy.server.loop_lag_probe import LoopLagProbe
from kafpy.storage.file_handle_cache import FILE_HANDLE_CACHE


def samples(
    server: Any, probe: LoopLagProbe | None = None
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(new_registry(server, probe)).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def bare_server(**parts: Any) -> Any:
    names = ("replica_manager", "request_metrics", "controller", "log_manager", "group_coordinator",
             "apis")  # fmt: skip
    return SimpleNamespace(**{n: parts.get(n) for n in names})


def test_fetch_requests_count_under_fetch_and_their_kind() -> None:
    m = RequestMetrics(buckets_ms=(1.0, 10.0))
    m.record(ApiKey.FETCH, False, 0.1, 0.5)
    m.record(ApiKey.FETCH, True, 0.1, 5.0)
    m.record(ApiKey.PRODUCE, False, 0.1, 50.0)
    assert m.requests == {"Fetch": 2, "FetchConsumer": 1, "FetchFollower": 1, "Produce": 1}
    assert m.by_name["Fetch"].total_counts == [1, 1, 0]
    assert m.by_name["Produce"].total_counts == [0, 0, 1]
    out = samples(bare_server(request_metrics=m))
    hist = "kafka_network_requestmetrics_totaltimems_bucket"
    assert out[(hist, (("le", "1.0"), ("request", "Fetch")))] == 1
    assert out[(hist, (("le", "10.0"), ("request", "Fetch")))] == 2
    assert out[(hist, (("le", "+Inf"), ("request", "Produce")))] == 1
    assert out[("kafka_network_requestmetrics_totaltimems_sum", (("request", "Produce"),))] == 50.0
    assert (
        out[("kafka_network_requestmetrics_requests_total", (("request", "FetchFollower"),))] == 1
    )


def test_topic_meters_are_exported_per_topic_and_for_all_topics_in_one_family() -> None:
    stats = BrokerTopicStats()
    for topic, size in (("a", 100), ("b", 30), ("a", 5)):
        ts = stats.topic_stats(topic)
        ts.bytes_in += size
        stats.all_topics.bytes_in += size
    rm = SimpleNamespace(
        broker_topic_stats=stats, partitions={}, offline_partitions=set(), isr_shrinks=2,
        isr_expands=1, delayed_produce_purgatory=SimpleNamespace(name="Produce", watched_total=3, delayed=1),
        delayed_fetch_purgatory=SimpleNamespace(name="Fetch", watched_total=0, delayed=0),
        delayed_delete_records_purgatory=SimpleNamespace(name="DeleteRecords", watched_total=0, delayed=0),
    )  # fmt: skip
    out = samples(bare_server(replica_manager=rm))
    name = "kafka_server_brokertopicmetrics_bytesin_total"
    assert out[(name, ())] == 135
    assert out[(name, (("topic", "a"),))] == 105
    assert out[(name, (("topic", "b"),))] == 30
    assert out[("kafka_server_replicamanager_isrshrinks_total", ())] == 2
    assert (
        out[
            (
                "kafka_server_delayedoperationpurgatory_purgatorysize",
                (("delayedOperation", "Produce"),),
            )
        ]
        == 3
    )


def test_the_loop_lag_histogram_regroups_the_probe_samples() -> None:
    probe = LoopLagProbe(0)
    for lag in (0.0002, 0.0003, 0.003, 0.2, 9.0):
        probe._record(lag)
    counts, total = probe.histogram((0.001, 0.01, 1.0))
    assert counts == [2, 1, 1, 1]
    assert abs(total - 9.2035) < 1e-9
    out = samples(bare_server(), probe)
    assert out[("kafpy_server_eventloop_lag_seconds_count", ())] == 5
    assert out[("kafpy_server_eventloop_lag_seconds_bucket", (("le", "0.001"),))] == 2
    assert out[("kafpy_server_eventloop_stalls_total", ())] == 0


def test_a_broker_without_parts_yet_exports_only_its_descriptors_and_does_not_fail() -> None:
    collector = BrokerMetricsCollector(bare_server())
    assert [m.name for m in collector.collect()] == [
        "process_open_fds",
        "process_max_fds",
        "kafpy_log_filehandlecache_openfiles",
        "kafpy_log_filehandlecache_capacity",
        "kafpy_log_filehandlecache_evictions",
    ]


def test_the_descriptor_gauges_say_how_close_the_process_is_to_its_limit() -> None:
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(50)]
    try:
        out = samples(bare_server())
        assert out[("process_open_fds", ())] >= 50
        assert out[("process_open_fds", ())] == pytest.approx(open_file_count(), abs=5)
    finally:
        for fd in held:
            os.close(fd)
    assert out[("process_max_fds", ())] == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert out[("kafpy_log_filehandlecache_capacity", ())] == FILE_HANDLE_CACHE.capacity


def test_the_fetch_session_cache_gauges() -> None:
    manager = FetchManager(MockTime(), FetchSessionCache(10))
    for follower in (False, True):
        data = {TopicPartition("t", p): PartitionFetchInfo(0, 100) for p in range(3)}
        context = manager.new_context(FetchMetadata(0, 0), data, [], follower)
        context.update_and_generate_response_data(
            {tp: {"error_code": 0, "high_watermark": 0, "log_start_offset": 0} for tp in data}
        )
    server = bare_server(apis=SimpleNamespace(ctx=SimpleNamespace(fetch_manager=manager)))
    found = samples(server)
    prefix = "kafka_server_fetchsessioncache_"
    assert found[(prefix + "numincrementalfetchsessions", ())] == 2
    assert found[(prefix + "numincrementalfetchpartitionscached", ())] == 6
    assert found[(prefix + "incrementalfetchsessionevictions_total", ())] == 0
