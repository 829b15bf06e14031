"""What a consumer hands a transactional producer to commit its position with a transaction
(Kafka's ConsumerGroupMetadata and OffsetAndMetadata, as `send_offsets_to_transaction`
takes them).

The group metadata fences zombies on the group coordinator (KIP-447): with a generation
and member id, a TxnOffsetCommit from a member the group has since dropped is refused
(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID). A group id alone (generation -1) skips that check,
as Kafka's `sendOffsetsToTransaction(offsets, groupId)` does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """A consumer's group, generation, member id and static instance id (KIP-447)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class OffsetAndMetadata:
    """An offset to commit (the next record to read), with its metadata and the leader
    epoch of the record before it (-1: unknown)."""

    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
