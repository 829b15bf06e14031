"""ConsumerCoordinator: a consumer's membership of a consumer group (Kafka's
ConsumerCoordinator, for one subscribing member).

The membership itself (find the coordinator, join, sync, heartbeat, rejoin when the group
rebalances, leave on close) is AbstractCoordinator's (kafpy.client.abstract_coordinator);
this member joins with the "consumer" protocol type and the range assignor (the leader
computes every member's partitions, handed out in SyncGroup). It fetches the group's
committed offsets (OffsetFetch) and commits new ones (OffsetCommit, with the member's
generation).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafpy.client.abstract_coordinator import REJOIN_ERRORS, AbstractCoordinator
from kafpy.client.consumer_config import CONSUMER_CONFIG_DEF
from kafpy.client.consumer_group_metadata import ConsumerGroupMetadata
from kafpy.client.find_coordinator import COORDINATOR_RETRIABLE
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.consumer_protocol import (
    assignment_partitions,
    encode_assignment,
    encode_subscription,
    subscription_topics,
)
from kafpy.protocol.errors import Errors

RANGE_ASSIGNOR = "range"


def range_assign(
    subscriptions: Mapping[str, list[str]], partitions: Mapping[str, int]
) -> dict[str, list[TopicPartition]]:
    """Kafka's RangeAssignor: per topic, its partitions in order split into contiguous
    ranges over the subscribed members sorted by id, the first members taking one more
    when they do not divide evenly."""
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for topic in sorted({t for topics in subscriptions.values() for t in topics}):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        count = partitions.get(topic, 0)
        per, extra = divmod(count, len(members))
        for i, member in enumerate(members):
            start = per * i + min(i, extra)
            length = per + (1 if i < extra else 0)
            assignment[member] += [TopicPartition(topic, p) for p in range(start, start + length)]
    return assignment


class ConsumerCoordinator(AbstractCoordinator):
    """One member of consumer group `group_id` subscribed to `topics` (Kafka's
    ConsumerCoordinator, on AbstractCoordinator's membership).

    Parameters: `session_timeout_ms` (session.timeout.ms, default 10000),
    `rebalance_timeout_ms` (max.poll.interval.ms, default 300000), `heartbeat_interval_ms`
    (heartbeat.interval.ms, default 3000). `assignment` holds the partitions of the
    current generation; `rejoin_needed` turns true when the group rebalances."""

    def __init__(
        self,
        client: KafkaClient,
        group_id: str,
        topics: Iterable[str],
        *,
        session_timeout_ms: int = CONSUMER_CONFIG_DEF.default("session.timeout.ms"),
        rebalance_timeout_ms: int = 300000,  # max.poll.interval.ms, which kafpy does not take
        heartbeat_interval_ms: int = CONSUMER_CONFIG_DEF.default("heartbeat.interval.ms"),
    ) -> None:
        super().__init__(
            client,
            group_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            log=component_logger(
                "kafpy.client.consumer_coordinator",
                f"Consumer clientId={client.client_id}, groupId={group_id}",
            ),
        )
        self.topics = sorted(set(topics))
        self.assignment: list[TopicPartition] = []

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The member's group, generation and member id (Kafka's KafkaConsumer
        groupMetadata), for a transactional producer's send_offsets_to_transaction."""
        return ConsumerGroupMetadata(self.group_id, self.generation_id, self.member_id)

    def protocol_type(self) -> str:
        return "consumer"

    def metadata(self) -> list[tuple[str, bytes]]:
        return [(RANGE_ASSIGNOR, encode_subscription(self.topics))]

    async def ensure_active_group(self) -> list[TopicPartition]:
        """Join (or rejoin) the group until this member has an assignment of the current
        generation; starts the heartbeats. Returns the assignment."""
        await super().ensure_active_group()
        return self.assignment

    async def perform_assignment(
        self, leader_id: str, protocol: str, members: Mapping[str, bytes]
    ) -> dict[str, bytes]:
        subscriptions = {m: subscription_topics(metadata) for m, metadata in members.items()}
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        await self.client.refresh_metadata(topics)
        counts = {t: len(self.client.cluster.partitions_for(t) or []) for t in topics}
        assigned = range_assign(subscriptions, counts)
        return {m: encode_assignment(tps) for m, tps in assigned.items()}

    async def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str, assignment: bytes
    ) -> None:
        self.assignment = sorted(assignment_partitions(assignment))
        self._log.info(
            "Joined group %s with generation %d, assigned partitions: %s",
            self.group_id,
            generation_id,
            [str(tp) for tp in self.assignment],
        )

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets of `partitions` (those without one left out)."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if not by_topic:
            return {}
        body = {
            "group_id": self.group_id,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
        }
        for _ in range(self.client.retries + 1):
            answer = await self._send(ApiKey.OFFSET_FETCH, body)
            code = answer.get("error_code", 0)
            if code in COORDINATOR_RETRIABLE:
                self._mark_coordinator_unknown()
                await self.client.backoff()
                continue
            if code:
                raise error_for_code(code, None, f"Fetching the offsets of group {self.group_id}")
            result: dict[TopicPartition, int] = {}
            for t in answer["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        raise error_for_code(
                            p["error_code"],
                            None,
                            f"Fetching the offset of group {self.group_id} for "
                            f"{t['name']}-{p['partition_index']}",
                        )
                    if p["committed_offset"] >= 0:
                        result[TopicPartition(t["name"], p["partition_index"])] = p[
                            "committed_offset"
                        ]
            return result
        raise error_for_code(
            Errors.COORDINATOR_NOT_AVAILABLE, None, f"Fetching the offsets of group {self.group_id}"
        )

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit `offsets` (the next offset to read, per partition) for this member's
        generation."""
        if not offsets:
            return
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "commit_timestamp": -1,
                    "committed_metadata": "",
                }
            )
        body = {
            "group_id": self.group_id,
            "generation_id_or_member_epoch": self.generation_id,
            "member_id": self.member_id,
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        for _ in range(self.client.retries + 1):
            answer = await self._send(ApiKey.OFFSET_COMMIT, body)
            codes = {p["error_code"] for t in answer["topics"] for p in t["partitions"]}
            codes.discard(Errors.NONE)
            if not codes:
                return
            code = min(codes)
            if code in COORDINATOR_RETRIABLE:
                self._mark_coordinator_unknown()
                await self.client.backoff()
                continue
            if code in REJOIN_ERRORS:
                self.rejoin_needed = True
            raise error_for_code(code, None, f"Committing offsets of group {self.group_id}")
        raise error_for_code(
            Errors.COORDINATOR_NOT_AVAILABLE, None, f"Committing offsets of group {self.group_id}"
        )
