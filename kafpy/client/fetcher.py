"""Fetcher: reads assigned partitions from their leaders, as Kafka's consumer does with assign().

Positions are set by the caller (an offset, or earliest/latest through ListOffsets);
each `fetch()` sends one Fetch per leader (concurrently, full fetch requests, session 0)
and returns the records at or after each position, advancing the positions. A position
out of range is reset by the reset policy, as `auto.offset.reset` does. No consumer
group: committing offsets comes with the group coordinator.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.client.consumer_config import CONSUMER_CONFIG_DEF
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.records.control_record import ControlRecordType, control_record_type
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record import Header
from kafpy.records.record_batch import RecordBatch, TimestampType

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """A fetched record with where it came from (Kafka's ConsumerRecord)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


class AbortedTransactions:
    """The aborted transactions a read_committed Fetch lists for one partition, applied
    to its batches in offset order as Kafka's consumer does: once an aborted transaction
    of a producer has begun (its first offset is reached), that producer's transactional
    batches are dropped until its ABORT marker."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        # (first offset, producer id), earliest first
        self._pending = sorted((first, pid) for pid, first in aborted)
        self._next = 0
        self._aborting: set[int] = set()

    @classmethod
    def from_response(cls, entries: Iterable[Mapping[str, int]] | None) -> AbortedTransactions:
        """From a Fetch response partition's `aborted_transactions` (None: none)."""
        return cls((a["producer_id"], a["first_offset"]) for a in entries or ())

    def is_aborted(self, batch: RecordBatch) -> bool:
        """Whether `batch` (the next one in offset order) belongs to an aborted transaction."""
        if batch.producer_id < 0:
            return False
        pending = self._pending
        while self._next < len(pending) and pending[self._next][0] <= batch.last_offset:
            self._aborting.add(pending[self._next][1])
            self._next += 1
        if batch.is_control:
            if batch.record_count and control_record_type(batch) is ControlRecordType.ABORT:
                self._aborting.discard(batch.producer_id)
            return False
        return batch.is_transactional and batch.producer_id in self._aborting


class OffsetResetStrategy(enum.Enum):
    """What to do when a position is out of range (Kafka's `auto.offset.reset`)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


class Fetcher:
    """Fetches records of assigned partitions.

    Parameters mirror the consumer's: `max_wait_ms` (fetch.max.wait.ms), `min_bytes`
    (fetch.min.bytes), `max_bytes` (fetch.max.bytes), `max_partition_bytes`
    (max.partition.fetch.bytes), `isolation_level` (0 read uncommitted; 1 read committed:
    up to the last stable offset, without aborted transactions), `reset` (auto.offset.reset)."""

    def __init__(
        self,
        client: KafkaClient,
        *,
        max_wait_ms: int = CONSUMER_CONFIG_DEF.default("fetch.max.wait.ms"),
        min_bytes: int = 1,
        max_bytes: int = CONSUMER_CONFIG_DEF.default("fetch.max.bytes"),
        max_partition_bytes: int = CONSUMER_CONFIG_DEF.default("max.partition.fetch.bytes"),
        isolation_level: int = 0,
        reset: OffsetResetStrategy = OffsetResetStrategy.LATEST,
    ) -> None:
        self.client = client
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_partition_bytes = max_partition_bytes
        self.isolation_level = isolation_level
        self.reset = reset
        self.positions: dict[TopicPartition, int] = {}
        self.high_watermarks: dict[TopicPartition, int] = {}

    # --- positions ---

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        """Read these partitions from these offsets (replacing the assignment)."""
        self.positions = dict(positions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset

    async def list_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        """Each partition's offset for `timestamp` (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, or
        a time in ms: the first offset at or after it, -1 if none), asked of its leader."""
        result: dict[TopicPartition, int] = {}
        for tp in partitions:

            def body(version: int, tp: TopicPartition = tp) -> dict[str, Any]:
                return {
                    "replica_id": -1,
                    "isolation_level": self.isolation_level,
                    "topics": [
                        {
                            "name": tp.topic,
                            "partitions": [
                                {
                                    "partition_index": tp.partition,
                                    "current_leader_epoch": -1,
                                    "timestamp": timestamp,
                                }
                            ],
                        }
                    ],
                }

            response = await self.client.send_to_leader(tp, ApiKey.LIST_OFFSETS, body)
            entry = _partition_entry(response["topics"], "name", tp)
            if entry is None:
                raise KafkaError(f"The ListOffsets response left out {tp}.")
            if entry["error_code"]:
                raise error_for_code(entry["error_code"], None, f"Listing offsets of {tp}")
            result[tp] = entry["offset"]
        return result

    async def _reset(self, tps: list[TopicPartition]) -> None:
        if self.reset is OffsetResetStrategy.NONE:
            raise error_for_code(
                Errors.OFFSET_OUT_OF_RANGE,
                f"Fetch position {self.positions[tps[0]]} is out of range for partition "
                f"{tps[0]} and no reset policy is set.",
            )
        ts = EARLIEST_TIMESTAMP if self.reset is OffsetResetStrategy.EARLIEST else LATEST_TIMESTAMP
        self.positions.update(await self.list_offsets(tps, ts))

    # --- fetching ---

    async def fetch(self) -> list[ConsumerRecord]:
        """One round of Fetch requests (one per leader, waiting up to max_wait_ms for
        data); returns the new records in partition order and advances the positions."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in self.positions:
            by_leader.setdefault(await self.client.leader_for(tp), []).append(tp)
        outcomes = await asyncio.gather(
            *(self._fetch_from(leader, tps) for leader, tps in by_leader.items()),
            return_exceptions=True,
        )
        records: list[ConsumerRecord] = []
        out_of_range: list[TopicPartition] = []
        retry_topics: set[str] = set()
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                if isinstance(outcome, KafkaError) and outcome.retriable:
                    retry_topics.update(tp.topic for tp in self.positions)
                    continue
                raise outcome
            got, bad, retry = outcome
            records.extend(got)
            out_of_range.extend(bad)
            retry_topics.update(retry)
        if out_of_range:
            await self._reset(out_of_range)
        if retry_topics:
            await self.client.backoff()
            await self.client.refresh_metadata(sorted(retry_topics))
        return records

    async def _fetch_from(
        self, leader: int, tps: list[TopicPartition]
    ) -> tuple[list[ConsumerRecord], list[TopicPartition], set[str]]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": self.positions[tp],
                    "log_start_offset": -1,
                    "partition_max_bytes": self.max_partition_bytes,
                }
            )
        body = {
            "replica_id": -1,
            "max_wait_ms": self.max_wait_ms,
            "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes,
            "isolation_level": self.isolation_level,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": parts} for t, parts in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        conn = await self.client.connection(leader)
        response = await conn.send(
            ApiKey.FETCH, body, timeout_ms=self.client.request_timeout_ms + self.max_wait_ms
        )
        if response.get("error_code"):
            raise error_for_code(response["error_code"], None, f"Fetching from broker {leader}")
        records: list[ConsumerRecord] = []
        out_of_range: list[TopicPartition] = []
        retry: set[str] = set()
        for tp in tps:
            entry = _partition_entry(response["responses"], "topic", tp, index="partition_index")
            if entry is None:
                continue
            code = entry["error_code"]
            if code == Errors.OFFSET_OUT_OF_RANGE:
                out_of_range.append(tp)
                continue
            if code:
                if Errors.for_code(code).retriable:
                    retry.add(tp.topic)
                    continue
                raise error_for_code(code, None, f"Fetching {tp} at offset {self.positions[tp]}")
            self.high_watermarks[tp] = entry["high_watermark"]
            aborted = None
            if self.isolation_level == READ_COMMITTED:
                aborted = AbortedTransactions.from_response(entry.get("aborted_transactions"))
            records.extend(self._take_records(tp, entry.get("records"), aborted))
        return records, out_of_range, retry

    def _take_records(
        self, tp: TopicPartition, data: Any, aborted: AbortedTransactions | None = None
    ) -> list[ConsumerRecord]:
        """The records at or after the partition's position (a compressed batch may start
        before it), skipping control batches and, at read_committed, the batches of
        `aborted` transactions; moves the position past what was read."""
        if not data:
            return []
        position = self.positions[tp]
        taken: list[ConsumerRecord] = []
        topic, partition = tp
        for batch in MemoryRecords(data).batches_allow_partial():
            dropped = aborted is not None and aborted.is_aborted(batch)
            if batch.next_offset <= position:
                continue
            if not batch.is_control and not dropped:
                ts_type = batch.timestamp_type
                taken.extend(
                    ConsumerRecord(
                        topic, partition, r.offset, r.timestamp, ts_type, r.key, r.value, r.headers
                    )
                    for r in batch.records()
                    if r.offset >= position
                )
            position = batch.next_offset
        self.positions[tp] = position
        return taken


def _partition_entry(
    topics: list[dict[str, Any]],
    topic_key: str,
    tp: TopicPartition,
    *,
    index: str = "partition_index",
) -> dict[str, Any] | None:
    for t in topics:
        if t[topic_key] != tp.topic:
            continue
        for p in t["partitions"]:
            if p[index] == tp.partition:
                entry: dict[str, Any] = p
                return entry
    return None
