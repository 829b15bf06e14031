"""MemberMetadata: one member of a group as the coordinator tracks it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MemberMetadata:
    """A group member: its ids, timeouts, the protocols it supports (name → metadata) in its
    order of preference, its current assignment, and the JoinGroup / SyncGroup answer it is
    waiting for (a callback taking the response dict) while a rebalance runs."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: Callable[[dict[str, Any]], None] | None = None
    awaiting_sync: Callable[[dict[str, Any]], None] | None = None
    is_new: bool = False
    heartbeat_satisfied: bool = False
    # the delayed heartbeat watching this member (its session timer)
    heartbeat_op: Any = field(default=None, repr=False)

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocols(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether a rejoin carries the same protocols and metadata (no rebalance needed)."""
        return protocols == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among `candidates`."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(
            f"member {self.member_id} supports none of the protocols {sorted(candidates)}"
        )
