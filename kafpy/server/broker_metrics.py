"""Broker metrics: Kafka's broker meters, counted per batch and per request, and the
Prometheus collector that reads them (and the broker's state) at scrape time.

Names are those the Prometheus JMX exporter gives Kafka's MBeans in the usual dashboards
(`kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=t>` becomes
`kafka_server_brokertopicmetrics_messagesin_total{topic="t"}`, the all-topics meter the
same name without the label). Counters are plain integers moved on the event loop by
ReplicaManager (per partition of a produce or fetch request) and the SocketServer (per
request); gauges are read from the broker's state when Prometheus scrapes, on the loop,
so they see one consistent state. Each broker owns its own `CollectorRegistry`, so
several brokers in one process (tests) do not share metrics.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.samples import Sample

from kafpy.common.file_descriptors import open_file_count, open_files_limit
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_state import ControllerState
from kafpy.controller.partition_state_machine import PartitionState
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import REQUESTS
from kafpy.records.memory_records import MemoryRecords
from kafpy.storage.file_handle_cache import FILE_HANDLE_CACHE

if TYPE_CHECKING:
    from kafpy.controller.kafka_controller import KafkaController
    from kafpy.coordinator.group_coordinator import GroupCoordinator
    from kafpy.server.fetch_session import FetchSessionCache
    from kafpy.server.kafka_server import KafkaServer
    from kafpy.server.loop_lag_probe import LoopLagProbe
    from kafpy.server.replica_manager import FetchPartitionData, ReplicaManager
    from kafpy.storage.log_manager import LogManager

# request time buckets in ms (Kafka's TotalTimeMs is a histogram in ms)
REQUEST_TIME_BUCKETS_MS: tuple[float, ...] = (
    0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
)  # fmt: skip
LOOP_LAG_BUCKETS_S: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip


class TopicStats:
    """One topic's (or all topics') BrokerTopicMetrics meters, as running totals."""

    __slots__ = (
        "messages_in", "bytes_in", "bytes_out", "bytes_rejected", "failed_produce_requests",
        "failed_fetch_requests", "total_produce_requests", "total_fetch_requests",
        "replication_bytes_out",
    )  # fmt: skip

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.bytes_rejected = 0
        self.failed_produce_requests = 0
        self.failed_fetch_requests = 0
        self.total_produce_requests = 0
        self.total_fetch_requests = 0
        self.replication_bytes_out = 0


# (metric name, TopicStats field, help), in Kafka's MBean order
_TOPIC_METERS: tuple[tuple[str, str, str], ...] = (
    ("messagesin", "messages_in", "Records appended as leader (MessagesInPerSec)."),
    ("bytesin", "bytes_in", "Bytes of produced batches appended as leader (BytesInPerSec)."),
    ("bytesout", "bytes_out", "Bytes of batches sent to consumers (BytesOutPerSec)."),
    ("bytesrejected", "bytes_rejected", "Bytes of produce data refused as too large (BytesRejectedPerSec)."),
    ("failedproducerequests", "failed_produce_requests", "Partition appends that failed (FailedProduceRequestsPerSec)."),
    ("failedfetchrequests", "failed_fetch_requests", "Partition reads that failed (FailedFetchRequestsPerSec)."),
    ("totalproducerequests", "total_produce_requests", "Partition appends asked for (TotalProduceRequestsPerSec)."),
    ("totalfetchrequests", "total_fetch_requests", "Partition reads asked for (TotalFetchRequestsPerSec)."),
)  # fmt: skip
# errors that say where the partition is, not that the append went wrong (Kafka does not
# count them as failed produce requests)
_NOT_FAILURES = frozenset({
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION,
})  # fmt: skip
# Kafka's BytesRejectedPerSec: produce data refused for its size
_REJECTED_FOR_SIZE = frozenset({Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE})
# Kafka's replication meters exist only without the topic tag
_REPLICATION_METERS: tuple[tuple[str, str, str], ...] = (
    ("replicationbytesout", "replication_bytes_out", "Bytes sent to followers (ReplicationBytesOutPerSec)."),
)  # fmt: skip


class BrokerTopicStats:
    """Kafka's BrokerTopicStats: the BrokerTopicMetrics meters per topic and for all topics.

    Moved per partition of a request (a batch set), never per record: bytes are the
    sizes of the record sets as they came in or go out, messages the record counts from
    the batch headers the append validated.
    """

    def __init__(self) -> None:
        self.all_topics = TopicStats()
        self.topics: dict[str, TopicStats] = {}

    def topic_stats(self, topic: str) -> TopicStats:
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats()
        return stats

    def remove_metrics(self, topic: str) -> None:
        """Forget a deleted topic's meters (the all-topics totals keep what it counted)."""
        self.topics.pop(topic, None)

    def record_append(self, topic: str, messages: int, size: int) -> None:
        """A produce request's append of `messages` records (`size` bytes) to one partition."""
        ts, all_ = self.topic_stats(topic), self.all_topics
        ts.total_produce_requests += 1
        all_.total_produce_requests += 1
        ts.messages_in += messages
        all_.messages_in += messages
        ts.bytes_in += size
        all_.bytes_in += size

    def record_failed_append(self, topic: str, error_code: int, data: object) -> None:
        """A produce request's append to one partition that answered `error_code`."""
        ts, all_ = self.topic_stats(topic), self.all_topics
        ts.total_produce_requests += 1
        all_.total_produce_requests += 1
        if error_code in _NOT_FAILURES:
            return
        ts.failed_produce_requests += 1
        all_.failed_produce_requests += 1
        if error_code in _REJECTED_FOR_SIZE:
            size = data.size_in_bytes if isinstance(data, MemoryRecords) else len(data or b"")  # type: ignore[arg-type]
            ts.bytes_rejected += size
            all_.bytes_rejected += size

    def record_fetch(
        self, from_follower: bool, results: Iterable[tuple[TopicPartition, FetchPartitionData]]
    ) -> None:
        """A fetch request's reads, one per partition."""
        all_ = self.all_topics
        for tp, r in results:
            ts = self.topic_stats(tp.topic)
            ts.total_fetch_requests += 1
            all_.total_fetch_requests += 1
            if r.error_code != Errors.NONE and r.error_code not in _NOT_FAILURES:
                ts.failed_fetch_requests += 1
                all_.failed_fetch_requests += 1
            size = 0 if r.records is None else len(r.records)
            if from_follower:
                all_.replication_bytes_out += size
            else:
                ts.bytes_out += size
                all_.bytes_out += size

    def record_idle_fetch(self, count_by_topic: Mapping[str, int]) -> None:
        """An incremental fetch's idle partitions (not read, nothing to say): a read each."""
        all_ = self.all_topics
        for topic, count in count_by_topic.items():
            if count > 0:
                self.topic_stats(topic).total_fetch_requests += count
                all_.total_fetch_requests += count


class RequestStats:
    """One request name's counters: requests, and the TotalTimeMs and RequestQueueTimeMs
    histograms (a count per bucket, the last above every bound, and the sums)."""

    __slots__ = ("count", "total_counts", "total_sum", "queue_counts", "queue_sum")

    def __init__(self, buckets: int) -> None:
        self.count = 0
        self.total_counts = [0] * (buckets + 1)
        self.total_sum = 0.0
        self.queue_counts = [0] * (buckets + 1)
        self.queue_sum = 0.0


class RequestMetrics:
    """Kafka's RequestMetrics per request name: RequestsPerSec, TotalTimeMs and
    RequestQueueTimeMs (from the frame's arrival to the start of its processing).

    Fetch requests count under `Fetch` and under `FetchConsumer` or `FetchFollower`, as
    Kafka's do."""

    def __init__(self, buckets_ms: Sequence[float] = REQUEST_TIME_BUCKETS_MS) -> None:
        self.buckets_ms = tuple(buckets_ms)
        self.by_name: dict[str, RequestStats] = {}
        # (api key << 1 | from follower) -> the stats one request moves
        self._targets: dict[int, tuple[RequestStats, ...]] = {}

    @property
    def requests(self) -> dict[str, int]:
        return {name: stats.count for name, stats in self.by_name.items()}

    def record(self, api_key: int, from_follower: bool, queue_ms: float, total_ms: float) -> None:
        """One request done (its response handed to the socket, or none due)."""
        targets = self._targets.get(api_key << 1 | from_follower)
        if targets is None:
            targets = self._resolve(api_key, from_follower)
        bounds = self.buckets_ms
        t = bisect.bisect_left(bounds, total_ms)
        q = bisect.bisect_left(bounds, queue_ms)
        for stats in targets:
            stats.count += 1
            stats.total_counts[t] += 1
            stats.total_sum += total_ms
            stats.queue_counts[q] += 1
            stats.queue_sum += queue_ms

    def _resolve(self, api_key: int, from_follower: bool) -> tuple[RequestStats, ...]:
        try:
            names = [REQUESTS[ApiKey(api_key)].name.removesuffix("Request")]
        except (KeyError, ValueError):
            names = [f"ApiKey{api_key}"]
        if api_key == ApiKey.FETCH:
            names.append("FetchFollower" if from_follower else "FetchConsumer")
        targets = tuple(
            self.by_name.setdefault(name, RequestStats(len(self.buckets_ms))) for name in names
        )
        self._targets[api_key << 1 | from_follower] = targets
        return targets

    def families(self) -> Iterator[Metric]:
        """The counters and histograms as Prometheus metric families."""
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests", "Requests served, per request name.",
            labels=["request"],
        )  # fmt: skip
        total = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltimems",
            "Time from a request's arrival to its response being handed to the socket, in ms.",
            labels=["request"],
        )
        queue = HistogramMetricFamily(
            "kafka_network_requestmetrics_requestqueuetimems",
            "Time a request waited behind earlier requests of its connection, in ms.",
            labels=["request"],
        )
        for name, stats in sorted(self.by_name.items()):
            requests.add_metric([name], stats.count)
            total.add_metric(
                [name], _cumulative(self.buckets_ms, stats.total_counts), stats.total_sum
            )
            queue.add_metric(
                [name], _cumulative(self.buckets_ms, stats.queue_counts), stats.queue_sum
            )
        yield from (requests, total, queue)


def _cumulative(bounds: Sequence[float], counts: Sequence[int]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    total = 0
    for bound, count in zip(bounds, counts, strict=False):
        total += count
        out.append((_bound_text(bound), total))
    out.append(("+Inf", total + counts[-1]))
    return out


def _bound_text(bound: float) -> str:
    return repr(float(bound))


def _rate_and_time_metric_name(state: ControllerState) -> str:
    """Kafka's ControllerStats timer of a controller state (BrokerChange is, for history's
    sake, LeaderElectionRateAndTimeMs)."""
    if state is ControllerState.BROKER_CHANGE:
        return "leaderelectionrateandtimems"
    if state is ControllerState.ALTER_PARTITION_REASSIGNMENT:
        return "partitionreassignmentrateandtimems"
    return str(state.value).lower() + "rateandtimems"


class BrokerMetricsCollector:
    """Reads one broker's meters and state into Prometheus metric families at scrape time."""

    def __init__(self, server: KafkaServer, probe: LoopLagProbe | None = None) -> None:
        self.server = server
        self.probe = probe

    def describe(self) -> Iterable[Metric]:
        return ()  # no collection at registration: the broker may not be started yet

    def collect(self) -> Iterator[Metric]:
        server = self.server
        rm = server.replica_manager
        if rm is not None and rm.broker_topic_stats is not None:
            yield from _broker_topic_metrics(rm.broker_topic_stats)
        if rm is not None:
            yield from _replica_manager_metrics(rm)
        if server.apis is not None:
            yield from _fetch_session_cache_metrics(server.apis.ctx.fetch_manager.cache)
        if server.request_metrics is not None:
            yield from server.request_metrics.families()
        if server.controller is not None:
            yield from _controller_metrics(server.controller)
        if server.log_manager is not None:
            yield from _log_metrics(server.log_manager)
        yield from _file_descriptor_metrics()
        if server.group_coordinator is not None:
            yield from _consumer_group_metrics(server.group_coordinator, rm)
        if self.probe is not None:
            yield from _loop_lag_metrics(self.probe)


def _broker_topic_metrics(stats: BrokerTopicStats) -> Iterator[Metric]:
    topics = sorted(stats.topics.items())
    for name, field, doc in _TOPIC_METERS:
        family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{name}", doc)
        full = family.name + "_total"
        # the all-topics meter without the label, the per-topic ones with it (one family)
        family.samples.append(Sample(full, {}, float(getattr(stats.all_topics, field))))
        for topic, ts in topics:
            family.samples.append(Sample(full, {"topic": topic}, float(getattr(ts, field))))
        yield family
    for name, field, doc in _REPLICATION_METERS:
        yield CounterMetricFamily(
            f"kafka_server_brokertopicmetrics_{name}", doc, value=getattr(stats.all_topics, field)
        )


def _replica_manager_metrics(rm: ReplicaManager) -> Iterator[Metric]:
    under_replicated = leaders = under_min_isr = 0
    for p in rm.partitions.values():
        if not p.is_leader:
            continue
        leaders += 1
        if len(p.isr) < len(p.assigned_replicas):
            under_replicated += 1
        if p.log is not None and len(p.isr) < p.log.config.min_insync_replicas:
            under_min_isr += 1
    prefix = "kafka_server_replicamanager_"
    yield GaugeMetricFamily(prefix + "underreplicatedpartitions",
                            "Partitions led here whose ISR is smaller than their replica set.",
                            value=under_replicated)  # fmt: skip
    yield GaugeMetricFamily(prefix + "underminisrpartitioncount",
                            "Partitions led here whose ISR is below min.insync.replicas.",
                            value=under_min_isr)  # fmt: skip
    yield GaugeMetricFamily(prefix + "partitioncount", "Partitions hosted here.",
                            value=len(rm.partitions))  # fmt: skip
    yield GaugeMetricFamily(prefix + "leadercount", "Partitions led here.", value=leaders)
    yield GaugeMetricFamily(prefix + "offlinereplicacount",
                            "Replicas here whose log dir is offline.",
                            value=len(rm.offline_partitions))  # fmt: skip
    yield CounterMetricFamily(prefix + "isrshrinks", "ISR shrinks of partitions led here.",
                              value=rm.isr_shrinks)  # fmt: skip
    yield CounterMetricFamily(prefix + "isrexpands", "ISR expansions of partitions led here.",
                              value=rm.isr_expands)  # fmt: skip
    purgatory = GaugeMetricFamily(
        "kafka_server_delayedoperationpurgatory_purgatorysize",
        "Operations watched in the purgatory, counted once per key they watch.",
        labels=["delayedOperation"],
    )
    delayed = GaugeMetricFamily(
        "kafka_server_delayedoperationpurgatory_numdelayedoperations",
        "Operations waiting in the purgatory.",
        labels=["delayedOperation"],
    )
    for purg in (rm.delayed_produce_purgatory, rm.delayed_fetch_purgatory,
              rm.delayed_delete_records_purgatory):  # fmt: skip
        purgatory.add_metric([purg.name], purg.watched_total)
        delayed.add_metric([purg.name], purg.delayed)
    yield purgatory
    yield delayed


def _fetch_session_cache_metrics(cache: FetchSessionCache) -> Iterator[Metric]:
    prefix = "kafka_server_fetchsessioncache_"
    yield GaugeMetricFamily(prefix + "numincrementalfetchsessions",
                            "Incremental fetch sessions in the cache.", value=cache.size)  # fmt: skip
    yield GaugeMetricFamily(prefix + "numincrementalfetchpartitionscached",
                            "Partitions in all incremental fetch sessions.",
                            value=cache.total_partitions)  # fmt: skip
    yield CounterMetricFamily(prefix + "incrementalfetchsessionevictions",
                              "Incremental fetch sessions evicted (IncrementalFetchSessionEvictionsPerSec).",
                              value=cache.evictions)  # fmt: skip


def _controller_metrics(controller: KafkaController) -> Iterator[Metric]:
    prefix = "kafka_controller_kafkacontroller_"
    active = controller.is_active
    ctx = controller.context
    offline = global_partitions = global_topics = 0
    if active:
        global_topics = len(ctx.all_topics)
        for tp, state in ctx.partition_states.items():
            global_partitions += 1
            if (
                state is PartitionState.OFFLINE_PARTITION
                and tp.topic not in ctx.topics_to_be_deleted
            ):
                offline += 1
    yield GaugeMetricFamily(prefix + "activecontrollercount",
                            "1 on the active controller, else 0.", value=int(active))  # fmt: skip
    yield GaugeMetricFamily(prefix + "offlinepartitionscount",
                            "Partitions without a live leader (on the active controller).",
                            value=offline)  # fmt: skip
    yield GaugeMetricFamily(prefix + "globalpartitioncount",
                            "Partitions in the cluster (on the active controller).",
                            value=global_partitions)  # fmt: skip
    yield GaugeMetricFamily(prefix + "globaltopiccount",
                            "Topics in the cluster (on the active controller).",
                            value=global_topics)  # fmt: skip
    timings = controller.event_manager.state_timings
    for cstate in ControllerState:
        if cstate is ControllerState.IDLE:
            continue
        count, total_ms = timings.get(cstate, (0, 0.0))
        yield SummaryMetricFamily(
            "kafka_controller_controllerstats_" + _rate_and_time_metric_name(cstate),
            f"Controller events of state {cstate.value} processed, and their time in ms.",
            count_value=count,
            sum_value=total_ms,
        )


def _log_metrics(log_manager: LogManager) -> Iterator[Metric]:
    labels = ["topic", "partition"]
    size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's log.", labels=labels)
    end = GaugeMetricFamily("kafka_log_log_logendoffset", "The log end offset.", labels=labels)
    start = GaugeMetricFamily(
        "kafka_log_log_logstartoffset", "The log start offset.", labels=labels
    )
    segments = GaugeMetricFamily(
        "kafka_log_log_numlogsegments", "Segments of the log.", labels=labels
    )
    for tp, log in sorted(log_manager.logs_by_topic_partition().items()):
        values = [tp.topic, str(tp.partition)]
        size.add_metric(values, log.size)
        end.add_metric(values, log.log_end_offset)
        start.add_metric(values, log.log_start_offset)
        segments.add_metric(values, log.num_segments)
    yield from (size, end, start, segments)
    cleaner = log_manager.cleaner
    stats = [t.last_stats for t in cleaner.cleaners if t.last_stats is not None] if cleaner else []
    read = sum(s.bytes_read for s in stats)
    written = sum(s.bytes_written for s in stats)
    prefix = "kafka_log_logcleaner_"
    yield GaugeMetricFamily(prefix + "max_clean_time_secs",
                            "The longest last round of the cleaner threads, in seconds.",
                            value=max((s.elapsed_secs() for s in stats), default=0.0))  # fmt: skip
    yield GaugeMetricFamily(prefix + "cleaner_recopy_percent",
                            "Bytes written as a percentage of bytes read in the last rounds.",
                            value=int(100 * written / max(read, 1)))  # fmt: skip
    yield GaugeMetricFamily(prefix + "max_buffer_utilization_percent",
                            "The fullest offset map of the last rounds, in percent.",
                            value=int(100 * max((s.buffer_utilization for s in stats), default=0.0)))  # fmt: skip


def _file_descriptor_metrics() -> Iterator[Metric]:
    """How close the broker is to its descriptor limit: the JMX exporter's process_open_fds
    and process_max_fds (what Kafka dashboards plot), and the segment files kept open by
    the FileHandleCache (kafpy's)."""
    yield GaugeMetricFamily("process_open_fds", "Open file descriptors.",
                            value=open_file_count())  # fmt: skip
    yield GaugeMetricFamily("process_max_fds",
                            "Maximum number of open file descriptors (the soft RLIMIT_NOFILE).",
                            value=open_files_limit())  # fmt: skip
    prefix = "kafpy_log_filehandlecache_"
    yield GaugeMetricFamily(prefix + "openfiles", "Segment files holding a descriptor now.",
                            value=FILE_HANDLE_CACHE.open_files)  # fmt: skip
    yield GaugeMetricFamily(prefix + "capacity", "Segment files kept open at most.",
                            value=FILE_HANDLE_CACHE.capacity)  # fmt: skip
    yield CounterMetricFamily(prefix + "evictions",
                              "Segment files closed to make room (opened again on their next use).",
                              value=FILE_HANDLE_CACHE.evictions)  # fmt: skip


def _consumer_group_metrics(
    coordinator: GroupCoordinator, rm: ReplicaManager | None
) -> Iterator[Metric]:
    """kafka-lag-exporter's names; the lag is against the high watermark of the replica
    this broker holds (groups and partitions it knows nothing of give no lag)."""
    partitions = rm.partitions if rm is not None else {}
    labels = ["group", "topic", "partition"]
    offset = GaugeMetricFamily("kafka_consumergroup_group_offset",
                               "The group's committed offset.", labels=labels)  # fmt: skip
    lag = GaugeMetricFamily("kafka_consumergroup_group_lag",
                            "High watermark minus the group's committed offset.", labels=labels)  # fmt: skip
    max_lag = GaugeMetricFamily("kafka_consumergroup_group_max_lag",
                                "The group's largest partition lag.", labels=["group"])  # fmt: skip
    sum_lag = GaugeMetricFamily("kafka_consumergroup_group_sum_lag",
                                "The sum of the group's partition lags.", labels=["group"])  # fmt: skip
    for group in sorted(coordinator.manager.current_groups(), key=lambda g: g.group_id):
        lags: list[int] = []
        for tp, om in sorted(group.offsets.items()):
            values = [group.group_id, tp.topic, str(tp.partition)]
            offset.add_metric(values, om.offset)
            partition = partitions.get(tp)
            if partition is None or partition.log is None:
                continue
            value = max(0, partition.high_watermark - om.offset)
            lags.append(value)
            lag.add_metric(values, value)
        if lags:
            max_lag.add_metric([group.group_id], max(lags))
            sum_lag.add_metric([group.group_id], sum(lags))
    yield from (offset, lag, max_lag, sum_lag)


def _loop_lag_metrics(probe: LoopLagProbe) -> Iterator[Metric]:
    counts, total_s = probe.histogram(LOOP_LAG_BUCKETS_S)
    family = HistogramMetricFamily(
        "kafpy_server_eventloop_lag_seconds",
        "How late the broker's event loop woke from a 10 ms sleep (LoopLagProbe), in seconds.",
    )
    family.add_metric([], _cumulative(LOOP_LAG_BUCKETS_S, counts), total_s)
    yield family
    yield CounterMetricFamily(
        "kafpy_server_eventloop_stalls",
        f"Times the event loop did not tick for {probe.threshold_s * 1000:g} ms or more.",
        value=probe.stalls,
    )


def new_registry(server: KafkaServer, probe: LoopLagProbe | None) -> CollectorRegistry:
    """A registry of this broker's metrics only (several brokers may share a process)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerMetricsCollector(server, probe))
    return registry
