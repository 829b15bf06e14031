"""Incremental fetch sessions, the broker's side (Kafka's FetchSession.scala, KIP-227).

A fetcher that sends a full Fetch with session epoch 0 gets a session id back when the
FetchSessionCache has room (`max.incremental.fetch.session.cache.slots`). Its later
fetches within the session name only the partitions whose fetch parameters changed
(and `forgotten_topics_data` for those it drops); the broker answers only the partitions
with something to say: records, a moved high watermark or log start offset, an error, a
diverging epoch or a preferred read replica.

Kafka reads every partition of the session at each fetch to find them. kafpy reads only
the session's dirty partitions: those added or updated by the fetcher, those whose last
answer had something to say or whose fetcher was not yet at their end, and those that
changed since they were last read (ReplicaManager tells the cache of every append,
truncation, move of the high watermark or log start offset, change of leader or epoch,
and of a partition dropped). A partition left out would have been answered exactly as
last time, so left out of the response; an idle session costs nothing per partition.
Follower sessions, and fetches that may be sent to a preferred read replica (whose choice
depends on more than the partition), still read every partition.

FetchManager.new_context turns a request into one of four contexts:
SessionErrorContext (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH),
SessionlessFetchContext (epoch -1, or fetch v0-6), FullFetchContext (epoch 0: maybe
creates a session) and IncrementalFetchContext. The broker runs on one event loop, so
the cache and its sessions need no locks; a session's epoch is still checked again when
the answer is made, as Kafka does, because a fetch can wait in the purgatory while a
duplicate of it arrives.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafpy.common.logger import component_logger
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.fetch import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchMetadata,
    next_epoch,
)
from kafpy.server.delayed_fetch import FetchPartitionStatus, IdlePartitions, PartitionFetchInfo
from kafpy.storage.log_append_info import LogOffsetMetadata

# Kafka's KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: a session unused this long
# is stale (evictable by anyone); one younger than this is not evicted for a bigger one
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000

PartitionAnswer = dict[str, Any]
"""One partition of a Fetch response body (`partition_index`, `error_code`, ...)."""


def _partitions_to_log_string(partitions: Iterable[TopicPartition]) -> str:
    return f"{sum(1 for _ in partitions)} partition(s)"


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: the fetcher's last request parameters and the high
    watermark and log start offset it was last told."""

    topic_partition: TopicPartition
    request: PartitionFetchInfo
    high_watermark: int = -1
    local_log_start_offset: int = -1
    # where the fetch offset was in the log when the partition was last read with nothing
    # to say (a delayed fetch starts there); None while it has something to say
    position: LogOffsetMetadata | None = None
    # its place in the session's order (answered partitions move to the end)
    order: int = 0

    def settle(
        self, answer: Mapping[str, Any], position: LogOffsetMetadata | None, read_committed: bool
    ) -> bool:
        """After `answer` went out (must_respond with update): whether the partition is
        idle, i.e. reading it again unchanged would answer nothing new. No records, no
        error, no diverging epoch, no preferred replica, and the fetcher at the end of
        what it may read (a fetch cut short by max_bytes is not)."""
        records = answer.get("records")
        end = answer["last_stable_offset"] if read_committed else answer["high_watermark"]
        idle = (
            position is not None
            and answer["error_code"] == Errors.NONE
            and (records is None or len(records) == 0)
            and answer.get("preferred_read_replica", -1) < 0
            and answer.get("diverging_epoch") is None
            and self.request.fetch_offset >= end
        )
        self.position = position if idle else None
        return idle

    def must_respond(self, answer: Mapping[str, Any], update: bool) -> bool:
        """Whether `answer` must go out in an incremental response (Kafka's
        maybeUpdateResponseData); with `update`, remember what the fetcher is told."""
        must = False
        records = answer.get("records")
        if records is not None and len(records) > 0:
            must = True
        hw = answer["high_watermark"]
        if self.high_watermark != hw:
            must = True
            if update:
                self.high_watermark = hw
        log_start = answer.get("log_start_offset", -1)
        if self.local_log_start_offset != log_start:
            must = True
            if update:
                self.local_log_start_offset = log_start
        if answer.get("preferred_read_replica", -1) >= 0:
            must = True
        if answer.get("diverging_epoch") is not None:
            must = True
        if answer["error_code"] != Errors.NONE:
            # an error always goes out; -1 makes the partition go out again once it clears
            if update:
                self.high_watermark = -1
            must = True
        return must


@dataclass(eq=False, slots=True)
class FetchSession:
    """One incremental fetch session: its partitions, in the order they are fetched (a
    partition that was answered moves to the end, so a full response cut short by
    `max_bytes` does not starve the last ones), its epoch (the next expected), and its
    dirty partitions, the only ones its next fetch reads."""

    id: int
    privileged: bool  # a follower's session
    partitions: dict[TopicPartition, CachedPartition]
    creation_ms: int
    last_used_ms: int
    epoch: int
    # the size the cache last saw (touch); -1 while not in the cache
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False
    # partition -> the number of its latest mark (a fetch that read it at that mark may
    # clear it; a later mark keeps it dirty)
    dirty: dict[TopicPartition, int] = field(default_factory=dict)
    marks: int = 0
    last_order: int = 0
    # wakes the fetch parked on the session's idle partitions
    wake: Callable[[], None] | None = None
    # set when the session left the cache while a fetch was parked on it: stops watching
    # its partitions once that fetch is answered
    unwatch: Callable[[], None] | None = None
    # topic -> how many of its partitions the session holds
    topic_sizes: dict[str, int] = field(default_factory=dict)
    # the last fetch's read rules (read_committed, from the leader only), which decided
    # which partitions are idle; a fetch with other rules reads every partition
    read_rules: tuple[bool, bool] = (False, True)

    def __post_init__(self) -> None:
        sizes = self.topic_sizes
        for tp in self.partitions:
            sizes[tp.topic] = sizes.get(tp.topic, 0) + 1

    def mark(self, tp: TopicPartition) -> None:
        """`tp` changed (or must be read for another reason): the next fetch reads it."""
        self.marks += 1
        self.dirty[tp] = self.marks
        if self.wake is not None:
            self.wake()

    def next_order(self) -> int:
        self.last_order += 1
        return self.last_order

    @property
    def size(self) -> int:
        return len(self.partitions)

    @property
    def metadata(self) -> FetchMetadata:
        return FetchMetadata(self.id, self.epoch)

    def update(
        self,
        fetch_data: Mapping[TopicPartition, PartitionFetchInfo],
        to_forget: Iterable[TopicPartition],
    ) -> tuple[list[TopicPartition], list[TopicPartition], list[TopicPartition]]:
        """Apply an incremental request: (added, updated, removed) partitions."""
        added: list[TopicPartition] = []
        updated: list[TopicPartition] = []
        removed: list[TopicPartition] = []
        for tp, info in fetch_data.items():
            cached = self.partitions.get(tp)
            if cached is None:
                self.partitions[tp] = CachedPartition(tp, info, order=self.next_order())
                self.topic_sizes[tp.topic] = self.topic_sizes.get(tp.topic, 0) + 1
                added.append(tp)
            else:
                cached.request = info
                cached.position = None
                updated.append(tp)
            self.mark(tp)
        for tp in to_forget:
            if self.partitions.pop(tp, None) is not None:
                self.dirty.pop(tp, None)
                self.topic_sizes[tp.topic] -= 1
                removed.append(tp)
        return added, updated, removed

    def __str__(self) -> str:
        return (f"FetchSession(id={self.id}, privileged={self.privileged}, "
                f"partitionMap.size={self.size}, creationMs={self.creation_ms}, "
                f"lastUsedMs={self.last_used_ms}, epoch={self.epoch})")  # fmt: skip


@dataclass(frozen=True, slots=True)
class FetchResponseData:
    """What a context answers: the top-level error, the session id and the partitions."""

    error: int
    session_id: int
    partitions: dict[TopicPartition, PartitionAnswer] = field(default_factory=dict)


class FetchContext:
    """What one Fetch request reads and how its answer is cut (Kafka's FetchContext)."""

    error: int = Errors.NONE
    # whether update_and_generate_response_data wants the read positions (a session's
    # contexts: they tell idle partitions); the others are spared building them
    keeps_positions = False

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionFetchInfo]]:
        """The partitions to read, in order, with their fetch parameters."""
        return iter(())

    def idle_partitions(self) -> IdlePartitions | None:
        """The partitions the fetch leaves unread until they change (an incremental
        fetch's idle ones), for the delayed fetch to watch; None when it reads them all."""
        return None

    def update_and_generate_response_data(
        self,
        updates: dict[TopicPartition, PartitionAnswer],
        positions: Mapping[TopicPartition, LogOffsetMetadata] | None = None,
    ) -> FetchResponseData:
        """Record what the fetcher is told and answer (`updates` may be pruned in place);
        `positions`: where each partition read was read from (its fetch offset's place in
        the log), which lets a session leave the idle ones unread."""
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    """A request whose session is unknown or whose epoch is wrong: nothing is read and
    the answer is the error alone."""

    def __init__(self, error: int, metadata: FetchMetadata) -> None:
        self.error = error
        self.metadata = metadata

    def update_and_generate_response_data(
        self,
        updates: dict[TopicPartition, PartitionAnswer],
        positions: Mapping[TopicPartition, LogOffsetMetadata] | None = None,
    ) -> FetchResponseData:
        return FetchResponseData(self.error, INVALID_SESSION_ID)


class SessionlessFetchContext(FetchContext):
    """A full fetch that wants no session (epoch -1, or Fetch v0-6)."""

    def __init__(self, fetch_data: Mapping[TopicPartition, PartitionFetchInfo]) -> None:
        self.fetch_data = fetch_data

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionFetchInfo]]:
        return iter(self.fetch_data.items())

    def update_and_generate_response_data(
        self,
        updates: dict[TopicPartition, PartitionAnswer],
        positions: Mapping[TopicPartition, LogOffsetMetadata] | None = None,
    ) -> FetchResponseData:
        return FetchResponseData(Errors.NONE, INVALID_SESSION_ID, updates)


class FullFetchContext(FetchContext):
    """A full fetch with epoch 0: answers every partition and opens a session for them
    when the cache has (or can make) room."""

    keeps_positions = True

    def __init__(
        self,
        time: Time,
        cache: FetchSessionCache,
        fetch_data: Mapping[TopicPartition, PartitionFetchInfo],
        is_from_follower: bool,
        read_committed: bool = False,
        from_leader_only: bool = True,
    ) -> None:
        self.time = time
        self.cache = cache
        self.fetch_data = fetch_data
        self.is_from_follower = is_from_follower
        self.read_committed = read_committed
        self.from_leader_only = from_leader_only

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionFetchInfo]]:
        return iter(self.fetch_data.items())

    def update_and_generate_response_data(
        self,
        updates: dict[TopicPartition, PartitionAnswer],
        positions: Mapping[TopicPartition, LogOffsetMetadata] | None = None,
    ) -> FetchResponseData:
        def cached_partitions() -> dict[TopicPartition, CachedPartition]:
            cached: dict[TopicPartition, CachedPartition] = {}
            for order, (tp, answer) in enumerate(updates.items(), 1):
                request = self.fetch_data.get(tp)
                if request is None:
                    continue  # not asked for (cannot happen with the broker's own answers)
                c = cached[tp] = CachedPartition(
                    tp, request, answer["high_watermark"], answer.get("log_start_offset", -1),
                    order=order,
                )  # fmt: skip
                c.settle(answer, positions.get(tp) if positions else None, self.read_committed)
            return cached

        session_id = self.cache.maybe_create_session(
            self.time.milliseconds(), self.is_from_follower, len(updates), cached_partitions
        )
        session = self.cache.get(session_id)
        if session is not None:
            session.read_rules = (self.read_committed, self.from_leader_only)
        return FetchResponseData(Errors.NONE, session_id, updates)


class IncrementalFetchContext(FetchContext):
    """A fetch within a session: reads the session's dirty partitions (every partition
    when `reads_all`) and answers those with something new to say. It is also the
    IdlePartitions a delayed fetch watches: the session's partitions it did not read."""

    keeps_positions = True

    def __init__(
        self,
        metadata: FetchMetadata,
        session: FetchSession,
        read_committed: bool = False,
        reads_all: bool = False,
        from_leader_only: bool = True,
    ) -> None:
        self.metadata = metadata
        self.session = session
        self.read_committed = read_committed
        rules = (read_committed, from_leader_only)
        # idle partitions were judged by the session's last rules: other rules, read all
        self.reads_all = reads_all or session.privileged or session.read_rules != rules
        session.read_rules = rules
        # the partitions read, each with its mark when read (0: it was not dirty)
        self._read: dict[TopicPartition, int] = {}
        self._wake: Callable[[], None] | None = None

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionFetchInfo]]:
        session = self.session
        cached = session.partitions
        dirty = session.dirty
        if self.reads_all:
            tps = list(cached)
        else:
            tps = sorted([tp for tp in dirty if tp in cached], key=lambda tp: cached[tp].order)
        self._read = {tp: dirty.get(tp, 0) for tp in tps}
        # a copy: the session may change while the fetch waits in the purgatory
        return iter([(tp, cached[tp].request) for tp in tps])

    def idle_partitions(self) -> IdlePartitions | None:
        return None if self.reads_all else self

    # -- IdlePartitions -------------------------------------------------------------------

    @property
    def watch_key(self) -> Hashable:
        return ("FetchSession", self.session.id)

    def changed(self) -> list[tuple[TopicPartition, FetchPartitionStatus]]:
        cached, read = self.session.partitions, self._read
        out = []
        for tp in self.session.dirty:
            if tp not in read:
                c = cached.get(tp)
                if c is not None and c.position is not None:
                    out.append((tp, FetchPartitionStatus(c.position, c.request)))
        return out

    def take_changed(self) -> list[tuple[TopicPartition, PartitionFetchInfo]]:
        session = self.session
        cached, dirty, read = session.partitions, session.dirty, self._read
        tps = sorted([tp for tp in dirty if tp not in read and tp in cached],
                     key=lambda tp: cached[tp].order)  # fmt: skip
        for tp in tps:
            read[tp] = dirty[tp]
        return [(tp, cached[tp].request) for tp in tps]

    def watch(self, wake: Callable[[], None] | None) -> None:
        session = self.session
        if wake is not None:
            session.wake = self._wake = wake
        elif session.wake is self._wake:  # not a later fetch's (a duplicate request's)
            session.wake = self._wake = None
            if session.unwatch is not None:
                session.unwatch()
                session.unwatch = None

    def count_by_topic(self) -> dict[str, int]:
        counts = dict(self.session.topic_sizes)
        for tp in self._read:
            if tp.topic in counts:
                counts[tp.topic] -= 1
        return counts

    # -------------------------------------------------------------------------------------

    def update_and_generate_response_data(
        self,
        updates: dict[TopicPartition, PartitionAnswer],
        positions: Mapping[TopicPartition, LogOffsetMetadata] | None = None,
    ) -> FetchResponseData:
        session = self.session
        expected = next_epoch(self.metadata.epoch)
        if session.epoch != expected:
            _log.info("Incremental fetch session %d expected epoch %d, but got %d.  "
                      "Possible duplicate request.", session.id, expected, session.epoch)  # fmt: skip
            return FetchResponseData(Errors.INVALID_FETCH_SESSION_EPOCH, session.id)
        cached_partitions, dirty, read = session.partitions, session.dirty, self._read
        positions = positions or {}
        answered: list[tuple[int, TopicPartition]] = []
        for tp, answer in updates.items():
            cached = cached_partitions.get(tp)
            if cached is None:
                # forgotten while the fetch waited: its answer goes out as it is
                answered.append((-1, tp))
                continue
            if cached.must_respond(answer, update=True):
                answered.append((cached.order, tp))
            if cached.settle(answer, positions.get(tp), self.read_committed):
                if dirty.get(tp, 0) == read.get(tp, -1):
                    dirty.pop(tp, None)  # not marked again since it was read
            elif tp not in dirty:
                session.marks += 1
                dirty[tp] = session.marks
        # in the session's order; answered partitions go to the back of it
        answered.sort()
        response: dict[TopicPartition, PartitionAnswer] = {}
        for _, tp in answered:
            response[tp] = updates[tp]
            cached = cached_partitions.pop(tp, None)
            if cached is not None:
                cached.order = session.next_order()
                cached_partitions[tp] = cached
        return FetchResponseData(Errors.NONE, session.id, response)


class FetchSessionCache:
    """The broker's fetch sessions, at most `max_entries` of them (Kafka's FetchSessionCache).

    A new session B takes the place of an existing A when the cache is full and
    (Kafka's tryEvict): A has not been used for `eviction_ms` (the least recently used
    such session goes first); or else the cheapest evictable A sorts below B by
    (privileged, size) — followers' sessions outrank consumers', bigger sessions outrank
    smaller ones. A session is evictable by a consumer's only once older than
    `eviction_ms`; a consumer's session is evictable by a follower's at once.
    """

    def __init__(
        self, max_entries: int, eviction_ms: int = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0  # Kafka's IncrementalFetchSessionEvictionsPerSec, as a total
        self._num_partitions = 0
        self._random = random.Random()
        # partition -> the consumers' sessions holding it, marked when it changes
        self._watchers: dict[TopicPartition, set[FetchSession]] = {}

    def partition_changed(self, tp: TopicPartition) -> None:
        """A hosted partition changed (ReplicaManager's partition change listener): the
        sessions holding it read it at their next fetch."""
        sessions = self._watchers.get(tp)
        if sessions:
            for session in sessions:
                session.mark(tp)

    def watch(
        self, session: FetchSession, added: Iterable[TopicPartition],
        removed: Iterable[TopicPartition] = (),
    ) -> None:  # fmt: skip
        """Mark `session` when one of `added` changes, no longer when one of `removed`
        does. Followers' sessions read every partition at each fetch: not watched."""
        if session.privileged:
            return
        watchers = self._watchers
        for tp in added:
            sessions = watchers.get(tp)
            if sessions is None:
                watchers[tp] = {session}
            else:
                sessions.add(session)
        for tp in removed:
            sessions = watchers.get(tp)
            if sessions is not None:
                sessions.discard(session)
                if not sessions:
                    del watchers[tp]

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    @property
    def size(self) -> int:
        """NumIncrementalFetchSessions."""
        return len(self.sessions)

    @property
    def total_partitions(self) -> int:
        """NumIncrementalFetchPartitionsCached."""
        return self._num_partitions

    def new_session_id(self) -> int:
        while True:
            session_id = self._random.randint(1, 0x7FFFFFFE)
            if session_id not in self.sessions:
                return session_id

    def maybe_create_session(
        self,
        now: int,
        privileged: bool,
        size: int,
        create_partitions: Callable[[], dict[TopicPartition, CachedPartition]],
    ) -> int:
        """A new session's id, or INVALID_SESSION_ID when there is no room for it;
        `create_partitions()` makes its partitions (called only when it is created)."""
        if len(self.sessions) < self.max_entries or self.try_evict(privileged, size, now):
            partitions = create_partitions()
            session = FetchSession(self.new_session_id(), privileged, partitions, now, now,
                                   next_epoch(INITIAL_EPOCH), last_order=len(partitions))  # fmt: skip
            for tp, cached in partitions.items():
                if cached.position is None:
                    session.mark(tp)  # it had something to say: read it next time
            _log.debug("Created fetch session %s", session)
            self.sessions[session.id] = session
            self.watch(session, partitions)
            self.touch(session, now)
            return session.id
        _log.debug("No fetch session created for privileged=%s, size=%d.", privileged, size)
        return INVALID_SESSION_ID

    def try_evict(self, privileged: bool, size: int, now: int) -> bool:
        """Remove one session to make room for a new one of `size` partitions, if the
        rules allow; True if one was removed."""
        if not self.sessions:
            return False
        # the least recently used session, if stale (ties: the smaller id, as Kafka's key)
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - lru.last_used_ms > self.eviction_ms:
            _log.debug("Evicting stale FetchSession %d.", lru.id)
            self._evict(lru)
            return True
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]  # fmt: skip
        if not candidates:
            return False
        cheapest = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        # the new session's key (privileged, size, 0) must not sort below the cheapest's
        if (privileged, size, 0) < (cheapest.privileged, cheapest.cached_size, cheapest.id):
            return False
        _log.debug("Evicting FetchSession %d (privileged=%s, size=%d) for one of privileged=%s, "
                   "size=%d.", cheapest.id, cheapest.privileged, cheapest.cached_size, privileged,
                   size)  # fmt: skip
        self._evict(cheapest)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self._num_partitions -= max(0, session.cached_size)
            session.cached_size = -1
            if session.wake is None:
                self.watch(session, (), session.partitions)
            else:
                # a fetch is parked on it (evicted meanwhile): it is still answered when
                # one of its partitions changes, as Kafka's, and then stops watching
                session.unwatch = lambda: self.watch(session, (), session.partitions)
        return session

    def touch(self, session: FetchSession, now: int) -> None:
        """Mark the session used now and take its size; decides what may evict it."""
        session.last_used_ms = now
        if session.cached_size != -1:
            self._num_partitions -= session.cached_size
        session.cached_size = session.size
        old_enough = now - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old_enough
        session.evictable_by_all = old_enough
        self._num_partitions += session.cached_size


class FetchManager:
    """Makes the FetchContext of each Fetch request from the session cache (Kafka's
    FetchManager)."""

    def __init__(self, time: Time, cache: FetchSessionCache) -> None:
        self.time = time
        self.cache = cache

    def new_context(
        self,
        metadata: FetchMetadata,
        fetch_data: Mapping[TopicPartition, PartitionFetchInfo],
        to_forget: Iterable[TopicPartition],
        is_from_follower: bool,
        read_committed: bool = False,
        reads_all: bool = False,
        from_leader_only: bool = True,
    ) -> FetchContext:
        """The request's context; `read_committed`: its isolation level is
        read_committed; `from_leader_only`: it may not read a follower; `reads_all`: an
        incremental fetch must read every partition of its session (its answers may name
        a preferred read replica, KIP-392)."""
        if metadata.is_full:
            removed = ""
            # a full fetch closes the session it names
            if metadata.session_id != INVALID_SESSION_ID and self.cache.remove(metadata.session_id):
                removed = f" Removed fetch session {metadata.session_id}."
            context: FetchContext
            if metadata.epoch == FINAL_EPOCH:
                suffix = " Will not try to create a new session."
                context = SessionlessFetchContext(fetch_data)
            else:
                suffix = ""
                context = FullFetchContext(self.time, self.cache, fetch_data, is_from_follower,
                                           read_committed, from_leader_only)  # fmt: skip
            _log.debug("Created a new full FetchContext with %s.%s%s",
                       _partitions_to_log_string(fetch_data), removed, suffix)  # fmt: skip
            return context
        session = self.cache.get(metadata.session_id)
        if session is None:
            _log.debug("Session error for %d: no such session ID found.", metadata.session_id)
            return SessionErrorContext(Errors.FETCH_SESSION_ID_NOT_FOUND, metadata)
        if session.epoch != metadata.epoch:
            _log.debug("Session error for %d: expected epoch %d, but got %d instead.",
                       metadata.session_id, session.epoch, metadata.epoch)  # fmt: skip
            return SessionErrorContext(Errors.INVALID_FETCH_SESSION_EPOCH, metadata)
        added, updated, removed_tps = session.update(fetch_data, to_forget)
        self.cache.watch(session, added, removed_tps)
        if not session.partitions:
            _log.debug("Created a new sessionless FetchContext and closing session id %d, epoch "
                       "%d: after removing %s, there are no more partitions left.", session.id,
                       session.epoch, _partitions_to_log_string(removed_tps))  # fmt: skip
            self.cache.remove(session.id)
            return SessionlessFetchContext(fetch_data)
        self.cache.touch(session, self.time.milliseconds())
        session.epoch = next_epoch(session.epoch)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("Created a new incremental FetchContext for session id %d, epoch %d: "
                       "added %s, updated %s, removed %s", session.id, session.epoch,
                       _partitions_to_log_string(added), _partitions_to_log_string(updated),
                       _partitions_to_log_string(removed_tps))  # fmt: skip
        return IncrementalFetchContext(
            metadata, session, read_committed, reads_all, from_leader_only
        )


_log = component_logger("kafpy.server.FetchSession")
