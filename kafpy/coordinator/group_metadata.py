"""GroupMetadata: one group's state machine, members and committed offsets.

States and the transitions Kafka allows (the table names each state's valid previous
states): Empty ← PreparingRebalance; PreparingRebalance ← Stable, CompletingRebalance,
Empty; CompletingRebalance ← PreparingRebalance; Stable ← CompletingRebalance; Dead ←
Stable, PreparingRebalance, CompletingRebalance, Empty, Dead.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.member_metadata import MemberMetadata
from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata
from kafpy.protocol.consumer_protocol import subscription_topics


class GroupState(enum.Enum):
    """A group's state; the value is the name Kafka shows (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalGroupTransition(Exception):
    """A transition the state table does not allow (a coordinator bug)."""


class GroupMetadata:
    """A consumer group: state, generation, chosen protocol, leader, members (with static
    members by group.instance.id), members still to join with a server-given id, and the
    group's committed offsets (plus commits written but not yet acknowledged)."""

    def __init__(
        self, group_id: str, state: GroupState = GroupState.EMPTY, now_ms: int = -1
    ) -> None:
        self.group_id = group_id
        self.state = state
        self.current_state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[TopicPartition, int] = {}
        # offsets written by a transaction (TxnOffsetCommit), by producer id: they become
        # the group's offsets at the COMMIT marker and go at the ABORT marker
        self.pending_txn_offset_commits: dict[int, dict[TopicPartition, OffsetAndMetadata]] = {}
        # the log offset of the record batch behind each offset (committed or pending): at a
        # COMMIT marker a pending offset replaces only an older one (Kafka's
        # CommitRecordMetadataAndOffset)
        self.commit_record_offsets: dict[TopicPartition, int] = {}
        self._pending_txn_record_offsets: dict[int, dict[TopicPartition, int]] = {}
        self.new_member_added = False

    def __repr__(self) -> str:
        return (
            f"GroupMetadata({self.group_id}, {self.state.value}, generation {self.generation_id})"
        )

    # -- state ----------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int = -1) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise IllegalGroupTransition(
                f"Group {self.group_id} should be in one of {sorted(s.value for s in _VALID_PREVIOUS[target])} "
                f"before moving to {target.value}, but it is {self.state.value}"
            )
        self.state = target
        self.current_state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # -- members --------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def replace_static_member(
        self, group_instance_id: str, old_id: str, new_id: str
    ) -> MemberMetadata:
        """A static member came back with a new member id: it keeps its place and assignment."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == sum(
            1 for m in self.members.values() if m.is_awaiting_join
        ) and not (self.pending_members)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        members = list(self.members.values())
        if not members:
            return set()
        common = members[0].protocols()
        for m in members[1:]:
            common &= m.protocols()
        return common

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        """Whether a (re)joining member with these protocols fits the group."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & protocols)

    def select_protocol(self) -> str:
        """The protocol with most votes among those every member supports (Kafka's rule;
        ties go to the first candidate in the members' order)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda p: votes[p])

    def init_next_generation(self, now_ms: int) -> None:
        if self.members:
            self.generation_id += 1
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.generation_id += 1
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    # -- offsets --------------------------------------------------------------------------

    def has_offsets(self) -> bool:
        return (
            bool(self.offsets)
            or bool(self.pending_offset_commits)
            or bool(self.pending_txn_offset_commits)
        )

    def record_offset_commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], record_offset: int
    ) -> None:
        """Offsets written (not transactionally) by the batch at `record_offset`."""
        self.offsets.update(offsets)
        for tp in offsets:
            self.commit_record_offsets[tp] = record_offset

    def prepare_txn_offset_commit(
        self,
        producer_id: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        record_offset: int,
    ) -> None:
        """Hold a transaction's offsets, written by the batch at `record_offset`, until
        its marker comes."""
        self.pending_txn_offset_commits.setdefault(producer_id, {}).update(offsets)
        records = self._pending_txn_record_offsets.setdefault(producer_id, {})
        for tp in offsets:
            records[tp] = record_offset

    def complete_pending_txn_offset_commit(self, producer_id: int, is_commit: bool) -> None:
        """The producer's transaction ended: on commit each of its offsets becomes the
        group's, unless an offset written later (not transactionally) is there."""
        pending = self.pending_txn_offset_commits.pop(producer_id, None)
        records = self._pending_txn_record_offsets.pop(producer_id, {})
        if not pending or not is_commit:
            return
        for tp, om in pending.items():
            record_offset = records.get(tp, -1)
            if tp not in self.offsets or self.commit_record_offsets.get(tp, -1) < record_offset:
                self.offsets[tp] = om
                self.commit_record_offsets[tp] = record_offset

    def subscribed_topics(self) -> set[str] | None:
        """Topics the consumer members subscribe to (None when the group is not 'consumer'
        or a subscription cannot be read)."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                topics |= set(subscription_topics(m.metadata(self.protocol_name)))
            except (KeyError, ValueError):
                return None
        return topics

    def summary(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "state": self.state.value, "generation": self.generation_id,
                "members": list(self.members)}  # fmt: skip
