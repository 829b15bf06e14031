"""ConsumerCoordinator: a consumer's membership of a consumer group (Kafka's
AbstractCoordinator + ConsumerCoordinator, for one subscribing member).

Finds the group's coordinator (FindCoordinator), joins the group (JoinGroup, with the
"consumer" protocol and the range assignor; the leader computes every member's partitions
and hands them out in SyncGroup), heartbeats on a background task, and learns from the
heartbeat answers that the group is rebalancing so the owner rejoins. It fetches the
group's committed offsets (OffsetFetch), commits new ones (OffsetCommit, with the member's
generation) and leaves the group on close (LeaveGroup), so the partitions move to the
other members at once instead of after the session timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from kafpy.client.consumer_config import CONSUMER_CONFIG_DEF
from kafpy.client.consumer_group_metadata import ConsumerGroupMetadata
from kafpy.client.find_coordinator import COORDINATOR_RETRIABLE, CoordinatorType, find_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaError
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
_REJOIN = (
    Errors.REBALANCE_IN_PROGRESS,
    Errors.ILLEGAL_GENERATION,
    Errors.UNKNOWN_MEMBER_ID,
)


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


class ConsumerCoordinator:
    """One member of consumer group `group_id` subscribed to `topics`.

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
        self.client = client
        self.group_id = group_id
        self.topics = sorted(set(topics))
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.member_id = ""
        self.generation_id = -1
        self.assignment: list[TopicPartition] = []
        self.rejoin_needed = True
        self._coordinator: int | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._log = component_logger(
            "kafpy.client.consumer_coordinator",
            f"Consumer clientId={client.client_id}, groupId={group_id}",
        )

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The member's group, generation and member id (Kafka's KafkaConsumer
        groupMetadata), for a transactional producer's send_offsets_to_transaction."""
        return ConsumerGroupMetadata(self.group_id, self.generation_id, self.member_id)

    async def _coordinator_id(self) -> int:
        if self._coordinator is None:
            self._coordinator = await find_coordinator(
                self.client,
                self.group_id,
                CoordinatorType.GROUP,
                context=f"Finding the coordinator of group {self.group_id}",
            )
        return self._coordinator

    async def _send(
        self, api_key: ApiKey, body: Mapping[str, Any], timeout_ms: int | None = None
    ) -> dict[str, Any]:
        node = await self._coordinator_id()
        try:
            return await self.client.send_to_node(node, api_key, body, timeout_ms=timeout_ms)
        except KafkaError:
            self._coordinator = None
            raise

    async def ensure_active_group(self) -> list[TopicPartition]:
        """Join (or rejoin) the group until this member has an assignment of the current
        generation; starts the heartbeats. Returns the assignment."""
        while self.rejoin_needed:
            await self._join_and_sync()
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(self._heartbeat_loop())
        return self.assignment

    async def _join_and_sync(self) -> None:
        join = await self._send(
            ApiKey.JOIN_GROUP,
            {
                "group_id": self.group_id,
                "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [
                    {"name": RANGE_ASSIGNOR, "metadata": encode_subscription(self.topics)}
                ],
            },
            # the coordinator answers once every member has joined
            timeout_ms=self.rebalance_timeout_ms + 5000,
        )
        code = join["error_code"]
        if code == Errors.MEMBER_ID_REQUIRED:
            self.member_id = join["member_id"]
            return
        if code == Errors.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return
        if code in COORDINATOR_RETRIABLE or code == Errors.REBALANCE_IN_PROGRESS:
            if code != Errors.REBALANCE_IN_PROGRESS:
                self._coordinator = None
            await self.client.backoff()
            return
        if code:
            raise error_for_code(code, None, f"Joining group {self.group_id}")
        self.member_id = join["member_id"]
        self.generation_id = join["generation_id"]
        assignments: list[dict[str, Any]] = []
        if join["leader"] == self.member_id:
            assignments = await self._assign(join["members"])
        sync = await self._send(
            ApiKey.SYNC_GROUP,
            {
                "group_id": self.group_id,
                "generation_id": self.generation_id,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocol_name": RANGE_ASSIGNOR,
                "assignments": assignments,
            },
        )
        code = sync["error_code"]
        if code in _REJOIN or code in COORDINATOR_RETRIABLE:
            if code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            return
        if code:
            raise error_for_code(code, None, f"Syncing group {self.group_id}")
        self.assignment = sorted(assignment_partitions(sync["assignment"]))
        self.rejoin_needed = False
        self._log.info(
            "Joined group %s with generation %d, assigned partitions: %s",
            self.group_id,
            self.generation_id,
            [str(tp) for tp in self.assignment],
        )

    async def _assign(self, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        subscriptions = {m["member_id"]: subscription_topics(m["metadata"]) for m in members}
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        await self.client.refresh_metadata(topics)
        counts = {t: len(self.client.cluster.partitions_for(t) or []) for t in topics}
        assigned = range_assign(subscriptions, counts)
        return [
            {"member_id": m, "assignment": encode_assignment(tps)} for m, tps in assigned.items()
        ]

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval_ms / 1000)
            if self.rejoin_needed:
                continue
            try:
                answer = await self._send(
                    ApiKey.HEARTBEAT,
                    {
                        "group_id": self.group_id,
                        "generation_id": self.generation_id,
                        "member_id": self.member_id,
                        "group_instance_id": None,
                    },
                )
            except KafkaError as e:
                self._log.debug("Heartbeat of group %s failed: %s", self.group_id, e)
                continue
            code = answer["error_code"]
            if code in _REJOIN:
                self._log.info("Group %s is rebalancing: rejoining", self.group_id)
                if code == Errors.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.rejoin_needed = True
            elif code in COORDINATOR_RETRIABLE:
                self._coordinator = None

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
                self._coordinator = None
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
                self._coordinator = None
                await self.client.backoff()
                continue
            if code in _REJOIN:
                self.rejoin_needed = True
            raise error_for_code(code, None, f"Committing offsets of group {self.group_id}")
        raise error_for_code(
            Errors.COORDINATOR_NOT_AVAILABLE, None, f"Committing offsets of group {self.group_id}"
        )

    async def close(self) -> None:
        """Stop heartbeating and leave the group (a failure to leave is only logged: the
        coordinator then drops the member after its session timeout)."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            try:
                await self._heartbeat
            except asyncio.CancelledError:
                pass
            self._heartbeat = None
        if not self.member_id:
            return
        try:
            await self._send(
                ApiKey.LEAVE_GROUP,
                {
                    "group_id": self.group_id,
                    "member_id": self.member_id,
                    "members": [{"member_id": self.member_id, "group_instance_id": None}],
                },
            )
        except KafkaError as e:
            self._log.info("Leaving group %s failed: %s", self.group_id, e)
        self.member_id = ""
        self.generation_id = -1
        self.rejoin_needed = True
