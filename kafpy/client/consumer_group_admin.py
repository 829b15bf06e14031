"""ConsumerGroupAdmin: consumer groups through their coordinators, as Kafka's Admin sees them.

After the group half of Kafka's `KafkaAdminClient`: listConsumerGroups (ListGroups on every
broker), describeConsumerGroups (FindCoordinator, then DescribeGroups on the coordinator),
listConsumerGroupOffsets (OffsetFetch), alterConsumerGroupOffsets (OffsetCommit with no
generation, which the coordinator accepts only while the group has no members) and
deleteConsumerGroups (DeleteGroups). A request that meets a coordinator moving or loading
is sent again to the coordinator found anew (`client.find_coordinator`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.client.consumer_group_metadata import OffsetAndMetadata
from kafpy.client.find_coordinator import CoordinatorType, find_coordinator, send_to_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code, raise_for_code
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.consumer_protocol import assignment_partitions
from kafpy.protocol.errors import Errors


@dataclass(frozen=True)
class GroupListing:
    """A group as ListGroups names it."""

    group_id: str
    protocol_type: str
    state: str | None = None  # ListGroups v4+ only


@dataclass(frozen=True)
class MemberDescription:
    """One member of a group; `assignment` is decoded for consumer groups only."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ConsumerGroupDescription:
    """A group's state, protocol and members, and the broker coordinating it."""

    group_id: str
    state: str
    protocol_type: str
    assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: int


class ConsumerGroupAdmin:
    """Group operations on a KafkaClient; failures raise the KafkaError of the error code
    (GroupIdNotFoundError, UnknownMemberIdError, ...), naming the group.

    `timeout_ms` bounds the finding of a coordinator that is moving or loading (Kafka's
    `default.api.timeout.ms` of the admin call; default: the client's request timeout)."""

    def __init__(self, client: KafkaClient, *, timeout_ms: int | None = None) -> None:
        self.client = client
        self.timeout_ms = timeout_ms

    async def find_coordinator(self, group: str) -> int:
        """The id of the broker coordinating `group`."""
        return await find_coordinator(
            self.client,
            group,
            CoordinatorType.GROUP,
            timeout_ms=self.timeout_ms,
            context=f"Finding the coordinator of group '{group}'",
        )

    async def _to_coordinator(
        self, group: str, api: ApiKey, body: Mapping[str, Any]
    ) -> tuple[int, Any]:
        """Send to the group's coordinator, finding it again while it moves or loads."""
        return await send_to_coordinator(
            self.client,
            group,
            api,
            body,
            CoordinatorType.GROUP,
            timeout_ms=self.timeout_ms,
            context=f"Finding the coordinator of group '{group}'",
        )

    async def list_groups(self) -> list[GroupListing]:
        """Every group of every broker, sorted by id."""
        await self.client.refresh_metadata([])
        groups: dict[str, GroupListing] = {}
        for node in sorted(self.client.cluster.brokers):
            response = await self.client.send_to_node(node, ApiKey.LIST_GROUPS, {})
            raise_for_code(response["error_code"], None, f"Listing the groups of broker {node}")
            for g in response["groups"]:
                groups[g["group_id"]] = GroupListing(
                    g["group_id"], g["protocol_type"], g.get("group_state") or None
                )
        return [groups[g] for g in sorted(groups)]

    async def describe_group(self, group: str) -> ConsumerGroupDescription:
        """State, assignor and members of `group` (state Dead for a group that does not
        exist, as Kafka describes it)."""
        node, response = await self._to_coordinator(
            group, ApiKey.DESCRIBE_GROUPS, {"groups": [group]}
        )
        described: dict[str, Any] = response["groups"][0]
        raise_for_code(
            described["error_code"],
            described.get("error_message"),
            f"Describing group '{group}'",
        )
        consumer = described["protocol_type"] in ("consumer", "")
        members = tuple(
            MemberDescription(
                m["member_id"],
                m.get("group_instance_id"),
                m["client_id"],
                m["client_host"],
                tuple(assignment_partitions(m["member_assignment"]))
                if consumer and m["member_assignment"]
                else (),
            )
            for m in described["members"]
        )
        return ConsumerGroupDescription(
            group,
            described["group_state"],
            described["protocol_type"],
            described["protocol_data"],
            members,
            node,
        )

    async def list_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """The offsets `group` has committed, by partition."""
        committed = await self.list_group_offsets_and_metadata(group)
        return {tp: o.offset for tp, o in committed.items()}

    async def list_group_offsets_and_metadata(
        self, group: str
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets `group` has committed, with their metadata and leader epochs."""
        _, response = await self._to_coordinator(
            group, ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None}
        )
        raise_for_code(
            response.get("error_code", Errors.NONE),
            None,
            f"Fetching the offsets of group '{group}'",
        )
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for t in response["topics"]:
            for p in t["partitions"]:
                if p.get("error_code", Errors.NONE):
                    raise error_for_code(
                        p["error_code"],
                        None,
                        f"Fetching the offset of group '{group}' for {t['name']}-{p['partition_index']}",
                    )
                if p["committed_offset"] >= 0:
                    offsets[TopicPartition(t["name"], p["partition_index"])] = OffsetAndMetadata(
                        p["committed_offset"],
                        p.get("metadata"),
                        p.get("committed_leader_epoch", -1),
                    )
        return offsets

    async def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit `offsets` for `group` from outside it; the coordinator refuses
        (UNKNOWN_MEMBER_ID) while the group has active members."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": offset,
                    "committed_metadata": "",
                }
            )
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        _, response = await self._to_coordinator(group, ApiKey.OFFSET_COMMIT, body)
        for t in response["topics"]:
            for p in t["partitions"]:
                if p["error_code"] == Errors.UNKNOWN_MEMBER_ID:
                    raise error_for_code(
                        p["error_code"],
                        f"Group '{group}' has active members: stop its consumers before "
                        "resetting its offsets.",
                    )
                raise_for_code(
                    p["error_code"],
                    None,
                    f"Committing the offset of group '{group}' for {t['name']}-{p['partition_index']}",
                )

    async def delete_groups(self, groups: list[str]) -> dict[str, KafkaError | None]:
        """Delete each group (DeleteGroups on its coordinator): the error of each group
        that could not be deleted (GroupNotEmptyError, ...), None for those deleted."""
        results: dict[str, KafkaError | None] = {}
        for group in groups:
            _, response = await self._to_coordinator(
                group, ApiKey.DELETE_GROUPS, {"groups_names": [group]}
            )
            code = response["results"][0]["error_code"]
            results[group] = (
                error_for_code(code, None, f"Deleting group '{group}'") if code else None
            )
        return results
