"""DelayedFetch: a Fetch that waits in purgatory until enough bytes arrive or its wait runs out.

A fetch asking for `min_bytes` that finds fewer waits up to `max_wait_ms`; appends and
high-watermark moves on its partitions call `check_and_complete`, and `try_complete`
decides, from log positions only (no reads), whether the fetch can be answered now.
Completion re-reads the logs and hands the result to the callback (Kafka's cases A-I:
leadership lost, partition gone, segment rolled or truncated, enough bytes).

An incremental fetch (KIP-227) does not read the partitions of its session that had
nothing to say when last read and have not changed since (IdlePartitions); its delayed
fetch watches them under one key, woken when one of them changes, and counts only those.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Protocol

from kafpy.common.delayed_operation import DelayedOperation
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.server.replica_selector import ClientMetadata
from kafpy.storage.log_append_info import LogOffsetMetadata

# the replica id of a fetch that may read from followers too (Kafka's debugging consumer)
DEBUGGING_CONSUMER_ID = -2


@dataclass(frozen=True, slots=True)
class PartitionFetchInfo:
    """One partition of a Fetch request."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1  # v12+ (KIP-595's truncation detection)


@dataclass(frozen=True, slots=True)
class FetchParams:
    """The request-level settings of a fetch (Kafka's FetchMetadata)."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int = 0  # 0 read_uncommitted, 1 read_committed
    # the fetching client (Fetch v11+, KIP-392): lets a consumer read from a follower and
    # the leader answer with a preferred read replica
    client_metadata: ClientMetadata | None = None

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def fetch_only_from_leader(self) -> bool:
        """Followers fetch from the leader; so do consumers older than Fetch v11 (Kafka
        2.8's rule), except the debugging consumer."""
        if self.replica_id == DEBUGGING_CONSUMER_ID:
            return False
        return self.is_from_follower or self.client_metadata is None

    @property
    def fetch_only_committed(self) -> bool:
        return not self.is_from_follower


@dataclass(slots=True)
class FetchPartitionStatus:
    """Where a partition's fetch started (with its segment position) and what it asked for."""

    start_offset_metadata: LogOffsetMetadata
    fetch_info: PartitionFetchInfo


class IdlePartitions(Protocol):
    """The partitions of an incremental fetch session (KIP-227) a fetch leaves unread: when
    last read they had nothing to say (no records, no error, the fetcher at their end, the
    high watermark and log start offset it was told still theirs) and they have not
    changed since."""

    @property
    def watch_key(self) -> Hashable:
        """The purgatory key a delayed fetch watches them under."""
        ...

    def changed(self) -> Iterable[tuple[TopicPartition, FetchPartitionStatus]]:
        """Those that changed since the fetch began, with where their fetch starts."""
        ...

    def take_changed(self) -> list[tuple[TopicPartition, PartitionFetchInfo]]:
        """Those that changed since the fetch began, to be read by it now (in the session's
        order)."""
        ...

    def watch(self, wake: Callable[[], None] | None) -> None:
        """Call `wake` (on the event loop) when one of them changes; None: no longer."""
        ...

    def count_by_topic(self) -> dict[str, int]:
        """How many partitions the fetch left unread, per topic (each still counts as a
        partition read in TotalFetchRequestsPerSec, as in Kafka, which reads them all)."""
        ...


class DelayedFetch(DelayedOperation):
    """A fetch waiting for `params.min_bytes` over its partitions, or `params.max_wait_ms`."""

    def __init__(
        self,
        params: FetchParams,
        statuses: Sequence[tuple[TopicPartition, FetchPartitionStatus]],
        end_offset_of: Callable[[TopicPartition, PartitionFetchInfo], LogOffsetMetadata],
        on_complete: Callable[[], None],
        idle: IdlePartitions | None = None,
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.params = params
        self.statuses = statuses
        self.idle = idle
        self._end_offset_of = end_offset_of
        self._complete_callback = on_complete

    def try_complete(self) -> bool:
        accumulated = 0
        idle = self.idle
        statuses = self.statuses if idle is None else chain(self.statuses, idle.changed())
        for tp, status in statuses:
            start = status.start_offset_metadata
            try:
                end = self._end_offset_of(tp, status.fetch_info)
            except KafkaError:
                # not leader any more, partition gone, epoch fenced, storage error: answer now
                return self.force_complete()
            if end.message_offset == start.message_offset:
                continue
            if end.message_offset_only or start.message_offset_only:
                if start.message_offset < end.message_offset:
                    accumulated += status.fetch_info.max_bytes
                else:
                    return self.force_complete()
            elif end.segment_base_offset < start.segment_base_offset:
                return self.force_complete()  # the log was truncated under the fetch
            elif start.segment_base_offset < end.segment_base_offset:
                return self.force_complete()  # a segment rolled: answer from the older one
            elif start.message_offset < end.message_offset:
                diff = end.relative_position_in_segment - start.relative_position_in_segment
                accumulated += min(diff, status.fetch_info.max_bytes)
        if accumulated >= self.params.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._complete_callback()
