"""DelayedHeartbeat: a member's session timer.

Each heartbeat (and each JoinGroup / SyncGroup / commit of the member) completes the
previous timer and starts a new one of `session.timeout.ms`; a timer that runs out
removes the member from the group (or a pending member from the pending set), which
starts a rebalance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafpy.common.delayed_operation import DelayedOperation

if TYPE_CHECKING:
    from kafpy.coordinator.group_coordinator import GroupCoordinator
    from kafpy.coordinator.group_metadata import GroupMetadata


class DelayedHeartbeat(DelayedOperation):
    """Expires `member_id` of `group` unless it shows life before `deadline_ms`."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        group: GroupMetadata,
        member_id: str,
        is_pending: bool,
        deadline_ms: int,
        session_timeout_ms: int,
    ) -> None:
        super().__init__(session_timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending
        self.deadline_ms = deadline_ms

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_heartbeat(self)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self)
