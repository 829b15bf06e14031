"""OffsetAndMetadata: one committed offset of a group for one partition."""

from __future__ import annotations

from dataclasses import dataclass

NO_LEADER_EPOCH = -1


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset with its leader epoch, metadata string, commit time, and an explicit
    expiry time when the commit asked for a retention (OffsetCommit v2-v4), else None."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None
