"""DelayedJoin and InitialDelayedJoin: a rebalance waiting for members to (re)join.

DelayedJoin completes as soon as every known member has sent JoinGroup, or when the
group's rebalance timeout runs out (members that did not rejoin are dropped then).
InitialDelayedJoin is the first rebalance of an empty group: it waits
`group.initial.rebalance.delay.ms`, and again each time a new member arrived meanwhile,
up to the rebalance timeout, so that consumers starting together land in one generation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafpy.common.delayed_operation import DelayedOperation

if TYPE_CHECKING:
    from kafpy.coordinator.group_coordinator import GroupCoordinator
    from kafpy.coordinator.group_metadata import GroupMetadata


class DelayedJoin(DelayedOperation):
    """A rebalance of `group` that completes when all members joined or the delay runs out."""

    def __init__(
        self, coordinator: GroupCoordinator, group: GroupMetadata, rebalance_timeout_ms: int
    ) -> None:
        super().__init__(rebalance_timeout_ms)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_join(self.group, self.force_complete)

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an empty group, extended while new members keep arriving."""

    def __init__(
        self, coordinator: GroupCoordinator, group: GroupMetadata, delay_ms: int, remaining_ms: int
    ) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.configured_delay_ms = coordinator.group_config.group_initial_rebalance_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        if group.new_member_added and self.remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.configured_delay_ms, self.remaining_ms)
            remaining = max(self.remaining_ms - self.configured_delay_ms, 0)
            self.coordinator.join_purgatory.try_complete_else_watch(
                InitialDelayedJoin(self.coordinator, group, delay, remaining),
                [("group", group.group_id)],
            )
        else:
            self.coordinator.on_complete_join(group)
