"""ReplicaFetcherThread: one follower's fetch loop against one leader (Kafka's ReplicaFetcherThread).

An asyncio task per (leader, fetcher id). For each partition it was given it first
truncates the local log to where it agrees with the leader — OffsetForLeaderEpoch for
the latest local epoch, or the high watermark when there is no epoch to ask about or the
leader cannot answer — then fetches from the local log end offset with Fetch (replica id
= this broker's id), appends the batches as they are (offsets kept) and takes the
leader's high watermark. OFFSET_OUT_OF_RANGE is handled as Kafka does: a follower ahead
of the leader truncates to the leader's end; one behind the leader's log start offset
empties its log and starts there. A partition that fails (fenced epoch, not leader,
errors) is retried after replica.fetch.backoff.ms; a lost connection is reopened after
the same back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kafpy.client.fetch_session_handler import FetchSessionHandler
from kafpy.common.errors import KafkaError
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF
from kafpy.server.replication_quota_manager import ReplicationQuotaManager, throttled_by

if TYPE_CHECKING:
    from kafpy.client.client_security import ClientSecurity
    from kafpy.cluster.partition import Partition

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
# OffsetsForLeaderEpoch answers after which the follower asks again later
_RETRIABLE_EPOCH_ERRORS = (
    Errors.FENCED_LEADER_EPOCH,
    Errors.UNKNOWN_LEADER_EPOCH,
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
)


class FetcherChannel(Protocol):
    """What the fetcher needs of a connection to the leader (a BrokerConnection fits)."""

    async def connect(self) -> None: ...

    async def send(
        self,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]: ...

    def close(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class BrokerEndPoint:
    """The leader a fetcher fetches from."""

    id: int
    host: str
    port: int


_default = KAFKA_CONFIG_DEF.default


@dataclass(frozen=True, slots=True)
class ReplicaFetcherConfig:
    """The replica.* settings of the fetchers, with Kafka's defaults."""

    num_replica_fetchers: int = _default("num.replica.fetchers")
    fetch_max_bytes: int = _default("replica.fetch.max.bytes")  # per partition
    fetch_response_max_bytes: int = _default("replica.fetch.response.max.bytes")
    fetch_wait_max_ms: int = _default("replica.fetch.wait.max.ms")
    fetch_min_bytes: int = _default("replica.fetch.min.bytes")
    fetch_backoff_ms: int = _default("replica.fetch.backoff.ms")
    socket_timeout_ms: int = _default("replica.socket.timeout.ms")
    security: ClientSecurity | None = None  # the inter-broker listener's protocol and TLS


@dataclass(slots=True)
class PartitionFetchState:
    """Where a partition's fetching stands: its next offset, the leader epoch it follows,
    whether it must truncate first, and until when it backs off (loop time, s)."""

    fetch_offset: int
    current_leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0
    # the leader's high watermark minus the next fetch offset after the last fetch (Kafka's
    # PartitionFetchState.lag); None before the first
    lag: int | None = None

    @property
    def is_replica_in_sync(self) -> bool:
        return self.lag is not None and self.lag <= 0


class ReplicaFetcherThread:
    """Fetches the partitions this broker follows from one leader, in one asyncio task.

    `partition_of(tp)` gives the local Partition (None once it is gone); `on_appended(tp)`
    is called after each append (the ReplicaManager wakes what waits on the partition);
    `connect(endpoint)` makes the channel to the leader.
    """

    def __init__(
        self,
        name: str,
        fetcher_id: int,
        broker_id: int,
        source: BrokerEndPoint,
        config: ReplicaFetcherConfig,
        partition_of: Callable[[TopicPartition], Partition | None],
        connect: Callable[[BrokerEndPoint], FetcherChannel],
        on_appended: Callable[[TopicPartition], None] = lambda tp: None,
        quota: ReplicationQuotaManager | None = None,
    ) -> None:
        self.name = name
        self.quota = quota or ReplicationQuotaManager("Follower")
        self.fetcher_id = fetcher_id
        self.broker_id = broker_id
        self.source = source
        self.config = config
        self._partition_of = partition_of
        self._connect = connect
        self._on_appended = on_appended
        self.partition_states: dict[TopicPartition, PartitionFetchState] = {}
        self._channel: FetcherChannel | None = None
        # the incremental fetch session with the leader (KIP-227), as Kafka's fetcher keeps
        self.fetch_session = FetchSessionHandler(
            source.id, f"ReplicaFetcher replicaId={broker_id}, leaderId={source.id}, "
            f"fetcherId={fetcher_id}",
        )  # fmt: skip
        self._task: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()
        self._running = False
        self.log = component_logger(
            "kafpy.server.ReplicaFetcherThread",
            f"ReplicaFetcher replicaId={broker_id}, leaderId={source.id}, fetcherId={fetcher_id}",
        )

    # -- partitions -----------------------------------------------------------------------

    def add_partitions(self, states: Mapping[TopicPartition, tuple[int, int]]) -> None:
        """Start fetching `tp -> (initial fetch offset, leader epoch)`, truncating first."""
        for tp, (offset, epoch) in states.items():
            self.partition_states[tp] = PartitionFetchState(offset, epoch)
        self.log.info(
            "Added fetcher to broker %d for partitions %s", self.source.id, sorted(map(str, states))
        )
        self._wakeup.set()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            if self.partition_states.pop(tp, None) is not None:
                self.log.info("Removed fetcher for partition %s", tp)

    @property
    def partition_count(self) -> int:
        return len(self.partition_states)

    @property
    def is_running(self) -> bool:
        """False once `shutdown` has begun: such a fetcher never fetches again."""
        return self._running

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._running = True
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def shutdown(self) -> None:
        self._running = False
        self._wakeup.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self._close_channel()
        self.log.info("Shutdown completed")

    def _close_channel(self) -> None:
        if self._channel is not None:
            with contextlib.suppress(Exception):
                self._channel.close()
            self._channel = None

    async def _backoff(self) -> None:
        self._wakeup.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), self.config.fetch_backoff_ms / 1000)

    async def _channel_or_connect(self) -> FetcherChannel:
        if self._channel is None:
            channel = self._connect(self.source)
            await channel.connect()
            self._channel = channel
        return self._channel

    async def _run(self) -> None:
        self.log.info("Starting")
        while self._running:
            try:
                if not self.partition_states:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                await self.do_work()
            except asyncio.CancelledError:
                raise
            except (KafkaError, OSError) as e:
                self.log.warning(
                    "Error in fetch from broker %d: %s; retrying after back-off", self.source.id, e
                )
                self._close_channel()
                await self._backoff()
            except Exception:
                self.log.exception("Unexpected error in fetch from broker %d", self.source.id)
                self._close_channel()
                await self._backoff()

    async def do_work(self) -> None:
        """One round: truncate the partitions that need it, then one Fetch for the others."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        to_truncate = {
            tp: s
            for tp, s in self.partition_states.items()
            if s.truncating and s.delayed_until <= now
        }
        if to_truncate:
            await self._truncate(to_truncate)
        ready = {
            tp: s
            for tp, s in self.partition_states.items()
            if not s.truncating and s.delayed_until <= now
        }
        if not ready:
            await self._backoff_until_ready()
            return
        await self._fetch(ready)

    async def _backoff_until_ready(self) -> None:
        now = asyncio.get_running_loop().time()
        wait = min((s.delayed_until for s in self.partition_states.values()), default=now) - now
        self._wakeup.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(
                self._wakeup.wait(), max(0.01, min(wait, self.config.fetch_backoff_ms / 1000))
            )

    def _delay(self, tp: TopicPartition) -> None:
        state = self.partition_states.get(tp)
        if state is not None:
            state.delayed_until = (
                asyncio.get_running_loop().time() + self.config.fetch_backoff_ms / 1000
            )

    # -- truncation -----------------------------------------------------------------------

    async def _truncate(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        by_epoch: dict[TopicPartition, tuple[PartitionFetchState, Partition, int]] = {}
        for tp, state in states.items():
            partition = self._partition_of(tp)
            if partition is None or partition.log is None:
                self.partition_states.pop(tp, None)
                continue
            epoch = partition.latest_epoch
            if epoch == UNDEFINED_EPOCH:
                self._truncate_to(tp, state, partition, partition.high_watermark, "no leader epoch")
            else:
                by_epoch[tp] = (state, partition, epoch)
        if not by_epoch:
            return
        topics: dict[str, list[dict[str, int]]] = {}
        for tp, (state, _, epoch) in by_epoch.items():
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": state.current_leader_epoch,
                    "leader_epoch": epoch,
                }
            )
        channel = await self._channel_or_connect()
        response = await channel.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, {
            "replica_id": self.broker_id,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        })  # fmt: skip
        answers = {
            TopicPartition(t["topic"], p["partition"]): p
            for t in response["topics"]
            for p in t["partitions"]
        }
        for tp, (requested_state, partition, epoch) in by_epoch.items():
            if (
                self.partition_states.get(tp) is not requested_state
                or self._partition_of(tp) is not partition
            ):
                continue  # removed or re-added while we waited
            state = requested_state
            answer = answers.get(tp)
            if answer is None:
                self._delay(tp)
                continue
            error = answer["error_code"]
            if error in _RETRIABLE_EPOCH_ERRORS:
                self.log.info(
                    "Retrying leader epoch request for partition %s as the leader reported error %d",
                    tp,
                    error,
                )
                self._delay(tp)
                continue
            if error != Errors.NONE or answer["end_offset"] == UNDEFINED_EPOCH_OFFSET:
                self._truncate_to(tp, state, partition, partition.high_watermark,
                                  f"the leader could not answer for epoch {epoch}")  # fmt: skip
                continue
            leader_epoch, leader_end = answer["leader_epoch"], answer["end_offset"]
            target = leader_end
            if leader_epoch != epoch:
                # the leader knows an older epoch only: cut where our copy of it ends too
                local_epoch, local_end = partition.end_offset_for_epoch(leader_epoch)
                if local_epoch == leader_epoch and local_end >= 0:
                    target = min(target, local_end)
            self._truncate_to(
                tp, state, partition, target, f"leader epoch {leader_epoch} ends at {leader_end}"
            )

    def _truncate_to(
        self,
        tp: TopicPartition,
        state: PartitionFetchState,
        partition: Partition,
        offset: int,
        why: str,
    ) -> None:
        log = partition.log
        assert log is not None
        target = max(0, min(offset, log.log_end_offset))
        if target < log.log_end_offset:
            self.log.info("Truncating partition %s to local offset %d (%s)", tp, target, why)
            partition.truncate_to(target)
        state.fetch_offset = log.log_end_offset
        state.truncating = False
        state.delayed_until = 0.0

    # -- fetch ----------------------------------------------------------------------------

    async def _fetch(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        requested: dict[TopicPartition, tuple[PartitionFetchState, int]] = {}
        builder = self.fetch_session.new_builder()
        exceeded = self.quota.is_quota_exceeded()
        throttled: set[TopicPartition] = set()
        for tp, state in states.items():
            partition = self._partition_of(tp)
            if partition is None or partition.log is None:
                self.partition_states.pop(tp, None)
                continue
            if not state.is_replica_in_sync and throttled_by(
                partition.log.config.follower_replication_throttled_replicas, tp, self.broker_id
            ):
                if exceeded:
                    continue  # Kafka's shouldFollowerThrottle: skipped until under the bound
                throttled.add(tp)
            requested[tp] = (state, state.fetch_offset)
            builder.add(tp, {
                "current_leader_epoch": state.current_leader_epoch,
                "fetch_offset": state.fetch_offset,
                "log_start_offset": partition.log.log_start_offset,
                "partition_max_bytes": self.config.fetch_max_bytes,
            })  # fmt: skip
        fetch_data = builder.build()
        if not fetch_data.session_partitions and not fetch_data.to_forget:
            if states:  # every partition throttled: wait for the rate to fall
                await asyncio.sleep(self.config.fetch_backoff_ms / 1000)
            return
        channel = await self._channel_or_connect()
        try:
            response = await channel.send(ApiKey.FETCH, {
                "replica_id": self.broker_id,
                "max_wait_ms": self.config.fetch_wait_max_ms,
                "min_bytes": self.config.fetch_min_bytes,
                "max_bytes": self.config.fetch_response_max_bytes,
                "isolation_level": 0,
                **fetch_data.request_fields(),
                "rack_id": "",
            }, timeout_ms=self.config.socket_timeout_ms + self.config.fetch_wait_max_ms)  # fmt: skip
        except BaseException as e:
            self.fetch_session.handle_error(e)
            raise
        error = response.get("error_code", Errors.NONE)
        if not self.fetch_session.handle_response(response):
            if error not in (Errors.FETCH_SESSION_ID_NOT_FOUND, Errors.INVALID_FETCH_SESSION_EPOCH):
                self.log.warning("Fetch from broker %d failed with error %d", self.source.id, error)
                for tp in requested:
                    self._delay(tp)
            return  # a session error: the next fetch is a full one, at once
        throttled_bytes = 0
        for t in response["responses"]:
            for p in t["partitions"]:
                tp = TopicPartition(t["topic"], p["partition_index"])
                entry = requested.get(tp)
                if entry is None:
                    continue
                if tp in throttled and p.get("records"):
                    throttled_bytes += len(p["records"])
                requested_state, offset = entry
                # the partition moved on (removed, re-added, truncating) while we waited
                if (
                    self.partition_states.get(tp) is not requested_state
                    or requested_state.truncating
                    or requested_state.fetch_offset != offset
                ):
                    continue
                await self._process_partition(tp, requested_state, p)
        self.quota.record(throttled_bytes)

    async def _process_partition(
        self, tp: TopicPartition, state: PartitionFetchState, data: dict[str, Any]
    ) -> None:
        partition = self._partition_of(tp)
        if partition is None or partition.log is None or partition.is_leader:
            self.partition_states.pop(tp, None)
            return
        error = data["error_code"]
        if error == Errors.NONE:
            records = data.get("records")
            try:
                appended = False
                if records:
                    info = partition.append_records_to_follower(MemoryRecords(records))
                    appended = info.shallow_count > 0
                state.fetch_offset = partition.log.log_end_offset
                state.lag = max(0, int(data["high_watermark"]) - state.fetch_offset)
                # a new high watermark lets consumers fetching from this follower (KIP-392)
                # read further: wake their delayed fetches, as Kafka's fetcher does
                if partition.update_follower_high_watermark(data["high_watermark"]) or appended:
                    self._on_appended(tp)
                # the leader's DeleteRecords (or retention) reaches this copy; the next
                # Fetch reports the new start, which lets the leader's low watermark move
                partition.maybe_increment_follower_log_start_offset(
                    data.get("log_start_offset", -1)
                )
            except KafkaError as e:
                self.log.error(
                    "Error appending the fetched data of partition %s at offset %d: %s",
                    tp,
                    state.fetch_offset,
                    e,
                )
                self._delay(tp)
        elif error == Errors.OFFSET_OUT_OF_RANGE:
            await self._handle_offset_out_of_range(tp, state, partition)
        else:
            self.log.info(
                "Partition %s fetch from broker %d got error %d; retrying after back-off",
                tp,
                self.source.id,
                error,
            )
            self._delay(tp)

    async def _handle_offset_out_of_range(
        self, tp: TopicPartition, state: PartitionFetchState, partition: Partition
    ) -> None:
        log = partition.log
        assert log is not None
        leader_end = await self._leader_offset(tp, state, LATEST_TIMESTAMP)
        if leader_end is None:
            self._delay(tp)
            return
        if leader_end < log.log_end_offset:
            self.log.warning(
                "Reset fetch offset for partition %s from %d to current leader %d's latest offset %d",
                tp,
                log.log_end_offset,
                self.source.id,
                leader_end,
            )
            partition.truncate_to(leader_end)
            state.fetch_offset = log.log_end_offset
            return
        leader_start = await self._leader_offset(tp, state, EARLIEST_TIMESTAMP)
        if leader_start is None:
            self._delay(tp)
            return
        if leader_start > log.log_end_offset:
            self.log.warning(
                "Reset fetch offset for partition %s from %d to current leader %d's start offset %d",
                tp,
                log.log_end_offset,
                self.source.id,
                leader_start,
            )
            partition.truncate_fully_and_start_at(leader_start)
        state.fetch_offset = log.log_end_offset

    async def _leader_offset(
        self, tp: TopicPartition, state: PartitionFetchState, timestamp: int
    ) -> int | None:
        channel = await self._channel_or_connect()
        response = await channel.send(ApiKey.LIST_OFFSETS, {
            "replica_id": self.broker_id,
            "isolation_level": 0,
            "topics": [{"name": tp.topic, "partitions": [{
                "partition_index": tp.partition,
                "current_leader_epoch": state.current_leader_epoch,
                "timestamp": timestamp,
            }]}],
        })  # fmt: skip
        for t in response["topics"]:
            for p in t["partitions"]:
                if p["partition_index"] == tp.partition and p["error_code"] == Errors.NONE:
                    offset: int = p["offset"]
                    return offset
        return None
