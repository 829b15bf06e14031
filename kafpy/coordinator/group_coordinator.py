"""GroupCoordinator: consumer group membership, rebalances and offset commits (Kafka's GroupCoordinator).

Each group is coordinated by the leader of its partition of __consumer_offsets. A
rebalance moves a group Stable/Empty → PreparingRebalance (members rejoin; DelayedJoin
waits for them, InitialDelayedJoin first for an empty group) → CompletingRebalance (the
leader computes the assignment and sends it with SyncGroup) → Stable (the assignment is
written to the log and handed to every member). Heartbeats keep members alive
(DelayedHeartbeat is each member's session timer) and tell them of a new rebalance.

Everything runs on the broker's event loop. Operations answer through callbacks taking a
response dict (JoinGroup and SyncGroup may answer long after the request arrived); the
async wrappers in group_apis turn them into awaitables.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kafpy.common.delayed_operation import DelayedOperationPurgatory, TimerScheduler
from kafpy.common.logger import component_logger
from kafpy.common.scheduler import Scheduler
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.delayed_heartbeat import DelayedHeartbeat
from kafpy.coordinator.delayed_join import DelayedJoin, InitialDelayedJoin
from kafpy.coordinator.group_config import GroupConfig, OffsetConfig
from kafpy.coordinator.group_metadata import GroupMetadata, GroupState
from kafpy.coordinator.group_metadata_manager import (
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataManager,
    OffsetsLog,
)
from kafpy.coordinator.member_metadata import MemberMetadata
from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata
from kafpy.protocol.errors import Errors

NO_GENERATION = -1
NO_MEMBER_ID = ""
NO_LEADER = ""

Callback = Callable[[dict[str, Any]], None]


def join_error(member_id: str, error: int) -> dict[str, Any]:
    return {"error_code": error, "generation_id": NO_GENERATION, "protocol_name": "", "leader": NO_LEADER,
            "member_id": member_id, "members": []}  # fmt: skip


class GroupCoordinator:
    """Handles group membership and offsets for the groups whose offsets partition this broker leads."""

    def __init__(
        self,
        broker_id: int,
        group_config: GroupConfig,
        offset_config: OffsetConfig,
        offsets_log: OffsetsLog,
        time: Time,
        scheduler: Scheduler | None = None,
        timer: TimerScheduler | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.group_config = group_config
        self.offset_config = offset_config
        self.time = time
        self.manager = GroupMetadataManager(broker_id, offset_config, offsets_log, time, scheduler)
        self.heartbeat_purgatory: DelayedOperationPurgatory[DelayedHeartbeat] = (
            DelayedOperationPurgatory("Heartbeat", broker_id, timer)
        )
        self.join_purgatory: DelayedOperationPurgatory[DelayedJoin] = DelayedOperationPurgatory(
            "Rebalance", broker_id, timer
        )
        self.is_active = False
        self.log = component_logger(
            "kafpy.coordinator.GroupCoordinator", "GroupCoordinator", broker_id
        )

    # -- lifecycle ------------------------------------------------------------------------

    def startup(self) -> None:
        self.log.info("Starting up.")
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self.manager.startup(loop)
        self.is_active = True
        self.log.info("Startup complete.")

    def shutdown(self) -> None:
        self.log.info("Shutting down.")
        self.is_active = False
        self.manager.shutdown()
        self.heartbeat_purgatory.shutdown()
        self.join_purgatory.shutdown()
        self.log.info("Shutdown complete.")

    # -- leadership of offsets partitions -------------------------------------------------

    def on_election(self, partition: int) -> None:
        self.manager.schedule_load(partition, self._on_group_loaded)

    def on_resignation(self, partition: int) -> None:
        self.manager.remove_groups_for_partition(partition, self._on_group_unloaded)

    def _on_group_loaded(self, group: GroupMetadata) -> None:
        for member in group.members.values():
            self._complete_and_schedule_next_heartbeat(group, member)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        previous = group.state
        group.state = GroupState.DEAD
        self.log.info(
            "Unloading group metadata for %s with generation %d",
            group.group_id,
            group.generation_id,
        )
        for member in group.members.values():
            if previous is GroupState.PREPARING_REBALANCE and member.awaiting_join is not None:
                cb, member.awaiting_join = member.awaiting_join, None
                cb(join_error(member.member_id, Errors.NOT_COORDINATOR))
            if previous is GroupState.COMPLETING_REBALANCE and member.awaiting_sync is not None:
                cb, member.awaiting_sync = member.awaiting_sync, None
                cb({"error_code": Errors.NOT_COORDINATOR, "assignment": b""})
            self.heartbeat_purgatory.check_and_complete(
                ("member", group.group_id, member.member_id)
            )

    # -- validation -----------------------------------------------------------------------

    def _validate_group(self, group_id: str | None) -> int:
        """NONE, or the error a group request gets before it touches the group."""
        if not group_id:
            return Errors.INVALID_GROUP_ID
        if not self.is_active:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if self.manager.is_group_loading(group_id):
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if not self.manager.is_group_local(group_id):
            return Errors.NOT_COORDINATOR
        return Errors.NONE

    def partition_for(self, group_id: str) -> int:
        return self.manager.partition_for(group_id)

    # -- JoinGroup ------------------------------------------------------------------------

    def handle_join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: Callback,
    ) -> None:
        error = self._validate_group(group_id)
        if error != Errors.NONE:
            callback(join_error(member_id, error))
            return
        cfg = self.group_config
        if (
            not cfg.group_min_session_timeout_ms
            <= session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            callback(join_error(member_id, Errors.INVALID_SESSION_TIMEOUT))
            return
        is_unknown = member_id == NO_MEMBER_ID
        group = self.manager.get_group(group_id)
        if group is None:
            if not is_unknown:
                callback(join_error(member_id, Errors.UNKNOWN_MEMBER_ID))
                return
            group = self.manager.add_group(
                GroupMetadata(group_id, GroupState.EMPTY, self.time.milliseconds())
            )
        if not group.has(member_id) and len(group.members) >= cfg.group_max_size:
            callback(join_error(member_id, Errors.GROUP_MAX_SIZE_REACHED))
            self._maybe_complete_join(group)
            return
        if is_unknown:
            self._do_unknown_join(group, group_instance_id, require_known_member_id, client_id, client_host,
                                  rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, callback)  # fmt: skip
        else:
            self._do_join(group, member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                          session_timeout_ms, protocol_type, protocols, callback)  # fmt: skip
        # a join may be the last one a pending rebalance waits for
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: GroupMetadata) -> None:
        self.join_purgatory.check_and_complete(("group", group.group_id))

    def _do_unknown_join(
        self, group: GroupMetadata, group_instance_id: str | None, require_known_member_id: bool,
        client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
        protocol_type: str, protocols: list[tuple[str, bytes]], callback: Callback,
    ) -> None:  # fmt: skip
        if group.is_in(GroupState.DEAD):
            callback(join_error(NO_MEMBER_ID, Errors.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            callback(join_error(NO_MEMBER_ID, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = f"{client_id}-{uuid.uuid4()}"
        if group_instance_id is not None:
            old_member_id = group.static_member_id(group_instance_id)
            if old_member_id is not None and group.has(old_member_id):
                self._update_static_member_and_rebalance(
                    group, old_member_id, new_member_id, protocols, callback
                )
                return
            self._add_member_and_rebalance(group, new_member_id, group_instance_id, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                           callback)  # fmt: skip
            return
        if require_known_member_id:
            # KIP-394: hand out the id first; the member joins with it and is then counted
            group.pending_members.add(new_member_id)
            self._schedule_pending_member_expiration(group, new_member_id, session_timeout_ms)
            callback(join_error(new_member_id, Errors.MEMBER_ID_REQUIRED))
            return
        self._add_member_and_rebalance(group, new_member_id, None, client_id, client_host, rebalance_timeout_ms,
                                       session_timeout_ms, protocol_type, protocols, callback)  # fmt: skip

    def _do_join(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None, client_id: str,
        client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
        protocols: list[tuple[str, bytes]], callback: Callback,
    ) -> None:  # fmt: skip
        if group.is_in(GroupState.DEAD):
            callback(join_error(member_id, Errors.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            callback(join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        if member_id in group.pending_members:
            self.heartbeat_purgatory.check_and_complete(("member", group.group_id, member_id))
            self._add_member_and_rebalance(group, member_id, group_instance_id, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                           callback)  # fmt: skip
            return
        if self._is_static_member_fenced(group, member_id, group_instance_id):
            callback(join_error(member_id, Errors.FENCED_INSTANCE_ID))
            return
        member = group.members.get(member_id)
        if member is None:
            callback(join_error(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, protocols, callback)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # the member did not see the JoinGroup answer: send it again
                callback(self._join_response(group, member))
            else:
                self._update_member_and_rebalance(group, member, protocols, callback)
        elif group.is_in(GroupState.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, callback)
            else:
                callback(self._join_response(group, member, with_members=False))
        else:
            callback(join_error(member_id, Errors.UNKNOWN_MEMBER_ID))

    def _join_response(
        self, group: GroupMetadata, member: MemberMetadata, with_members: bool = True
    ) -> dict[str, Any]:
        members = []
        if with_members and group.is_leader(member.member_id) and group.protocol_name is not None:
            members = [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata(group.protocol_name)}
                for m in group.members.values()
            ]  # fmt: skip
        return {
            "error_code": Errors.NONE, "generation_id": group.generation_id,
            "protocol_type": group.protocol_type, "protocol_name": group.protocol_name or "",
            "leader": group.leader_id or NO_LEADER, "member_id": member.member_id, "members": members,
        }  # fmt: skip

    def _is_static_member_fenced(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None
    ) -> bool:
        if group_instance_id is None:
            return False
        known = group.static_member_id(group_instance_id)
        return known is not None and known != member_id

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None, client_id: str,
        client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
        protocols: list[tuple[str, bytes]], callback: Callback,
    ) -> None:  # fmt: skip
        member = MemberMetadata(
            member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
            protocol_type, list(protocols), awaiting_join=callback, is_new=True,
        )  # fmt: skip
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._complete_and_schedule_next_heartbeat(group, member)
        self._maybe_prepare_rebalance(
            group, f"Adding new member {member_id} with group instance id {group_instance_id}"
        )

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        protocols: list[tuple[str, bytes]],
        callback: Callback,
    ) -> None:
        member.supported_protocols = list(protocols)
        member.awaiting_join = callback
        self._maybe_prepare_rebalance(group, f"Updating metadata for member {member.member_id}")

    def _update_static_member_and_rebalance(
        self, group: GroupMetadata, old_member_id: str, new_member_id: str,
        protocols: list[tuple[str, bytes]], callback: Callback,
    ) -> None:  # fmt: skip
        old = group.members[old_member_id]
        # the old incarnation's pending answers tell it it is fenced
        if old.awaiting_join is not None:
            cb, old.awaiting_join = old.awaiting_join, None
            cb(join_error(old_member_id, Errors.FENCED_INSTANCE_ID))
        if old.awaiting_sync is not None:
            cb, old.awaiting_sync = old.awaiting_sync, None
            cb({"error_code": Errors.FENCED_INSTANCE_ID, "assignment": b""})
        self.heartbeat_purgatory.check_and_complete(("member", group.group_id, old_member_id))
        assert old.group_instance_id is not None
        member = group.replace_static_member(old.group_instance_id, old_member_id, new_member_id)
        self.log.info("Static member %s of group %s rejoined with member id %s",
                      member.group_instance_id, group.group_id, new_member_id)  # fmt: skip
        self._complete_and_schedule_next_heartbeat(group, member)
        if group.is_in(GroupState.STABLE) and member.matches(protocols):
            # same subscription: it keeps its assignment, no rebalance
            callback(self._join_response(group, member, with_members=False))
        else:
            self._update_member_and_rebalance(group, member, protocols, callback)

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, Errors.REBALANCE_IN_PROGRESS)
        if group.is_in(GroupState.EMPTY):
            delay = self.group_config.group_initial_rebalance_delay_ms
            op: DelayedJoin = InitialDelayedJoin(
                self, group, delay, max(group.rebalance_timeout_ms() - delay, 0)
            )
        else:
            op = DelayedJoin(self, group, group.rebalance_timeout_ms())
        group.transition_to(GroupState.PREPARING_REBALANCE, self.time.milliseconds())
        self.log.info(
            "Preparing to rebalance group %s in state %s with old generation %d (%s-%d) (reason: %s)",
            group.group_id, GroupState.PREPARING_REBALANCE.value, group.generation_id,
            GROUP_METADATA_TOPIC_NAME, self.partition_for(group.group_id), reason,
        )  # fmt: skip
        self.join_purgatory.try_complete_else_watch(op, [("group", group.group_id)])

    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool:
        if group.has_all_members_joined():
            return force_complete()
        return False

    def on_complete_join(self, group: GroupMetadata) -> None:
        if group.is_in(GroupState.DEAD):
            return
        for member in group.not_yet_rejoined():
            if member.is_static:
                continue  # static members keep their place until their session expires
            self.log.info("Member %s of group %s failed to rejoin before the rebalance timeout", member.member_id,
                          group.group_id)  # fmt: skip
            self._remove_heartbeat(group, member)
            group.remove(member.member_id)
        now = self.time.milliseconds()
        group.init_next_generation(now)
        if group.is_in(GroupState.EMPTY):
            self.log.info("Group %s with generation %d is now empty (%s-%d)", group.group_id, group.generation_id,
                          GROUP_METADATA_TOPIC_NAME, self.partition_for(group.group_id))  # fmt: skip
            asyncio.ensure_future(self._store_empty_group(group))
            return
        if (
            group.leader_id not in group.members
            or not group.members[group.leader_id].is_awaiting_join
        ):
            # the leader must be a member that joined this round
            group.leader_id = next(
                (m.member_id for m in group.members.values() if m.is_awaiting_join), None
            )
        self.log.info(
            "Stabilized group %s generation %d (%s-%d) with %d members", group.group_id, group.generation_id,
            GROUP_METADATA_TOPIC_NAME, self.partition_for(group.group_id), len(group.members),
        )  # fmt: skip
        for member in group.members.values():
            if member.awaiting_join is None:
                continue
            cb, member.awaiting_join = member.awaiting_join, None
            member.is_new = False
            cb(self._join_response(group, member))
            self._complete_and_schedule_next_heartbeat(group, member)

    async def _store_empty_group(self, group: GroupMetadata) -> None:
        error = await self.manager.store_group(group, {})
        if error != Errors.NONE:
            self.log.warning(
                "Failed to write empty metadata for group %s: %s",
                group.group_id,
                Errors(error).name,
            )

    # -- SyncGroup ------------------------------------------------------------------------

    def handle_sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
        callback: Callback,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> None:
        """SyncGroup; `protocol_type` / `protocol_name` (v5+) must match the group's."""

        def fail(error: int) -> None:
            callback({"error_code": error, "assignment": b""})

        error = self._validate_group(group_id)
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            error = Errors.REBALANCE_IN_PROGRESS  # the member will rejoin once loading is done
        if error != Errors.NONE:
            fail(error)
            return
        group = self.manager.get_group(group_id)
        if group is None:
            fail(Errors.UNKNOWN_MEMBER_ID)
            return
        if group.is_in(GroupState.DEAD):
            fail(Errors.COORDINATOR_NOT_AVAILABLE)
            return
        if self._is_static_member_fenced(group, member_id, group_instance_id):
            fail(Errors.FENCED_INSTANCE_ID)
            return
        member = group.members.get(member_id)
        if member is None:
            fail(Errors.UNKNOWN_MEMBER_ID)
            return
        if generation_id != group.generation_id:
            fail(Errors.ILLEGAL_GENERATION)
            return
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
            return
        if group.is_in(GroupState.EMPTY):
            fail(Errors.UNKNOWN_MEMBER_ID)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            fail(Errors.REBALANCE_IN_PROGRESS)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            member.awaiting_sync = callback
            self._complete_and_schedule_next_heartbeat(group, member)
            if group.is_leader(member_id):
                self.log.info("Assignment received from leader for group %s for generation %d",
                              group_id, group.generation_id)  # fmt: skip
                full = {m: assignments.get(m, b"") for m in group.members}
                asyncio.ensure_future(self._store_assignment(group, group.generation_id, full))
        else:  # Stable
            self._complete_and_schedule_next_heartbeat(group, member)
            callback({"error_code": Errors.NONE, "protocol_type": group.protocol_type,
                      "protocol_name": group.protocol_name, "assignment": member.assignment})  # fmt: skip

    async def _store_assignment(
        self, group: GroupMetadata, generation: int, assignment: dict[str, bytes]
    ) -> None:
        error = await self.manager.store_group(group, assignment)
        if not (group.is_in(GroupState.COMPLETING_REBALANCE) and group.generation_id == generation):
            return  # the group moved on while the write was in flight
        if error != Errors.NONE:
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(
                group, f"error {Errors(error).name} when storing the group assignment"
            )
            return
        for member_id, data in assignment.items():
            if member_id in group.members:
                group.members[member_id].assignment = data
        self._propagate_assignment(group, Errors.NONE)
        group.transition_to(GroupState.STABLE, self.time.milliseconds())

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            if member.awaiting_sync is not None:
                cb, member.awaiting_sync = member.awaiting_sync, None
                cb({"error_code": error, "protocol_type": group.protocol_type,
                    "protocol_name": group.protocol_name,
                    "assignment": member.assignment if error == Errors.NONE else b""})  # fmt: skip
                self._complete_and_schedule_next_heartbeat(group, member)

    # -- Heartbeat ------------------------------------------------------------------------

    def handle_heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        error = self._validate_group(group_id)
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            return Errors.NONE  # Kafka answers blindly while loading
        if error != Errors.NONE:
            return error
        group = self.manager.get_group(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if self._is_static_member_fenced(group, member_id, group_instance_id):
            return Errors.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if group.is_in(GroupState.EMPTY) or member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        self._complete_and_schedule_next_heartbeat(group, member)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    # -- LeaveGroup -----------------------------------------------------------------------

    def handle_leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """Remove members ((member id, group instance id) pairs); returns the top-level error
        and one error per member."""
        error = self._validate_group(group_id)
        if error != Errors.NONE:
            return error, [error] * len(leaving)
        group = self.manager.get_group(group_id)
        if group is None:
            return Errors.NONE, [Errors.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.is_in(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE, [Errors.COORDINATOR_NOT_AVAILABLE] * len(
                leaving
            )
        out: list[int] = []
        for member_id, instance_id in leaving:
            if instance_id is not None and member_id == NO_MEMBER_ID:
                member_id = (
                    group.static_member_id(instance_id) or NO_MEMBER_ID
                )  # leaving by instance id
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.heartbeat_purgatory.check_and_complete(("member", group.group_id, member_id))
                self._maybe_complete_join(group)
                out.append(Errors.NONE)
                continue
            if self._is_static_member_fenced(group, member_id, instance_id):
                out.append(Errors.FENCED_INSTANCE_ID)
                continue
            member = group.members.get(member_id)
            if member is None:
                out.append(Errors.UNKNOWN_MEMBER_ID)
                continue
            self.log.info("Member %s of group %s is leaving the group", member_id, group_id)
            self._remove_member_and_update_group(group, member, "removing member on LeaveGroup")
            out.append(Errors.NONE)
        return Errors.NONE, out

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, reason: str
    ) -> None:
        if member.awaiting_join is not None:
            cb, member.awaiting_join = member.awaiting_join, None
            cb(join_error(member.member_id, Errors.UNKNOWN_MEMBER_ID))
        if member.awaiting_sync is not None:
            cb, member.awaiting_sync = member.awaiting_sync, None
            cb({"error_code": Errors.UNKNOWN_MEMBER_ID, "assignment": b""})
        self._remove_heartbeat(group, member)
        group.remove(member.member_id)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        elif group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)

    # -- heartbeats (session timers) ------------------------------------------------------

    def _complete_and_schedule_next_heartbeat(
        self, group: GroupMetadata, member: MemberMetadata
    ) -> None:
        now = self.time.milliseconds()
        key = ("member", group.group_id, member.member_id)
        self.heartbeat_purgatory.check_and_complete(key)
        deadline = now + member.session_timeout_ms
        op = DelayedHeartbeat(
            self, group, member.member_id, False, deadline, member.session_timeout_ms
        )
        member.heartbeat_op = op
        self.heartbeat_purgatory.try_complete_else_watch(op, [key])

    def _schedule_pending_member_expiration(
        self, group: GroupMetadata, member_id: str, timeout_ms: int
    ) -> None:
        deadline = self.time.milliseconds() + timeout_ms
        op = DelayedHeartbeat(self, group, member_id, True, deadline, timeout_ms)
        self.heartbeat_purgatory.try_complete_else_watch(
            op, [("member", group.group_id, member_id)]
        )

    def _remove_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.heartbeat_op = None
        self.heartbeat_purgatory.check_and_complete(("member", group.group_id, member.member_id))

    def try_complete_heartbeat(self, op: DelayedHeartbeat) -> bool:
        group = op.group
        if op.is_pending:
            if op.member_id not in group.pending_members:
                return op.force_complete()
            return False
        member = group.members.get(op.member_id)
        if member is None or member.heartbeat_op is not op or group.is_in(GroupState.DEAD):
            return op.force_complete()  # superseded or gone
        return False

    def on_expire_heartbeat(self, op: DelayedHeartbeat) -> None:
        group = op.group
        if op.is_pending:
            if op.member_id in group.pending_members:
                self.log.info("Pending member %s in group %s has been removed after session timeout expiration.",
                              op.member_id, group.group_id)  # fmt: skip
                group.pending_members.discard(op.member_id)
                if group.is_in(GroupState.PREPARING_REBALANCE):
                    self._maybe_complete_join(group)
            return
        member = group.members.get(op.member_id)
        if member is None or member.heartbeat_op is not op or group.is_in(GroupState.DEAD):
            return
        if member.is_awaiting_join and not member.is_new:
            return  # a joined member waits for the rebalance, which has its own timeout
        self.log.info(
            "Member %s in group %s has failed, removing it from the group",
            member.member_id,
            group.group_id,
        )
        self._remove_member_and_update_group(
            group, member, f"removing member {member.member_id} on heartbeat expiration"
        )

    # -- offsets --------------------------------------------------------------------------

    async def handle_commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, int]:
        def all_error(error: int) -> dict[TopicPartition, int]:
            return dict.fromkeys(offsets, error)

        error = self._validate_group(group_id)
        if error != Errors.NONE:
            return all_error(error)
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return all_error(Errors.ILLEGAL_GENERATION)
            # a consumer managing its own partitions (generation -1): the group is just offsets
            group = self.manager.add_group(
                GroupMetadata(group_id, GroupState.EMPTY, self.time.milliseconds())
            )
        if group.is_in(GroupState.DEAD):
            return all_error(Errors.COORDINATOR_NOT_AVAILABLE)
        if self._is_static_member_fenced(group, member_id, group_instance_id):
            return all_error(Errors.FENCED_INSTANCE_ID)
        if not (generation_id < 0 and group.is_in(GroupState.EMPTY)):
            if group.is_in(GroupState.COMPLETING_REBALANCE):
                return all_error(Errors.REBALANCE_IN_PROGRESS)
            member = group.members.get(member_id)
            if member is None:
                return all_error(Errors.UNKNOWN_MEMBER_ID)
            if generation_id != group.generation_id:
                return all_error(Errors.ILLEGAL_GENERATION)
            self._complete_and_schedule_next_heartbeat(group, member)
        return await self.manager.store_offsets(group, offsets)

    async def handle_txn_commit_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit: write a transaction's offsets, pending until its marker.

        As Kafka 2.8: a group unknown here is created (Empty); the member id is checked
        only when given (v3+) and the generation only when not -1."""
        error = self._validate_group(group_id)
        if error == Errors.NONE:
            group = self.manager.get_group(group_id) or self.manager.add_group(
                GroupMetadata(group_id, GroupState.EMPTY, self.time.milliseconds())
            )
            if group.is_in(GroupState.DEAD):
                error = Errors.COORDINATOR_NOT_AVAILABLE
            elif self._is_static_member_fenced(group, member_id, group_instance_id):
                error = Errors.FENCED_INSTANCE_ID
            elif member_id and not group.has(member_id):
                error = Errors.UNKNOWN_MEMBER_ID
            elif generation_id >= 0 and generation_id != group.generation_id:
                error = Errors.ILLEGAL_GENERATION
            else:
                return await self.manager.store_offsets(group, offsets, producer_id, producer_epoch)
        return dict.fromkeys(offsets, error)

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with offsets still pending in an open transaction
        (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them)."""
        group = self.manager.get_group(group_id)
        if group is None:
            return set()
        return {tp for pending in group.pending_txn_offset_commits.values() for tp in pending}

    def handle_txn_completion(
        self, producer_id: int, partitions: set[int], is_commit: bool
    ) -> None:
        """A transaction marker was written to these __consumer_offsets partitions."""
        self.manager.handle_txn_completion(producer_id, partitions, is_commit)

    def handle_fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[int, dict[TopicPartition, OffsetAndMetadata | None]]:
        error = self._validate_group(group_id)
        if error != Errors.NONE:
            return error, {}
        return Errors.NONE, self.manager.get_offsets(group_id, partitions)

    async def handle_delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete (KIP-496): a group error, or an error per partition. An empty group
        loses the offsets asked for; a running consumer group loses those of topics it no
        longer subscribes to (GROUP_SUBSCRIBED_TO_TOPIC for the others); any other running
        group answers NON_EMPTY_GROUP."""
        error = self._validate_group(group_id)
        if error != Errors.NONE:
            return error, {}
        group = self.manager.get_group(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return Errors.GROUP_ID_NOT_FOUND, {}
        errors: dict[TopicPartition, int] = {}
        if group.is_in(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.protocol_type == "consumer":
            subscribed = group.subscribed_topics()
            eligible = []
            for tp in partitions:
                # unreadable subscriptions count as subscribed to everything, as in Kafka
                if subscribed is None or tp.topic in subscribed:
                    errors[tp] = Errors.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return Errors.NON_EMPTY_GROUP, {}
        if eligible:
            removed = await self.manager.delete_offsets(group, eligible)
            errors.update(dict.fromkeys(eligible, Errors.NONE))
            self.log.info(
                "The following offsets of the group %s were deleted: %s. A total of %d offsets "
                "were removed.", group_id, ", ".join(map(str, eligible)), removed,
            )  # fmt: skip
        return Errors.NONE, errors

    # -- ListGroups / DescribeGroups / DeleteGroups ---------------------------------------

    def handle_list_groups(self) -> tuple[int, list[GroupMetadata]]:
        if not self.is_active:
            return Errors.COORDINATOR_NOT_AVAILABLE, []
        error = Errors.COORDINATOR_LOAD_IN_PROGRESS if self.manager.is_loading() else Errors.NONE
        return error, self.manager.current_groups()

    def handle_describe_group(self, group_id: str) -> tuple[int, GroupMetadata | None]:
        error = self._validate_group(group_id)
        if error != Errors.NONE:
            return error, None
        return Errors.NONE, self.manager.get_group(group_id)

    async def handle_delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        eligible: list[GroupMetadata] = []
        for group_id in group_ids:
            error = self._validate_group(group_id)
            if error != Errors.NONE:
                results[group_id] = error
                continue
            group = self.manager.get_group(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                results[group_id] = Errors.GROUP_ID_NOT_FOUND
            elif group.is_in(GroupState.EMPTY):
                group.transition_to(GroupState.DEAD, self.time.milliseconds())
                eligible.append(group)
                results[group_id] = Errors.NONE
            else:
                results[group_id] = Errors.NON_EMPTY_GROUP
        if eligible:
            await self.manager.delete_groups(eligible)
            self.log.info(
                "The following groups were deleted: %s", ", ".join(g.group_id for g in eligible)
            )
        return results
