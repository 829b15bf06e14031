"""ReplicaManager: the partitions this broker hosts, and every read and write of their logs.

It applies the controller's LeaderAndIsr (become leader or follower, creating logs
through LogManager and recording leader epochs) and StopReplica (stop serving, delete
the log) under its state-change lock, the work itself done by ReplicaStateChanges; appends producers' batches to the partitions it leads; reads for consumers
(up to the high watermark) and followers (up to the log end); parks fetches that want
more bytes, acks=all produces that wait for the ISR and DeleteRecords that wait for every
replica's log start offset (the low watermark), in purgatories woken by appends,
high-watermark moves and follower fetches; checkpoints the high watermarks of every log dir.

Replication: partitions this broker follows are fetched by the ReplicaFetcherManager's
fetchers (started and stopped on LeaderAndIsr); on the partitions it leads it expands
the ISR when a follower catches up and shrinks it (`isr-expiration`) when one has not
caught up for replica.lag.time.max.ms; AlterIsrManager sends each change to the controller
(AlterIsr, KIP-497; a KafkaServer always has one, kafpy speaking IBP 2.8), and without one
ZkIsrManager writes it to ZooKeeper and announces it (Kafka's path below IBP 2.7-IV2). LogDirFailureHandler takes the log dirs that failed offline.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from kafpy.cluster.partition import READ_COMMITTED, Partition, TimestampAndOffset
from kafpy.common.delayed_operation import DelayedOperationPurgatory, TimerScheduler
from kafpy.common.errors import (
    InvalidRequiredAcksError,
    InvalidTopicError,
    KafkaError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.logger import component_logger
from kafpy.common.scheduler import Scheduler
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.alter_isr_manager import AlterIsrItem, AlterIsrManager, AlterIsrResult
from kafpy.server.delayed_delete_records import DelayedDeleteRecords, delete_records_on_leaders
from kafpy.server.delayed_fetch import (
    DEBUGGING_CONSUMER_ID,
    DelayedFetch,
    FetchParams,
    FetchPartitionStatus,
    IdlePartitions,
    PartitionFetchInfo,
)
from kafpy.server.delayed_produce import DelayedProduce, ProducePartitionStatus
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF
from kafpy.server.lazy_offset_checkpoints import (
    HIGH_WATERMARK_CHECKPOINT_FILE,
    LazyOffsetCheckpoints,
)
from kafpy.server.log_dir_failure_channel import LogDirFailureChannel
from kafpy.server.log_dir_failure_handler import (
    LOG_DIR_FAILURE_TIMEOUT_MS,
    LogDirFailureHandler,
)
from kafpy.server.metadata_cache import INTERNAL_TOPICS, MetadataCache
from kafpy.server.replica_fetcher_manager import ReplicaFetcherManager
from kafpy.server.replica_fetcher_thread import BrokerEndPoint, FetcherChannel, ReplicaFetcherConfig
from kafpy.server.replica_selector import ReplicaSelector, find_preferred_read_replica
from kafpy.server.replica_state_changes import ReplicaStateChanges
from kafpy.server.replication_quota_manager import ReplicationQuotaManager, throttled_by
from kafpy.server.zk_isr_manager import (
    ZkIsrManager,
)
from kafpy.storage.log import LogDirFailedError
from kafpy.storage.log_append_info import LogOffsetMetadata
from kafpy.storage.log_manager import LogManager
from kafpy.storage.log_validator import RecordValidationError
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile
from kafpy.storage.producer_state_manager import AppendOrigin
from kafpy.storage.transaction_index import AbortedTxn

__all__ = [
    "DEBUGGING_CONSUMER_ID", "HIGH_WATERMARK_CHECKPOINT_FILE", "FetchParams",
    "FetchPartitionData", "PartitionFetchInfo", "ReplicaManager",
]  # fmt: skip

INITIAL_CONTROLLER_EPOCH = 0

if TYPE_CHECKING:
    from kafpy.server.broker_metrics import BrokerTopicStats


@dataclass(slots=True)
class FetchPartitionData:
    """One partition of a fetch's answer; `records` are the stored bytes as they are."""

    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: memoryview | None = None
    aborted_transactions: list[dict[str, int]] | None = None
    fetch_offset_metadata: LogOffsetMetadata = field(default_factory=lambda: LogOffsetMetadata(-1))
    error: KafkaError | None = None
    # the follower the consumer should fetch from instead (KIP-392), no records with it
    preferred_read_replica: int = -1


_default = KAFKA_CONFIG_DEF.default


class ReplicaManager:
    """Hosts this broker's partitions and serves every produce, fetch and offset lookup on them."""

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        metadata_cache: MetadataCache,
        scheduler: Scheduler,
        time: Time,
        *,
        replica_lag_time_max_ms: int = _default("replica.lag.time.max.ms"),
        high_watermark_checkpoint_interval_ms: int = _default(
            "replica.high.watermark.checkpoint.interval.ms"
        ),
        fetch_purgatory_purge_interval: int = _default("fetch.purgatory.purge.interval.requests"),
        producer_purgatory_purge_interval: int = _default(
            "producer.purgatory.purge.interval.requests"
        ),
        # Kafka's delete.records.purgatory.purge.interval.requests, a key kafpy does not take
        delete_records_purgatory_purge_interval: int = 1,
        timer: TimerScheduler | None = None,
        zk_client: KafkaZkClient | None = None,
        fetcher_config: ReplicaFetcherConfig | None = None,
        fetcher_connect: Callable[[BrokerEndPoint], FetcherChannel] | None = None,
        isr_change_propagation_blackout_ms: int = _default(
            "replica.isr.change.propagation.blackout.ms"
        ),
        isr_change_propagation_max_interval_ms: int = _default(
            "replica.isr.change.propagation.max.interval.ms"
        ),
        log_dir_failure_channel: LogDirFailureChannel | None = None,
        log_dir_failure_timeout_ms: int = LOG_DIR_FAILURE_TIMEOUT_MS,
        halt: Callable[[int], None] | None = None,
        replication_quotas: tuple[ReplicationQuotaManager, ReplicationQuotaManager] | None = None,
        alter_isr_manager: AlterIsrManager | None = None,
        replica_selector: ReplicaSelector | None = None,
    ) -> None:
        self.broker_id = broker_id
        # replica.selector.class: which replica a Fetch v11+ consumer should read from
        self.replica_selector = replica_selector
        self.alter_isr_manager = alter_isr_manager
        # (leader, follower) replication throttles
        self.leader_quota, self.follower_quota = replication_quotas or (
            ReplicationQuotaManager("Leader", time=time),
            ReplicationQuotaManager("Follower", time=time),
        )
        self.log = component_logger(
            "kafpy.server.ReplicaManager", f"ReplicaManager broker={broker_id}"
        )
        self.log_dir_failure_channel = log_dir_failure_channel or LogDirFailureChannel()
        self.log_dir_failure_timeout_ms = log_dir_failure_timeout_ms
        self.log_dir_failure_handler = LogDirFailureHandler(self, halt)
        # partitions whose log dir went offline (Kafka's HostedPartition.Offline)
        self.offline_partitions: set[TopicPartition] = set()
        self.zk_client = zk_client
        self.isr_manager = ZkIsrManager(
            broker_id, zk_client, time, self._isr_updated, self.log,
            blackout_ms=isr_change_propagation_blackout_ms,
            max_interval_ms=isr_change_propagation_max_interval_ms,
        )  # fmt: skip
        self._loop_tasks: list[asyncio.Task[None]] = []
        self.replica_fetcher_manager = ReplicaFetcherManager(
            broker_id, fetcher_config or ReplicaFetcherConfig(), self.partitions_get,
            self._on_follower_append, fetcher_connect, self.follower_quota,
        )  # fmt: skip
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.scheduler = scheduler
        self.time = time
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.hw_checkpoint_interval_ms = high_watermark_checkpoint_interval_ms
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self.partitions: dict[TopicPartition, Partition] = {}
        # told of each change of a hosted partition (the fetch session cache, KIP-227)
        self._partition_change_listeners: list[Callable[[TopicPartition], None]] = []
        # the event loop the broker runs on, and its thread (from startup): a change made
        # on another thread (retention) reaches the listeners through the loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = -1
        # BrokerTopicMetrics, counted only while the broker serves metrics (KafkaServer sets it)
        self.broker_topic_stats: BrokerTopicStats | None = None
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.delayed_fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] = (
            DelayedOperationPurgatory("Fetch", broker_id, timer, fetch_purgatory_purge_interval)
        )
        self.delayed_produce_purgatory: DelayedOperationPurgatory[DelayedProduce] = (
            DelayedOperationPurgatory(
                "Produce", broker_id, timer, producer_purgatory_purge_interval
            )
        )
        self.delayed_delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] = (
            DelayedOperationPurgatory(
                "DeleteRecords", broker_id, timer, delete_records_purgatory_purge_interval
            )
        )
        self.high_watermark_checkpoints = LazyOffsetCheckpoints(self.log)
        self.state_changes = ReplicaStateChanges(self)
        self.state_change_lock = asyncio.Lock()  # Kafka's replicaStateChangeLock
        self._hw_checkpoint_task: Any = None
        self.state_change_log = component_logger("kafpy.state.change.logger", "Broker", broker_id)

    # -- lifecycle ------------------------------------------------------------------------

    def startup(self) -> None:
        """Schedule highwatermark-checkpoint (on the scheduler's threads: it fsyncs) and,
        on the running loop, isr-expiration and isr-change-propagation."""
        self._hw_checkpoint_task = self.scheduler.schedule(
            "highwatermark-checkpoint",
            self.checkpoint_high_watermarks,
            self.hw_checkpoint_interval_ms,
            self.hw_checkpoint_interval_ms,
        )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (unit tests drive maybe_shrink_isr themselves)
        self._loop, self._loop_thread = loop, threading.get_ident()
        self._loop_tasks = [
            loop.create_task(self._every("isr-expiration", max(1, self.replica_lag_time_max_ms // 2),
                                         self.maybe_shrink_isr)),
            # only the ZooKeeper path announces ISR changes (AlterIsr's controller sends UpdateMetadata)
            *([] if self.alter_isr_manager is not None else [
                loop.create_task(self._every("isr-change-propagation", self.isr_change_propagation_check_ms,
                                             self.maybe_propagate_isr_changes))]),
            loop.create_task(self.log_dir_failure_handler.run()),
        ]  # fmt: skip

    async def _every(self, name: str, period_ms: int, fun: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000)
            try:
                result = fun()
                if asyncio.iscoroutine(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                self.log.exception("Uncaught exception in scheduled task '%s'", name)

    def report_log_dir_failure(self, d: Path, msg: str, e: BaseException) -> None:
        """Report an I/O error on log dir `d` (LogManager calls this from its tasks)."""
        self.log_dir_failure_channel.maybe_add_offline_log_dir(d, msg, e)

    async def handle_log_dir_failure(self, d: Path, send_zk_notification: bool = True) -> None:
        """Stop serving the replicas in `d` and tell the controller (LogDirFailureHandler)."""
        await self.log_dir_failure_handler.handle_log_dir_failure(d, send_zk_notification)

    async def shutdown_fetchers(self) -> None:
        """Stop the replica fetchers and the ISR tasks (before `shutdown`)."""
        for task in self._loop_tasks:
            task.cancel()
        self._loop_tasks = []
        await self.replica_fetcher_manager.shutdown()
        await self.isr_manager.shutdown()
        if self.alter_isr_manager is not None:
            await self.alter_isr_manager.shutdown()

    def shutdown(self, checkpoint_hw: bool = True) -> None:
        """Answer every parked request and write the high watermarks one last time."""
        self.log.info("Shutting down")
        for task in self._loop_tasks:
            task.cancel()
        self._loop_tasks = []
        if self._hw_checkpoint_task is not None:
            self._hw_checkpoint_task.cancel()
        self.delayed_fetch_purgatory.shutdown()
        self.delayed_produce_purgatory.shutdown()
        self.delayed_delete_records_purgatory.shutdown()
        if checkpoint_hw:
            self.checkpoint_high_watermarks()
        self.log.info("Shut down completely")

    # -- partitions -----------------------------------------------------------------------

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def partitions_get(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def add_partition_change_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        """Call `listener(tp)`, on the event loop, after each change of a hosted partition
        that a fetch may answer differently after (see Partition.change_listener)."""
        self._partition_change_listeners.append(listener)

    def partition_changed(self, tp: TopicPartition) -> None:
        """A hosted partition changed (its Partition or its Log says so)."""
        listeners = self._partition_change_listeners
        if not listeners:
            return
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            try:
                loop.call_soon_threadsafe(self.partition_changed, tp)
            except RuntimeError:
                pass  # the loop is closed: the broker is gone
            return
        for listener in listeners:
            listener(tp)

    def _on_follower_append(self, tp: TopicPartition) -> None:
        self.delayed_fetch_purgatory.check_and_complete(tp)

    def get_partition_or_error(self, tp: TopicPartition, expect_leader: bool = True) -> Partition:
        """The hosted partition; UnknownTopicOrPartitionError if this broker does not know it
        at all, NotLeaderOrFollowerError if it is in the cluster but not hosted here."""
        partition = self.partitions.get(tp)
        if partition is not None:
            return partition
        if tp in self.offline_partitions:
            raise KafkaStorageError(f"Partition {tp} is in an offline log directory")
        if self.metadata_cache.get_partition_info(tp) is not None:
            raise NotLeaderOrFollowerError(
                f"Broker {self.broker_id} is not a replica of {tp}; refresh metadata and retry."
            )
        raise UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {tp}.")

    def mark_partition_offline(self, tp: TopicPartition) -> None:
        """Stop hosting `tp`, whose log dir failed: it answers KAFKA_STORAGE_ERROR from now
        on (Kafka's markPartitionOffline)."""
        partition = self.partitions.pop(tp, None)
        if partition is not None:
            partition.forget()
        self.offline_partitions.add(tp)

    def checkpoint_high_watermarks(self) -> None:
        """Write replication-offset-checkpoint in every log dir (the HW of each hosted log)."""
        by_dir: dict[Path, dict[TopicPartition, int]] = {
            d: {} for d in self.log_manager.live_log_dirs
        }
        for tp, partition in list(self.partitions.items()):
            log = partition.log
            if log is None:
                continue
            by_dir.setdefault(Path(log.dir).parent, {})[tp] = partition.high_watermark
        for data_dir, entries in by_dir.items():
            try:
                OffsetCheckpointFile(data_dir / HIGH_WATERMARK_CHECKPOINT_FILE).write(entries)
            except KafkaStorageError as e:
                self.report_log_dir_failure(
                    data_dir,
                    f"Error while writing to highwatermark file in directory {data_dir}",
                    e,
                )

    # -- controller requests --------------------------------------------------------------

    async def load_topic_configs(self, request: Mapping[str, Any]) -> None:
        """Read the topic-level configs of topics a LeaderAndIsr will create logs for."""
        await self.state_changes.load_topic_configs(request)

    def become_leader_or_follower(
        self, request: Mapping[str, Any], version: int = 0
    ) -> dict[str, Any]:
        """Apply a LeaderAndIsr request at once; returns the response body."""
        steps = self.state_changes.apply_leader_and_isr(request, version)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    async def become_leader_or_follower_in_slices(
        self, request: Mapping[str, Any], version: int = 0
    ) -> dict[str, Any]:
        """Apply a LeaderAndIsr request, letting the event loop run other work every
        _STATE_CHANGE_SLICE_S: a request making a broker leader of 1,000 new partitions
        creates 1,000 logs, seconds of work that would otherwise stop every other client.
        Requests changing replica state (this and StopReplica) hold `state_change_lock`, as
        Kafka's replicaStateChangeLock, so they never interleave."""
        async with self.state_change_lock:
            steps = self.state_changes.apply_leader_and_isr(request, version)
            sliced_at = monotonic()
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                if monotonic() - sliced_at >= _STATE_CHANGE_SLICE_S:
                    await asyncio.sleep(0)
                    sliced_at = monotonic()

    def stop_replicas(self, request: Mapping[str, Any], version: int = 0) -> dict[str, Any]:
        """Apply a StopReplica request; returns the response body."""
        return self.state_changes.stop_replicas(request, version)

    def stop_replica(
        self, tp: TopicPartition, delete: bool, checkpoint: bool = True
    ) -> Path | None:
        """Stop serving `tp`; with `delete`, delete its log. Returns the log dir whose
        checkpoints are left to the caller when `checkpoint` is False."""
        return self.state_changes.stop_replica(tp, delete, checkpoint)

    def complete_delayed_requests(self, tp: TopicPartition) -> None:
        """Retry what waits on `tp` in every purgatory (its state changed)."""
        self.delayed_fetch_purgatory.check_and_complete(tp)
        self.delayed_produce_purgatory.check_and_complete(tp)
        self.delayed_delete_records_purgatory.check_and_complete(tp)

    # -- produce --------------------------------------------------------------------------

    async def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: Mapping[TopicPartition, MemoryRecords | memoryview | bytes | None],
        internal_topics_allowed: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        on_appended: Callable[[], None] | None = None,
    ) -> dict[TopicPartition, dict[str, Any]]:
        """Append each partition's batches as leader; returns a Produce partition response
        dict per partition (index, error_code, base_offset, log_append_time_ms,
        log_start_offset, record_errors, error_message). With acks=-1 it waits until the
        ISR has the records or `timeout_ms` runs out. `on_appended` is called once the
        batches are in the logs, before that wait. `origin` COORDINATOR is for the
        coordinators' own writes (markers, transactional offset commits): no sequence checks.
        """
        if required_acks not in (0, 1, -1):
            raise InvalidRequiredAcksError(
                f"Invalid required acks {required_acks}: acks must be 0, 1 or -1 (all)."
            )
        results: dict[TopicPartition, dict[str, Any]] = {}
        required: dict[TopicPartition, int] = {}
        stats = self.broker_topic_stats
        for tp, data in entries.items():
            resp: dict[str, Any] = {
                "index": tp.partition, "error_code": Errors.NONE, "base_offset": -1,
                "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                "error_message": None,
            }  # fmt: skip
            results[tp] = resp
            try:
                if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
                    raise InvalidTopicError(f"Cannot append to internal topic {tp.topic}")
                partition = self.get_partition_or_error(tp)
                if isinstance(data, MemoryRecords):
                    records = data
                else:
                    records = MemoryRecords(data if data is not None else b"")
                size = records.size_in_bytes
                info = partition.append_records_to_leader(records, required_acks, origin)
                if stats is not None:
                    stats.record_append(tp.topic, info.num_messages, size)
                if info.valid_bytes != size:
                    self.log.debug(
                        "Dropped %d bytes of a partial batch appended to %s",
                        size - info.valid_bytes,
                        tp,
                    )
                resp["base_offset"] = info.first_offset
                resp["log_append_time_ms"] = info.log_append_time
                resp["log_start_offset"] = info.log_start_offset
                required[tp] = info.last_offset + 1
                self.delayed_fetch_purgatory.check_and_complete(tp)
            except LogDirFailedError as e:
                # the segment was cut back to its size before the append; the dir goes
                # offline and nothing more is written there
                self.report_log_dir_failure(e.log_dir, f"Error while appending records to {tp}", e)
                resp["error_code"] = e.code
                resp["error_message"] = str(e)
            except KafkaError as e:
                resp["error_code"] = error_code_of(e)
                resp["error_message"] = str(e)
                if stats is not None:
                    stats.record_failed_append(tp.topic, resp["error_code"], data)
                if isinstance(e, RecordValidationError):  # KIP-467: which records failed
                    resp["record_errors"] = [
                        {"batch_index": i, "batch_index_error_message": m}
                        for i, m in e.record_errors
                    ]
                # As Kafka: the partition's log start offset, which lets an idempotent producer
                # tell an error caused by retention (safe to reset) from real loss.
                resp["log_start_offset"] = self._log_start_offset_or_unknown(tp)
                if not isinstance(e, (NotLeaderOrFollowerError, UnknownTopicOrPartitionError)):
                    self.log.debug("Error processing append operation on partition %s: %s", tp, e)
            except OSError as e:
                # an I/O error outside the log's own writes: its dir is no safer
                log = self.log_manager.get_log(tp)
                if log is not None:
                    self.report_log_dir_failure(
                        Path(log.dir).parent, f"Error while appending records to {tp}", e
                    )
                resp["error_code"] = Errors.KAFKA_STORAGE_ERROR
                resp["error_message"] = str(e)
                if stats is not None:
                    stats.record_failed_append(tp.topic, Errors.KAFKA_STORAGE_ERROR, data)
            except Exception as e:  # a bug: this partition answers, the broker lives
                self.log.exception("Error processing append operation on partition %s", tp)
                resp["error_code"] = Errors.UNKNOWN_SERVER_ERROR
                resp["error_message"] = str(e)
                if stats is not None:
                    stats.record_failed_append(tp.topic, Errors.UNKNOWN_SERVER_ERROR, data)
        if on_appended is not None:
            on_appended()
        if required_acks != -1 or not required or self._isr_has_all(required):
            return results
        return await self._wait_for_isr(timeout_ms, results, required)

    def _log_start_offset_or_unknown(self, tp: TopicPartition) -> int:
        partition = self.partitions.get(tp)
        if partition is None or partition.log is None:
            return -1
        return partition.log.log_start_offset

    def _isr_has_all(self, required: Mapping[TopicPartition, int]) -> bool:
        for tp, offset in required.items():
            p = self.partitions.get(tp)
            if p is None or p.high_watermark < offset:
                return False
        return True

    async def _wait_for_isr(
        self,
        timeout_ms: int,
        results: dict[TopicPartition, dict[str, Any]],
        required: Mapping[TopicPartition, int],
    ) -> dict[TopicPartition, dict[str, Any]]:
        future: asyncio.Future[dict[TopicPartition, dict[str, Any]]] = (
            asyncio.get_running_loop().create_future()
        )
        statuses = {
            tp: ProducePartitionStatus(required.get(tp, -1), resp) for tp, resp in results.items()
        }

        def done(answer: dict[TopicPartition, dict[str, Any]]) -> None:
            if not future.done():
                future.set_result(answer)

        op = DelayedProduce(timeout_ms, statuses, self._check_replicated, done)
        self.delayed_produce_purgatory.try_complete_else_watch(op, list(required))
        return await future

    def _check_replicated(self, tp: TopicPartition, required_offset: int) -> tuple[bool, int]:
        partition = self.partitions.get(tp)
        if partition is None or not partition.is_leader or partition.log is None:
            return True, Errors.NOT_LEADER_OR_FOLLOWER
        if partition.high_watermark >= required_offset:
            if len(partition.isr) < partition.log.config.min_insync_replicas:
                return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return True, Errors.NONE
        return False, Errors.NONE

    # -- fetch ----------------------------------------------------------------------------

    async def fetch_messages(
        self,
        params: FetchParams,
        fetch_infos: list[tuple[TopicPartition, PartitionFetchInfo]],
        idle: IdlePartitions | None = None,
    ) -> list[tuple[TopicPartition, FetchPartitionData]]:
        """Read the partitions; if fewer than `min_bytes` came back (and nothing failed), wait
        in the fetch purgatory until enough arrive or `max_wait_ms` passes, then read again.
        An incremental fetch also waits on its session's `idle` partitions, which it reads
        only once they change (the results then include them)."""
        results = await self._fetch_messages(params, fetch_infos, idle)
        stats = self.broker_topic_stats
        if stats is not None:
            stats.record_fetch(params.is_from_follower, results)
            if idle is not None:
                stats.record_idle_fetch(idle.count_by_topic())
        return results

    async def _fetch_messages(
        self,
        params: FetchParams,
        fetch_infos: list[tuple[TopicPartition, PartitionFetchInfo]],
        idle: IdlePartitions | None,
    ) -> list[tuple[TopicPartition, FetchPartitionData]]:
        results = self._read_from_local_log(params, fetch_infos)
        if params.is_from_follower:
            self._update_follower_fetch_state(params.replica_id, fetch_infos)
            self._record_leader_throttled(results)
        readable = 0
        errored = False
        for _, r in results:
            if r.records is not None:
                readable += len(r.records)
            if r.error_code != Errors.NONE or r.preferred_read_replica >= 0:
                errored = True  # (or redirected) answered at once
        if (
            params.max_wait_ms <= 0
            or (not fetch_infos and idle is None)
            or readable >= params.min_bytes
            or errored
        ):
            return results
        statuses = [
            (tp, FetchPartitionStatus(r.fetch_offset_metadata, info))
            for (tp, info), (_, r) in zip(fetch_infos, results, strict=True)
        ]
        future: asyncio.Future[list[tuple[TopicPartition, FetchPartitionData]]] = (
            asyncio.get_running_loop().create_future()
        )

        def complete() -> None:
            if idle is not None:
                idle.watch(None)
            if not future.done():
                infos = fetch_infos if idle is None else [*fetch_infos, *idle.take_changed()]
                results = self._read_from_local_log(params, infos)
                if params.is_from_follower:
                    self._record_leader_throttled(results)
                future.set_result(results)

        op = DelayedFetch(params, statuses, self._fetch_end_offset(params), complete, idle)
        keys: list[Hashable] = [tp for tp, _ in fetch_infos]
        if idle is not None:
            keys.append(idle.watch_key)
            idle.watch(self._idle_fetch_waker(idle.watch_key))
        self.delayed_fetch_purgatory.try_complete_else_watch(op, keys)
        return await future

    def _idle_fetch_waker(self, key: Hashable) -> Callable[[], None]:
        """Retries the fetches parked under `key` soon after a change of an idle partition
        (once however many change before it runs, and after the change has finished)."""
        loop = asyncio.get_running_loop()
        scheduled = False

        def check() -> None:
            nonlocal scheduled
            scheduled = False
            self.delayed_fetch_purgatory.check_and_complete(key)

        def wake() -> None:
            nonlocal scheduled
            if not scheduled:
                scheduled = True
                loop.call_soon(check)

        return wake

    def _fetch_end_offset(
        self, params: FetchParams
    ) -> Callable[[TopicPartition, PartitionFetchInfo], LogOffsetMetadata]:
        def end_offset(tp: TopicPartition, info: PartitionFetchInfo) -> LogOffsetMetadata:
            partition = self.get_partition_or_error(tp)
            log = partition.local_log_or_error(
                info.current_leader_epoch, params.fetch_only_from_leader
            )
            if params.fetch_only_committed:
                if params.isolation_level == READ_COMMITTED:
                    return partition.last_stable_offset_metadata
                return partition.high_watermark_metadata
            return log.log_end_offset_metadata

        return end_offset

    def _read_from_local_log(
        self, params: FetchParams, fetch_infos: Iterable[tuple[TopicPartition, PartitionFetchInfo]]
    ) -> list[tuple[TopicPartition, FetchPartitionData]]:
        limit = params.max_bytes
        min_one_message = True
        out: list[tuple[TopicPartition, FetchPartitionData]] = []
        racks = self._replica_racks(params)
        for tp, info in fetch_infos:
            result = self._read_partition(
                params, tp, info, min(info.max_bytes, limit), min_one_message, racks
            )
            size = 0 if result.records is None else len(result.records)
            if size > 0:
                min_one_message = False
            limit = max(0, limit - size)
            out.append((tp, result))
        return out

    def _read_partition(
        self,
        params: FetchParams,
        tp: TopicPartition,
        info: PartitionFetchInfo,
        max_bytes: int,
        min_one_message: bool,
        racks: Mapping[int, str | None] | None = None,
    ) -> FetchPartitionData:
        try:
            partition = self.get_partition_or_error(tp)
            if racks is not None:
                redirected = self._preferred_read_replica(params, partition, info, racks)
                if redirected is not None:
                    return redirected
            read = partition.read_records(
                info.fetch_offset, info.current_leader_epoch, max_bytes,
                params.fetch_only_from_leader, params.fetch_only_committed, min_one_message,
                params.isolation_level,
            )  # fmt: skip
        except KafkaError as e:
            hw = lso = lso_start = -1
            p = self.partitions.get(tp)
            if p is not None and p.log is not None:
                hw, lso = p.high_watermark, p.last_stable_offset
                lso_start = p.log.log_start_offset
            return FetchPartitionData(error_code_of(e), hw, lso, lso_start, None, None, error=e)
        except Exception as e:
            self.log.exception("Error processing fetch with max size %d from offset %d on partition %s",
                               max_bytes, info.fetch_offset, tp)  # fmt: skip
            return FetchPartitionData(-1, error=KafkaError(str(e)))
        records = read.info.records.buffer()
        if params.is_from_follower and self._should_leader_throttle(partition, params.replica_id):
            # Kafka's shouldLeaderThrottle: nothing until the rate is under the bound
            records = memoryview(b"")
        return FetchPartitionData(
            Errors.NONE,
            read.high_watermark,
            read.last_stable_offset,
            read.log_start_offset,
            records,
            _aborted_transactions(read.info.aborted_transactions),
            read.info.fetch_offset_metadata,
        )

    def _replica_racks(self, params: FetchParams) -> dict[int, str | None] | None:
        """broker id -> rack of the live brokers on the consumer's listener, when this
        fetch may be redirected to a preferred read replica (else None)."""
        client = params.client_metadata
        if self.replica_selector is None or client is None or params.is_from_follower:
            return None
        endpoints = self.metadata_cache.alive_endpoints(client.listener_name)
        return {broker_id: rack for broker_id, _, rack in endpoints}

    def _preferred_read_replica(
        self,
        params: FetchParams,
        partition: Partition,
        info: PartitionFetchInfo,
        racks: Mapping[int, str | None],
    ) -> FetchPartitionData | None:
        """Kafka's readFromLocalLog with a preferred read replica: the answer naming the
        follower the selector chose for this consumer (no records), or None to read here."""
        assert self.replica_selector is not None and params.client_metadata is not None
        preferred = find_preferred_read_replica(
            self.replica_selector, partition, params.client_metadata, racks,
            info.fetch_offset, self.time.milliseconds(),
        )  # fmt: skip
        if preferred is None:
            return None
        self.log.debug(
            "Replica selector %r returned preferred replica %d for %s",
            self.replica_selector, preferred, params.client_metadata,
        )  # fmt: skip
        log = partition.local_log_or_error(info.current_leader_epoch, False)
        return FetchPartitionData(
            Errors.NONE, partition.high_watermark, partition.last_stable_offset,
            log.log_start_offset, memoryview(b""), preferred_read_replica=preferred,
        )  # fmt: skip

    def _is_leader_throttled(self, partition: Partition) -> bool:
        log = partition.log
        return log is not None and throttled_by(
            log.config.leader_replication_throttled_replicas,
            partition.topic_partition,
            self.broker_id,
        )

    def _should_leader_throttle(self, partition: Partition, replica_id: int) -> bool:
        """A follower not in the ISR fetching a leader-throttled partition while the
        leader's replication rate is over its bound gets no records."""
        return (
            replica_id not in partition.isr
            and self._is_leader_throttled(partition)
            and self.leader_quota.is_quota_exceeded()
        )

    def _record_leader_throttled(
        self, results: Iterable[tuple[TopicPartition, FetchPartitionData]]
    ) -> None:
        size = 0
        for tp, r in results:
            partition = self.partitions.get(tp)
            if r.records and partition is not None and self._is_leader_throttled(partition):
                size += len(r.records)
        self.leader_quota.record(size)

    def _update_follower_fetch_state(
        self, replica_id: int, fetch_infos: Iterable[tuple[TopicPartition, PartitionFetchInfo]]
    ) -> None:
        for tp, info in fetch_infos:
            partition = self.partitions.get(tp)
            if partition is None:
                continue
            if partition.update_follower_fetch_state(
                replica_id, info.fetch_offset, info.log_start_offset
            ):
                self.complete_delayed_requests(tp)
            else:
                # the follower's log start offset may have moved the low watermark
                self.delayed_delete_records_purgatory.check_and_complete(tp)
            new_isr = partition.isr_to_expand(replica_id)
            if new_isr is not None:
                self.log.info(
                    "Expanding ISR for partition %s from %s to %s",
                    tp,
                    ",".join(map(str, partition.isr)),
                    ",".join(map(str, new_isr)),
                )
                self.submit_isr(partition, new_isr)

    # -- ISR ------------------------------------------------------------------------------

    def maybe_shrink_isr(self) -> None:
        """isr-expiration: drop followers not caught up for replica.lag.time.max.ms from
        the ISR of every partition this broker leads."""
        for tp, partition in list(self.partitions.items()):
            new_isr = partition.isr_to_shrink()
            if new_isr is None:
                continue
            self.log.info(
                "Shrinking ISR for partition %s from %s to %s. Leader: (highWatermark: %d, endOffset: %d). "
                "Out of sync replicas: %s.",
                tp, ",".join(map(str, partition.isr)), ",".join(map(str, new_isr)), partition.high_watermark,
                partition.log.log_end_offset if partition.log else -1,
                ",".join(map(str, sorted(set(partition.isr) - set(new_isr)))),
            )  # fmt: skip
            self.submit_isr(partition, new_isr)

    def submit_isr(self, partition: Partition, new_isr: list[int]) -> None:
        """Propose `new_isr` for a partition this broker leads: to the controller through
        AlterIsrManager, else to ZooKeeper through ZkIsrManager. The partition keeps it
        pending (no other change proposed) until the outcome is known."""
        if self.alter_isr_manager is None:
            self.isr_manager.submit(partition, new_isr)
            return
        partition.pending_isr = new_isr
        lai = LeaderAndIsr(
            self.broker_id, partition.leader_epoch, tuple(new_isr), partition.zk_version
        )
        item = AlterIsrItem(partition.topic_partition, lai,
                            lambda result: self._alter_isr_answered(partition, new_isr, result))  # fmt: skip
        if not self.alter_isr_manager.submit(item):
            # a change proposed before the last LeaderAndIsr reset the partition: stale
            self.alter_isr_manager.clear_pending(partition.topic_partition)
            self.alter_isr_manager.submit(item)

    def _alter_isr_answered(
        self, partition: Partition, proposed: list[int], result: AlterIsrResult
    ) -> None:
        """Kafka's Partition.handleAlterIsrResponse: ignored if the partition moved on;
        UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION give up
        (the change stays pending until the controller's next LeaderAndIsr); other errors
        propose it again; a state at this leader epoch and no older version is taken."""
        tp = partition.topic_partition
        if self.partitions.get(tp) is not partition or partition.pending_isr is not proposed:
            self.log.debug("Ignoring ISR update answer for %s: its ISR state changed meanwhile", tp)
            return
        if isinstance(result, int):
            if result in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.FENCED_LEADER_EPOCH,
                          Errors.INVALID_UPDATE_VERSION):  # fmt: skip
                self.log.debug("Failed to update ISR to %s for %s: %s. Giving up.",
                               proposed, tp, Errors(result).name)  # fmt: skip
                return
            self.log.warning("Failed to update ISR to %s for %s due to unexpected %s. Retrying.",
                             proposed, tp, result)  # fmt: skip
            self.submit_isr(partition, proposed)
            return
        if (
            result.leader_epoch != partition.leader_epoch
            or result.zk_version < partition.zk_version
        ):
            self.log.debug("Ignoring new ISR %s for %s: stale leader epoch or version", result, tp)
            return
        self._apply_isr(partition, list(result.isr), result.zk_version)
        self.log.info("ISR updated to %s and version updated to [%d] for %s",
                      ",".join(map(str, result.isr)), result.zk_version, tp)  # fmt: skip

    def _apply_isr(self, partition: Partition, new_isr: list[int], zk_version: int) -> None:
        before = len(partition.isr)
        partition.apply_isr(new_isr, zk_version)
        if len(new_isr) < before:
            self.isr_shrinks += 1
        elif len(new_isr) > before:
            self.isr_expands += 1
        self.complete_delayed_requests(partition.topic_partition)

    def _isr_updated(
        self, partition: Partition, epoch: int, new_isr: list[int], zk_version: int
    ) -> None:
        tp = partition.topic_partition
        if (
            self.partitions.get(tp) is not partition
            or not partition.is_leader
            or partition.leader_epoch != epoch
        ):
            return  # leadership moved while the write was in flight
        self.record_isr_change(tp)
        self._apply_isr(partition, new_isr, zk_version)

    # ZkIsrManager's change propagation, under the names other modules and tests use

    def record_isr_change(self, tp: TopicPartition) -> None:
        self.isr_manager.record_isr_change(tp)

    def should_propagate_isr_changes(self, now_ms: int) -> bool:
        return self.isr_manager.should_propagate_isr_changes(now_ms)

    async def maybe_propagate_isr_changes(self) -> None:
        await self.isr_manager.maybe_propagate_isr_changes()

    @property
    def isr_change_set(self) -> set[TopicPartition]:
        return self.isr_manager.isr_change_set

    @property
    def last_isr_change_ms(self) -> int:
        return self.isr_manager.last_isr_change_ms

    @property
    def isr_change_propagation_blackout_ms(self) -> int:
        return self.isr_manager.blackout_ms

    @property
    def isr_change_propagation_max_interval_ms(self) -> int:
        return self.isr_manager.max_interval_ms

    @property
    def isr_change_propagation_check_ms(self) -> int:
        return self.isr_manager.check_ms

    # -- offsets --------------------------------------------------------------------------

    def fetch_offset_for_timestamp(
        self,
        tp: TopicPartition,
        timestamp: int,
        isolation_level: int | None,
        current_leader_epoch: int,
        fetch_only_from_leader: bool,
    ) -> TimestampAndOffset | None:
        partition = self.get_partition_or_error(tp)
        return partition.fetch_offset_for_timestamp(
            timestamp, isolation_level, current_leader_epoch, fetch_only_from_leader
        )

    def last_offset_for_leader_epoch(
        self,
        tp: TopicPartition,
        current_leader_epoch: int,
        leader_epoch: int,
        fetch_only_from_leader: bool = True,
    ) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch."""
        partition = self.get_partition_or_error(tp)
        return partition.last_offset_for_leader_epoch(
            current_leader_epoch, leader_epoch, fetch_only_from_leader
        )

    async def delete_records(
        self, timeout_ms: int, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int]]:
        """DeleteRecords on the partitions this broker leads: tp -> (low watermark, error
        code), once every live replica moved its log start (delayed_delete_records.py)."""
        return await delete_records_on_leaders(self, timeout_ms, offsets)

    def broker_alive(self, broker_id: int) -> bool:
        """Whether `broker_id` is alive in the metadata cache."""
        return self.metadata_cache.get_alive_broker(broker_id) is not None


def _aborted_transactions(aborted: list[AbortedTxn] | None) -> list[dict[str, int]] | None:
    """A read_committed fetch's aborted transactions as Fetch v4+ lists them (None: not
    read_committed)."""
    if aborted is None:
        return None
    return [{"producer_id": t.producer_id, "first_offset": t.first_offset} for t in aborted]


# how long LeaderAndIsr's work holds the event loop before it lets other work run
_STATE_CHANGE_SLICE_S = 0.005
