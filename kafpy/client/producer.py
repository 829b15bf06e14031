"""BatchProducer: writes records to a topic in whole batches, one Produce per leader.

A small producer for kafpy's tools (console-producer, tests, benchmarks): each `send`
call partitions its records (Kafka's default partitioner for keys, one sticky partition
for the records without a key), builds one record batch per partition, sends one
Produce request per partition leader, and retries the partitions that failed with a
retriable error (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, ...) after a metadata
refresh. It is not idempotent and keeps no batches in memory between calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.client.kafka_client import KafkaClient
from kafpy.client.partitioner import StickyPartitioner, partition_for_key
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaError, LeaderNotAvailableError
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.compression import CompressionType
from kafpy.records.record import Header

ProducerRecord = (
    tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Sequence[Header]]
)

ACKS_NAMES = {"all": -1, "-1": -1, "0": 0, "1": 1}


def parse_acks(value: str | int) -> int:
    """Kafka's `acks` setting: all / -1 / 0 / 1."""
    acks = ACKS_NAMES.get(str(value).strip().lower())
    if acks is None:
        raise ValueError(f"Invalid value {value!r} for acks: expected all, -1, 0 or 1")
    return acks


@dataclass(frozen=True)
class ProduceResult:
    """Where one partition's batch landed: its first offset (-1 with acks=0)."""

    tp: TopicPartition
    base_offset: int
    record_count: int
    log_append_time: int = -1


class BatchProducer:
    """Sends batches of records and waits for the acknowledgements asked for.

    Parameters: `acks` (-1 all in-sync replicas, 1 leader, 0 no answer), `compression`,
    `timeout_ms` (the Produce request's ack timeout), `time` (timestamps).
    Raises the KafkaError of a partition's error code once retries are used up, with the
    partition named in the message."""

    def __init__(
        self,
        client: KafkaClient,
        *,
        acks: int = 1,
        compression: CompressionType = CompressionType.NONE,
        timeout_ms: int = 30000,
        time: Time = SYSTEM_TIME,
    ) -> None:
        if acks not in (-1, 0, 1):
            raise ValueError(f"Invalid value {acks} for acks: expected -1, 0 or 1")
        self.client = client
        self.acks = acks
        self.compression = compression
        self.timeout_ms = timeout_ms
        self.time = time
        self._sticky = StickyPartitioner()

    async def partitions_for(self, topic: str) -> list[int]:
        """The topic's partitions, asking for metadata (which may auto-create the topic)
        until it has some."""
        for tries_left in range(self.client.retries, -1, -1):
            partitions = self.client.cluster.partitions_for(topic)
            if partitions:
                return partitions
            await self.client.refresh_metadata([topic], allow_auto_topic_creation=True)
            info = self.client.cluster.topic(topic)
            if info is not None and info.partitions and info.error_code == Errors.NONE:
                return sorted(info.partitions)
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error_code
            if (code and not Errors.for_code(code).retriable) or tries_left == 0:
                if code == Errors.NONE:
                    raise LeaderNotAvailableError(f"Topic {topic} has no partitions yet.")
                raise error_for_code(code, None, f"Getting metadata of topic {topic}")
            await self.client.backoff()
        raise AssertionError("unreachable")

    async def send(
        self,
        topic: str,
        records: Sequence[ProducerRecord],
        *,
        partition: int | None = None,
    ) -> list[ProduceResult]:
        """Produce `records` ((key, value) or (key, value, headers)) to `topic`, to
        `partition` if given; returns where each partition's batch was written."""
        await self.client.start()
        partitions = await self.partitions_for(topic)
        by_partition: dict[int, list[ProducerRecord]] = {}
        sticky: int | None = None
        for record in records:
            if partition is not None:
                p = partition
            elif record[0] is not None:
                p = partitions[partition_for_key(record[0], len(partitions))]
            else:
                if sticky is None:
                    sticky = partitions[self._sticky.next_partition(len(partitions))]
                p = sticky
            by_partition.setdefault(p, []).append(record)
        now = self.time.milliseconds()
        batches: dict[TopicPartition, tuple[bytes, int]] = {}
        for p, recs in by_partition.items():
            builder = RecordBatchBuilder(compression=self.compression)
            for record in recs:
                headers = record[2] if len(record) > 2 else ()
                builder.append(now, record[0], record[1], headers)
            batches[TopicPartition(topic, p)] = (builder.build(), len(recs))
        return await self.send_batches(batches)

    async def send_batches(
        self, batches: dict[TopicPartition, tuple[bytes, int]]
    ) -> list[ProduceResult]:
        """Send ready-made batches ({tp: (batch bytes, record count)}), retrying the
        partitions that fail with a retriable error."""
        pending = dict(batches)
        results: dict[TopicPartition, ProduceResult] = {}
        for tries_left in range(self.client.retries, -1, -1):
            failed: dict[TopicPartition, KafkaError] = {}
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                try:
                    by_leader.setdefault(await self.client.leader_for(tp), []).append(tp)
                except KafkaError as e:
                    failed[tp] = e
            outcomes = await asyncio.gather(
                *(
                    self._produce(leader, {tp: pending[tp] for tp in tps})
                    for leader, tps in by_leader.items()
                ),
                return_exceptions=True,
            )
            for (_, tps), outcome in zip(by_leader.items(), outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, KafkaError):
                        raise outcome
                    failed.update(dict.fromkeys(tps, outcome))
                    continue
                for tp in tps:
                    got = outcome[tp]
                    if isinstance(got, KafkaError):
                        failed[tp] = got
                    else:
                        results[tp] = got
            if not failed:
                break
            fatal = [(tp, e) for tp, e in failed.items() if not e.retriable]
            if fatal or tries_left == 0:
                tp, error = (fatal or list(failed.items()))[0]
                raise error
            pending = {tp: pending[tp] for tp in failed}
            await self.client.backoff()
            await self.client.refresh_metadata(sorted({tp.topic for tp in failed}))
        return [results[tp] for tp in batches]

    async def _produce(
        self, leader: int, batches: dict[TopicPartition, tuple[bytes, int]]
    ) -> dict[TopicPartition, ProduceResult | KafkaError]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, (data, _) in batches.items():
            topics.setdefault(tp.topic, []).append({"index": tp.partition, "records": data})
        body = {
            "transactional_id": None,
            "acks": self.acks,
            "timeout_ms": self.timeout_ms,
            "topic_data": [
                {"name": name, "partition_data": parts} for name, parts in topics.items()
            ],
        }
        conn = await self.client.connection(leader)
        if self.acks == 0:
            await conn.send_no_response(ApiKey.PRODUCE, body)
            return {tp: ProduceResult(tp, -1, count) for tp, (_, count) in batches.items()}
        response = await conn.send(ApiKey.PRODUCE, body)
        outcome: dict[TopicPartition, ProduceResult | KafkaError] = {}
        for t in response["responses"]:
            for p in t["partition_responses"]:
                tp = TopicPartition(t["name"], p["index"])
                if tp not in batches:
                    continue
                if p["error_code"]:
                    outcome[tp] = error_for_code(
                        p["error_code"], p.get("error_message"), f"Producing to {tp}"
                    )
                else:
                    outcome[tp] = ProduceResult(
                        tp, p["base_offset"], batches[tp][1], p.get("log_append_time_ms", -1)
                    )
        for tp in batches:
            if tp not in outcome:
                outcome[tp] = KafkaError(
                    f"The Produce response from broker {leader} left out {tp}."
                )
        return outcome
