"""Partition: one partition as this broker hosts it (Kafka's cluster.Partition).

It holds what the controller said about the partition (leader, leader epoch, assigned
replicas, ISR, controller epoch, zk version), the local log with its leader-epoch
cache, and, when this broker leads, the high watermark and what it knows of each
follower's log end offset. Appends and reads by clients go through it so that the
leadership and epoch checks sit in one place.

As a leader it tracks each follower's log end offset (the offset of its latest Fetch),
its log start offset (reported in Fetch v5+; their minimum with the leader's own is the
low watermark DeleteRecords waits for) and the last time it was caught up, moves the high watermark to the smallest log end
offset over the ISR (never backwards), and decides when the ISR should expand (a
follower reached the high watermark) or shrink (a follower not caught up for
replica.lag.time.max.ms); ReplicaManager writes those ISR changes to ZooKeeper. As a
follower it appends the leader's batches with their offsets, records the leader epochs
they carry, takes the leader's high watermark and truncates where the fetcher says.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.cluster.replication_config import REPLICA_LAG_TIME_MAX_MS, REPLICATION_CONFIG_DEF
from kafpy.common.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownLeaderEpochError,
)
from kafpy.common.logger import component_logger
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import H_BASE_OFFSET, H_LEADER_EPOCH, iter_headers
from kafpy.storage.leader_epoch_file_cache import LeaderEpochFileCache
from kafpy.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Log
from kafpy.storage.log_append_info import FetchDataInfo, LogAppendInfo, LogOffsetMetadata
from kafpy.storage.log_manager import LogManager
from kafpy.storage.producer_state_manager import AppendOrigin

NO_TIMESTAMP = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(slots=True)
class RemoteReplica:
    """What the leader knows of a follower: its log end and start offsets (-1 until its
    first Fetch to this leader) and when it last caught up."""

    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_caught_up_time_ms: int = 0
    # the leader's log end offset and the time at this follower's previous fetch: a fetch
    # reaching that offset proves the follower was caught up then (Kafka's rule)
    last_fetch_leader_log_end_offset: int = -1
    last_fetch_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class LogReadResult:
    """One partition's part of a fetch: the stored bytes and the offsets to report with them."""

    info: FetchDataInfo
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int


class Partition:
    """One partition hosted on this broker: leadership state, ISR, high watermark and log."""

    def __init__(
        self,
        tp: TopicPartition,
        local_broker_id: int,
        log_manager: LogManager,
        time: Time,
        high_watermark_checkpoint: Callable[[TopicPartition, Log], int | None] = lambda tp, log: (
            None
        ),
        replica_lag_time_max_ms: int = REPLICATION_CONFIG_DEF.default(REPLICA_LAG_TIME_MAX_MS),
        change_listener: Callable[[TopicPartition], None] | None = None,
    ) -> None:
        self.topic_partition = tp
        # told (with the partition) of every change a fetch may answer differently after:
        # an append, a truncation, the high watermark, the log start offset, the leader or
        # its epoch, the log replaced or dropped (ReplicaManager.partition_changed)
        self.change_listener = change_listener
        self.local_broker_id = local_broker_id
        self.log_manager = log_manager
        self.time = time
        self._hw_checkpoint = high_watermark_checkpoint
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.leader_replica_id: int | None = None
        self.leader_epoch = -1
        self.leader_epoch_start_offset: int | None = None
        self.controller_epoch = -1
        self.zk_version = -1
        self.assigned_replicas: list[int] = []
        self.isr: list[int] = []
        self.remote_replicas: dict[int, RemoteReplica] = {}
        self.log: Log | None = None
        self.leader_epoch_cache: LeaderEpochFileCache | None = None
        self._hw = LogOffsetMetadata(0)
        # an ISR change being written to ZooKeeper (no second one until it is answered)
        self.pending_isr: list[int] | None = None
        self.log_ident = component_logger(
            "kafpy.cluster.Partition", f"Partition {tp} broker={local_broker_id}"
        )

    def __repr__(self) -> str:
        return (
            f"Partition(topicPartition={self.topic_partition}, leader={self.leader_replica_id}, "
            f"leaderEpoch={self.leader_epoch}, replicas={self.assigned_replicas}, isr={self.isr})"
        )

    # -- state ----------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_replica_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self._hw.message_offset

    @property
    def high_watermark_metadata(self) -> LogOffsetMetadata:
        return self._hw

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first offset of the oldest ongoing transaction, capped at the high
        watermark; read_committed consumers read below it (Kafka's Log.lastStableOffset)."""
        return self.last_stable_offset_metadata.message_offset

    @property
    def last_stable_offset_metadata(self) -> LogOffsetMetadata:
        """The LSO with its segment position when it is the high watermark (a delayed
        read_committed fetch completes when it moves)."""
        hw = self._hw
        if self.log is None:
            return hw
        first_unstable = self.log.producer_state_manager.first_unstable_offset()
        if first_unstable is None or first_unstable >= hw.message_offset:
            return hw
        return LogOffsetMetadata(first_unstable)

    def create_log_if_not_exists(self) -> Log:
        """The local log, created through LogManager (least-loaded dir) if missing, with its
        leader-epoch cache and the high watermark from replication-offset-checkpoint."""
        if self.log is not None:
            return self.log
        log = self.log_manager.get_log(self.topic_partition)
        if log is None:
            log = self.log_manager.create_log(self.topic_partition)
        self._adopt_log(log)
        checkpointed = self._hw_checkpoint(self.topic_partition, log)
        if checkpointed is None:
            self.log_ident.info(
                "No checkpointed highwatermark is found for partition %s", self.topic_partition
            )
            checkpointed = 0
        hw = min(max(checkpointed, log.log_start_offset), log.log_end_offset)
        self._set_hw(hw)
        return log

    def replace_current_log(self, new: Log) -> None:
        """Serve from `new`, the future log that just replaced the current one (a move
        between log dirs), keeping the high watermark (Kafka's
        maybeReplaceCurrentWithFutureReplica)."""
        hw = self.high_watermark
        if self.log is not None:
            self.log.change_listener = None
        self._adopt_log(new)
        self._set_hw(hw)

    def _adopt_log(self, log: Log) -> None:
        self.log = log
        self.leader_epoch_cache = LeaderEpochFileCache(self.topic_partition, lambda: log.dir)
        log.change_listener = self._changed

    def _changed(self) -> None:
        listener = self.change_listener
        if listener is not None:
            listener(self.topic_partition)

    def check_or_set_topic_id(self, topic_id: uuid.UUID | None) -> bool:
        """Whether a LeaderAndIsr request's topic id (KIP-516) fits this replica's log; a log
        without an id takes it (and writes partition.metadata). No id in the request (before
        v5, or a controller without ids) or no log yet: nothing to check."""
        if topic_id is None:
            return True
        log = self.log or self.log_manager.get_log(self.topic_partition)
        if log is None:
            return True
        if log.topic_id is None:
            log.assign_topic_id(topic_id)
            return True
        return log.topic_id == topic_id

    def _set_hw(self, offset: int) -> None:
        assert self.log is not None
        if offset >= self.log.log_end_offset:
            self._hw = self.log.log_end_offset_metadata
        else:
            self._hw = LogOffsetMetadata(offset)
        self._changed()

    def _update_assignment_and_isr(self, replicas: list[int], isr: list[int]) -> None:
        self.assigned_replicas = list(replicas)
        self.isr = list(isr)
        remote = {r for r in replicas if r != self.local_broker_id}
        self.remote_replicas = {
            r: self.remote_replicas.get(r, RemoteReplica(r)) for r in replicas if r in remote
        }

    def make_leader(self, state: Mapping[str, Any]) -> tuple[bool, bool]:
        """Become leader as the LeaderAndIsr partition state says.

        Records the new epoch's start offset (the log end offset) in the leader-epoch
        cache. Returns (became leader now, high watermark moved).
        """
        self.controller_epoch = state["controller_epoch"]
        self._update_assignment_and_isr(state["replicas"], state["isr"])
        log = self.create_log_if_not_exists()
        start = log.log_end_offset
        self.leader_epoch = state["leader_epoch"]
        self.leader_epoch_start_offset = start
        self.zk_version = state["zk_version"]
        assert self.leader_epoch_cache is not None
        if self.leader_epoch >= 0:
            self.leader_epoch_cache.assign(self.leader_epoch, start)
        is_new_leader = not self.is_leader
        self.pending_isr = None
        now = self.time.milliseconds()
        for replica in self.remote_replicas.values():
            if is_new_leader:
                replica.log_end_offset = -1
                replica.log_start_offset = -1
                replica.last_fetch_leader_log_end_offset = -1
            # at every new epoch, as Kafka's makeLeader: a replica the controller took out
            # of the ISR (a stopped broker) no longer counts as caught up, so it cannot hold
            # the high watermark back until replica.lag.time.max.ms has passed
            replica.last_caught_up_time_ms = now if replica.broker_id in self.isr else 0
        if is_new_leader:
            self.leader_replica_id = self.local_broker_id
        self._changed()
        self.log_ident.info(
            "%s starts at leader epoch %d from offset %d with high watermark %d.",
            self.topic_partition,
            self.leader_epoch,
            start,
            self.high_watermark,
        )
        return is_new_leader, self.maybe_increment_leader_hw()

    def make_follower(self, state: Mapping[str, Any]) -> bool:
        """Become a follower of `state["leader"]`; True if the leader or epoch changed."""
        new_leader = state["leader"]
        old_epoch = self.leader_epoch
        self.controller_epoch = state["controller_epoch"]
        # a follower does not manage the ISR (Kafka empties it); keep none
        self._update_assignment_and_isr(state["replicas"], [])
        self.pending_isr = None
        self.create_log_if_not_exists()
        self.leader_epoch = state["leader_epoch"]
        self.leader_epoch_start_offset = None
        self.zk_version = state["zk_version"]
        self._changed()  # leadership, or the epoch a fetch is checked against
        if self.leader_replica_id == new_leader and self.leader_epoch == old_epoch:
            return False
        self.leader_replica_id = new_leader
        return True

    def maybe_increment_leader_hw(self) -> bool:
        """Move the high watermark to the smallest log end offset over the ISR (and
        followers caught up within replica.lag.time.max.ms); True if it moved."""
        if self.log is None or not self.is_leader:
            return False
        now = self.time.milliseconds()
        new_hw = self.log.log_end_offset
        for replica in self.remote_replicas.values():
            if replica.broker_id in self.isr or (
                now - replica.last_caught_up_time_ms <= self.replica_lag_time_max_ms
            ):
                new_hw = min(new_hw, max(replica.log_end_offset, 0))
        if new_hw > self._hw.message_offset or (
            new_hw == self._hw.message_offset
            and new_hw == self.log.log_end_offset
            and self._hw.message_offset_only
        ):
            self._set_hw(new_hw)
            return True
        return False

    # -- checks ---------------------------------------------------------------------------

    def _check_current_leader_epoch(self, requested: int) -> None:
        if requested == -1 or requested == self.leader_epoch:
            return
        if requested < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"The leader epoch {requested} in the request for {self.topic_partition} is older "
                f"than the current leader epoch {self.leader_epoch}; refresh metadata and retry."
            )
        raise UnknownLeaderEpochError(
            f"The leader epoch {requested} in the request for {self.topic_partition} is newer than "
            f"the current leader epoch {self.leader_epoch} this broker knows; retry later."
        )

    def local_log_or_error(self, current_leader_epoch: int, require_leader: bool) -> Log:
        """The local log after checking the request's epoch and (if asked) leadership."""
        self._check_current_leader_epoch(current_leader_epoch)
        if require_leader and not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"Leader not local for partition {self.topic_partition} on broker {self.local_broker_id}"
            )
        if self.log is None:
            raise NotLeaderOrFollowerError(
                f"Log for partition {self.topic_partition} is not available on broker {self.local_broker_id}"
            )
        return self.log

    # -- produce --------------------------------------------------------------------------

    def append_records_to_leader(
        self,
        records: MemoryRecords,
        required_acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Append a producer's batches as leader (or a coordinator's: transaction markers,
        group records, with `origin` COORDINATOR); raises NotLeaderOrFollowerError when this
        broker does not lead, NotEnoughReplicasError for acks=-1 below min.insync.replicas,
        and whatever the log's validation raises."""
        if not self.is_leader or self.log is None:
            raise NotLeaderOrFollowerError(
                f"Leader not local for partition {self.topic_partition} on broker {self.local_broker_id}"
            )
        log = self.log
        min_isr = log.config.min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr "
                f"requirement of {min_isr} for partition {self.topic_partition}"
            )
        info = log.append_as_leader(
            records, self.leader_epoch, is_from_client=origin is AppendOrigin.CLIENT
        )
        if not self.maybe_increment_leader_hw():
            self._changed()  # the log end offset moved (and perhaps the LSO)
        return info

    # -- fetch ----------------------------------------------------------------------------

    def read_records(
        self,
        fetch_offset: int,
        current_leader_epoch: int,
        max_bytes: int,
        fetch_only_from_leader: bool,
        fetch_only_committed: bool,
        min_one_message: bool,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> LogReadResult:
        """Read from `fetch_offset`: consumers up to the high watermark (read_committed
        ones up to the LSO, with the aborted transactions of the range read), followers
        to the end.

        Raises OffsetOutOfRangeError outside [log start offset, log end offset].
        """
        log = self.local_log_or_error(current_leader_epoch, fetch_only_from_leader)
        # take the offsets before reading, so that a concurrent append is not reported
        hw = self.high_watermark
        lso = self.last_stable_offset
        leo = log.log_end_offset
        read_committed = fetch_only_committed and isolation_level == READ_COMMITTED
        if not fetch_only_committed:
            max_offset: int | None = None
        else:
            max_offset = lso if read_committed else hw
        info = log.read(fetch_offset, max_bytes, max_offset, min_one_message, read_committed)
        return LogReadResult(info, hw, log.log_start_offset, leo, lso)

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, log_start_offset: int = -1
    ) -> bool:
        """Record a follower's fetch position (its log end offset) and log start offset
        (Fetch v5+); True if the HW moved.

        The follower was caught up now if it fetched from the leader's log end offset, or
        at its previous fetch if it now reached the log end offset the leader had then.
        """
        replica = self.remote_replicas.get(replica_id)
        if replica is None or self.log is None or not self.is_leader:
            return False
        now = self.time.milliseconds()
        leader_leo = self.log.log_end_offset
        if fetch_offset >= leader_leo:
            replica.last_caught_up_time_ms = now
        elif fetch_offset >= replica.last_fetch_leader_log_end_offset >= 0:
            replica.last_caught_up_time_ms = max(
                replica.last_caught_up_time_ms, replica.last_fetch_time_ms
            )
        replica.log_end_offset = fetch_offset
        replica.log_start_offset = log_start_offset
        replica.last_fetch_leader_log_end_offset = leader_leo
        replica.last_fetch_time_ms = now
        return self.maybe_increment_leader_hw()

    # -- ISR ------------------------------------------------------------------------------

    def isr_to_expand(self, replica_id: int) -> list[int] | None:
        """The ISR with `replica_id` added if that follower caught up to the high watermark
        (and to the start of this leader epoch); None if nothing should change."""
        replica = self.remote_replicas.get(replica_id)
        if (
            replica is None
            or not self.is_leader
            or self.pending_isr is not None
            or replica_id in self.isr
            or replica_id not in self.assigned_replicas
        ):
            return None
        epoch_start = self.leader_epoch_start_offset or 0
        if replica.log_end_offset >= self.high_watermark and replica.log_end_offset >= epoch_start:
            return sorted(set(self.isr) | {replica_id})
        return None

    def out_of_sync_replicas(self, max_lag_ms: int | None = None) -> list[int]:
        """Followers in the ISR that have not caught up for `max_lag_ms`
        (default replica.lag.time.max.ms); the leader is never one of them."""
        if not self.is_leader or self.log is None:
            return []
        lag = self.replica_lag_time_max_ms if max_lag_ms is None else max_lag_ms
        now = self.time.milliseconds()
        leo = self.log.log_end_offset
        out = []
        for r in self.isr:
            replica = self.remote_replicas.get(r)
            if replica is None:
                continue
            if replica.log_end_offset < leo and now - replica.last_caught_up_time_ms > lag:
                out.append(r)
        return out

    def isr_to_shrink(self) -> list[int] | None:
        """The ISR without its out-of-sync followers, or None if it should not change."""
        if self.pending_isr is not None:
            return None
        out = self.out_of_sync_replicas()
        if not out:
            return None
        return [r for r in self.isr if r not in out]

    def apply_isr(self, isr: list[int], zk_version: int) -> bool:
        """Take the ISR that was written to ZooKeeper at `zk_version`; True if the HW moved
        (a shrink may let it advance)."""
        self.isr = list(isr)
        self.zk_version = zk_version
        self.pending_isr = None
        return self.maybe_increment_leader_hw()

    # -- follower -------------------------------------------------------------------------

    def append_records_to_follower(self, records: MemoryRecords) -> LogAppendInfo:
        """Append batches fetched from the leader as they are (offsets kept) and record
        the leader epochs the batches carry in the leader-epoch cache."""
        log = self.log
        if log is None:
            raise NotLeaderOrFollowerError(
                f"Log for partition {self.topic_partition} is not available on broker {self.local_broker_id}"
            )
        info = log.append_as_follower(records)
        self._changed()
        cache = self.leader_epoch_cache
        if cache is not None and info.shallow_count:
            latest = cache.latest_epoch
            for epoch, base_offset in _batch_epochs(records.buffer(), info.valid_bytes):
                if epoch >= 0 and (latest is None or epoch > latest):
                    cache.assign(epoch, base_offset)
                    latest = epoch
        return info

    def update_follower_high_watermark(self, leader_hw: int) -> bool:
        """A follower's high watermark: the leader's, capped at the local log end offset;
        True if it moved (consumers fetching from this follower may read further)."""
        if self.log is None:
            return False
        new_hw = max(min(leader_hw, self.log.log_end_offset), 0)
        if new_hw == self.high_watermark:
            return False
        self._set_hw(new_hw)
        return True

    def truncate_to(self, offset: int) -> None:
        """Remove what follows `offset` (the log, the epoch cache, the HW above it)."""
        log = self.log
        if log is None:
            return
        log.truncate_to(offset)
        if self.leader_epoch_cache is not None:
            self.leader_epoch_cache.truncate_from_end(log.log_end_offset)
        if self.high_watermark > log.log_end_offset:
            self._set_hw(log.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at `offset` (a follower behind the leader's log start)."""
        log = self.log
        if log is None:
            return
        log.truncate_fully_and_start_at(offset)
        if self.leader_epoch_cache is not None:
            self.leader_epoch_cache.clear_and_flush()
        self._set_hw(offset)

    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch in the local log's epoch cache (-1: none)."""
        cache = self.leader_epoch_cache
        latest = None if cache is None else cache.latest_epoch
        return -1 if latest is None else latest

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) of `epoch` in the local epoch cache (-1, -1 if unknown)."""
        if self.leader_epoch_cache is None or self.log is None:
            return -1, -1
        return self.leader_epoch_cache.end_offset_for(epoch, self.log.log_end_offset)

    # -- offsets --------------------------------------------------------------------------

    def fetch_offset_for_timestamp(
        self,
        timestamp: int,
        isolation_level: int | None,
        current_leader_epoch: int,
        fetch_only_from_leader: bool,
    ) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest (for clients the high watermark, or the LSO
        at read_committed), else the first offset with a timestamp >= `timestamp` below
        the last fetchable offset."""
        log = self.local_log_or_error(current_leader_epoch, fetch_only_from_leader)
        if isolation_level is None:
            last_fetchable = log.log_end_offset
        elif isolation_level == READ_COMMITTED:
            last_fetchable = self.last_stable_offset
        else:
            last_fetchable = self.high_watermark
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, last_fetchable, self._epoch_at(last_fetchable))
        found = log.fetch_offset_by_timestamp(timestamp)
        if found is None:
            return None
        if timestamp != EARLIEST_TIMESTAMP and found.offset >= last_fetchable:
            return None
        return TimestampAndOffset(found.timestamp, found.offset, self._epoch_at(found.offset))

    def _epoch_at(self, offset: int) -> int:
        cache = self.leader_epoch_cache
        if cache is None:
            return -1
        if self.log is not None and offset >= self.log.log_end_offset:
            latest = cache.latest_epoch
            return -1 if latest is None else latest
        epoch = cache.epoch_for_offset(offset)
        return -1 if epoch is None else epoch

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int, fetch_only_from_leader: bool
    ) -> tuple[int, int]:
        """(epoch, end offset) of `leader_epoch` from the leader-epoch cache."""
        log = self.local_log_or_error(current_leader_epoch, fetch_only_from_leader)
        assert self.leader_epoch_cache is not None
        return self.leader_epoch_cache.end_offset_for(leader_epoch, log.log_end_offset)

    def delete_records_on_leader(
        self, offset: int, broker_alive: Callable[[int], bool]
    ) -> tuple[int, int]:
        """DeleteRecords: move the leader's log start offset to `offset` (-1: the high
        watermark); returns (the offset asked for, the low watermark now). The followers
        follow when their fetches tell them the leader's log start offset."""
        log = self.local_log_or_error(-1, True)
        if not log.config.delete:
            raise PolicyViolationError(
                f"Records of partition {self.topic_partition} can not be deleted due to the configured "
                f"policy (cleanup.policy={','.join(log.config.cleanup_policy)}); DeleteRecords needs 'delete' in it."
            )
        hw = self.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {target} of partition "
                f"{self.topic_partition} since it is larger than the high watermark {hw}"
            )
        log.maybe_increment_log_start_offset(target)
        if self.leader_epoch_cache is not None:
            self.leader_epoch_cache.truncate_from_start(log.log_start_offset)
        return target, self.low_watermark_if_leader(broker_alive)

    def low_watermark_if_leader(self, broker_alive: Callable[[int], bool]) -> int:
        """The smallest log start offset over the leader and its followers on live brokers
        (Kafka's lowWatermarkIfLeader); a follower that has not fetched from this leader
        yet counts as -1, so records are only reported deleted once every copy dropped them."""
        log = self.local_log_or_error(-1, True)
        low = log.log_start_offset
        for replica in self.remote_replicas.values():
            if replica.log_start_offset < low and broker_alive(replica.broker_id):
                low = replica.log_start_offset
        return low

    def maybe_increment_follower_log_start_offset(self, leader_log_start_offset: int) -> bool:
        """A follower takes the leader's log start offset (from a fetch response) once its
        high watermark reached it; True if it moved."""
        log = self.log
        if log is None or leader_log_start_offset <= log.log_start_offset:
            return False
        if leader_log_start_offset > self.high_watermark:
            return False
        log.maybe_increment_log_start_offset(leader_log_start_offset)
        if self.leader_epoch_cache is not None:
            self.leader_epoch_cache.truncate_from_start(log.log_start_offset)
        return True

    # -- removal --------------------------------------------------------------------------

    def forget(self) -> None:
        """Drop the partition's replication state (its log is deleted by the caller)."""
        self.leader_replica_id = None
        self.assigned_replicas = []
        self.isr = []
        self.remote_replicas = {}
        if self.log is not None:
            self.log.change_listener = None
        self.log = None
        self.leader_epoch_cache = None
        self._changed()


def _batch_epochs(buffer: memoryview, size: int) -> list[tuple[int, int]]:
    """(partitionLeaderEpoch, baseOffset) of each batch in `buffer[:size]`, from the
    headers only (one step per batch)."""
    return [(h[H_LEADER_EPOCH], h[H_BASE_OFFSET]) for _, h in iter_headers(buffer, 0, size)]
