"""Partition reassignment: moving a partition's replicas, as Kafka 2.8's controller does.

As the reassignment part of Kafka's `kafka.controller.KafkaController`
(onPartitionReassignment and its steps): a reassignment comes from the
AlterPartitionReassignments API (KIP-455) or from /admin/reassign_partitions; the
partition's RS (replicas), ORS (origin), TRS (target), AR (adding) and RR (removing) sets
live in its topic znode and in the ControllerContext while it runs; a watch on each
reassigning partition's state znode (Kafka's PartitionReassignmentIsrChangeHandler) lets an
ISR change complete it.

The controller's event loop calls in here: the events themselves (ApiPartitionReassignment,
ZkPartitionReassignment, PartitionReassignmentIsrChange, ListPartitionReassignments) are
queued and dispatched by KafkaController, which hands in the callbacks that queue them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kafpy.common.errors import ControllerMovedError
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import ControllerBrokerRequestBatch
from kafpy.controller.controller_context import ControllerContext, PartitionAndReplica
from kafpy.controller.log_format import comma_list, controller_logger, error_name, scala_map
from kafpy.controller.partition_leader_election import ReassignPartitionLeaderElectionStrategy
from kafpy.controller.partition_state_machine import PartitionState, PartitionStateMachine
from kafpy.controller.replica_state_machine import ReplicaState, ReplicaStateMachine
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.controller.state_machine import MAX_ZK_UPDATE_ATTEMPTS, StateChangeFailedError
from kafpy.controller.topic_deletion_manager import TopicDeletionManager
from kafpy.metadata.errors import NoNodeError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import WatchedEvent
from kafpy.metadata.zk_data import (
    LeaderIsrAndControllerEpoch,
    ReassignPartitionsZNode,
    ReplicaAssignment,
    TopicPartitionStateZNode,
    ZkDataError,
)
from kafpy.protocol.errors import Errors


class PartitionReassignment:
    """Starts, cancels, resumes and completes partition reassignments for the active
    controller, driving the replica and partition state machines through Kafka's steps.

    Parameters:
        controller_id: this broker's id (its log lines are the controller's).
        context: the controller's ControllerContext.
        zk_client: the broker's KafkaZkClient.
        replica_state_machine, partition_state_machine, topic_deletion_manager: the
            controller's; a reassigning topic is ineligible for deletion.
        request_batch: the controller's batch of LeaderAndIsr / UpdateMetadata requests.
        state_change_logger: the controller's state-change logger.
        send_update_metadata_request: the controller's UpdateMetadata to brokers.
        on_zk_partition_reassignment: queues a ZkPartitionReassignment event (the
            /admin/reassign_partitions watch fired, or the node was deleted and must be
            watched again).
        on_partition_reassignment_isr_change: queues a PartitionReassignmentIsrChange
            event for the partition whose state znode changed.
    """

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        topic_deletion_manager: TopicDeletionManager,
        request_batch: ControllerBrokerRequestBatch,
        state_change_logger: StateChangeLogger,
        send_update_metadata_request: Callable[[Iterable[int], Iterable[TopicPartition]], None],
        on_zk_partition_reassignment: Callable[[], None],
        on_partition_reassignment_isr_change: Callable[[TopicPartition], None],
    ) -> None:
        self.context = context
        self.zk_client = zk_client
        self.replica_state_machine = replica_state_machine
        self.partition_state_machine = partition_state_machine
        self.topic_deletion_manager = topic_deletion_manager
        self.request_batch = request_batch
        self.state_change_logger = state_change_logger
        self.send_update_metadata_request = send_update_metadata_request
        self.on_zk_partition_reassignment = on_zk_partition_reassignment
        self.on_partition_reassignment_isr_change = on_partition_reassignment_isr_change
        self.log = controller_logger(controller_id)
        # Kafka's PartitionReassignmentIsrChangeHandler: a stable watch callback on each
        # reassigning partition's state node, whose ISR changes may complete the reassignment
        self._isr_change_handlers: dict[TopicPartition, Callable[[WatchedEvent], None]] = {}

    def reset(self) -> None:
        """Forget the ISR change watches (the controller resigned)."""
        self._isr_change_handlers.clear()

    def partition_reassignment_watcher(self, event: WatchedEvent) -> None:
        """Kafka's PartitionReassignmentHandler: /admin/reassign_partitions was created."""
        self.on_zk_partition_reassignment()

    def _partition_reassignment_isr_change_handler(
        self, tp: TopicPartition
    ) -> Callable[[WatchedEvent], None]:
        handler = self._isr_change_handlers.get(tp)
        if handler is None:

            def handler(event: WatchedEvent) -> None:
                if tp in self._isr_change_handlers:
                    self.on_partition_reassignment_isr_change(tp)

            self._isr_change_handlers[tp] = handler
        return handler

    def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """The ongoing reassignments among `partitions` (None: all of them)."""
        ctx = self.context
        chosen = sorted(ctx.partitions_being_reassigned) if partitions is None else partitions
        result = {}
        for tp in chosen:
            assignment = ctx.partition_full_replica_assignment(tp)
            if assignment.is_being_reassigned:
                result[tp] = assignment
        return result

    async def initialize_partition_reassignments(self) -> None:
        """On failover: resume the reassignments ZooKeeper shows in progress."""
        # reassignments submitted through ZooKeeper while the controller failed over, then
        # those (from the API) the topic znodes show in progress
        zk_resumed = await self.process_zk_partition_reassignment()
        await self.maybe_resume_reassignments(lambda tp, _: tp not in zk_resumed)

    async def maybe_resume_reassignments(
        self, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]
    ) -> None:
        """Run the reassignment steps again for the reassigning partitions `should_resume`
        picks (a broker that returned may let them progress)."""
        ctx = self.context
        for tp in sorted(ctx.partitions_being_reassigned):
            assignment = ctx.partition_full_replica_assignment(tp)
            if should_resume(tp, assignment):
                await self._on_partition_reassignment(tp, assignment)

    async def process_zk_partition_reassignment(self) -> set[TopicPartition]:
        """/admin/reassign_partitions was created or changed: reassign its partitions; the
        ones that fail leave the node. Returns the partitions whose reassignment started."""
        store = self.zk_client.store
        path = ReassignPartitionsZNode.path
        if await store.exists(path, self.partition_reassignment_watcher) is None:
            return set()
        try:
            requested = await self.zk_client.get_partition_reassignment()
        except ZkDataError as e:
            self.log.error("Ignoring malformed %s: %s", path, e)
            return set()
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in requested.items():
            built = self._maybe_build_reassignment(tp, target)
            if built is None:
                results[tp] = (Errors.NO_REASSIGNMENT_IN_PROGRESS, None)
            else:
                to_reassign[tp] = built
        results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        failed = {tp for tp, (code, _) in results.items() if code != Errors.NONE}
        if failed:
            self.log.warning(
                "Failed reassignment through zk with the following errors: %s",
                scala_map({tp: error_name(results[tp][0]) for tp in sorted(failed)}),
            )
            await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, (code, _) in results.items() if code == Errors.NONE}

    async def process_api_partition_reassignment(
        self, reassignments: dict[TopicPartition, list[int] | None]
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        """Kafka's ApiPartitionReassignment: validate, then start (target replicas) or
        cancel (None) each partition's reassignment; partition -> (error code, message)."""
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in reassignments.items():
            error = self._validate_replicas(tp, target) if target is not None else None
            if error is not None:
                results[tp] = error
                continue
            built = self._maybe_build_reassignment(tp, target)
            if built is None:
                results[tp] = (Errors.NO_REASSIGNMENT_IN_PROGRESS, None)
            else:
                to_reassign[tp] = built
        # the latest reassignment (API or ZooKeeper) wins: drop those from the admin node
        await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
        results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        return results

    def _validate_replicas(
        self, tp: TopicPartition, replicas: list[int]
    ) -> tuple[int, str | None] | None:
        code = Errors.INVALID_REPLICA_ASSIGNMENT
        if not replicas:
            return code, "Empty replica list specified in partition reassignment."
        if len(set(replicas)) != len(replicas):
            return (
                code,
                "Duplicate replica ids in partition reassignment replica list: "
                f"List({', '.join(map(str, replicas))})",
            )
        if any(r < 0 for r in replicas):
            return code, f"Invalid broker id in replica list: List({', '.join(map(str, replicas))})"
        ctx = self.context
        new = ctx.partition_full_replica_assignment(tp).reassign_to(replicas)
        if not set(new.adding_replicas) <= ctx.live_broker_ids:
            return (
                code,
                "Replica assignment has brokers that are not alive. Replica list: "
                f"{comma_list(new.adding_replicas)}, live broker list: "
                f"{comma_list(sorted(ctx.live_broker_ids))}",
            )
        return None

    def _maybe_build_reassignment(
        self, tp: TopicPartition, target: list[int] | None
    ) -> ReplicaAssignment | None:
        """The new full assignment; a cancel (no target) reverts to the origin replicas,
        and is None when nothing is being reassigned."""
        current = self.context.partition_full_replica_assignment(tp)
        if current.is_being_reassigned:
            return current.reassign_to(list(current.origin_replicas) if target is None else target)
        return None if target is None else current.reassign_to(target)

    async def _maybe_trigger_partition_reassignment(
        self, reassignments: dict[TopicPartition, ReplicaAssignment]
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        for tp, reassignment in reassignments.items():
            if self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp.topic):
                self.log.info(
                    "Skipping reassignment of %s since the topic is currently being deleted", tp
                )
                results[tp] = (Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            elif not self.context.partition_replica_assignment(tp):
                results[tp] = (Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            else:
                try:
                    await self._on_partition_reassignment(tp, reassignment)
                    results[tp] = (Errors.NONE, None)
                except ControllerMovedError:
                    raise
                except Exception as e:
                    self.log.error("Error completing reassignment of partition %s: %s", tp, e)
                    results[tp] = (Errors.UNKNOWN_SERVER_ERROR, None)
        return results

    async def _on_partition_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        """Kafka's onPartitionReassignment. RS = current replicas, ORS = origin, TRS =
        target, AR = adding (TRS - ORS), RR = removing (ORS - TRS).

        While TRS is not all in the ISR: (A1) RS = ORS + TRS with AR and RR in ZooKeeper and
        LeaderAndIsr with a bumped leader epoch to every replica of RS, (A2) the AR replicas
        NewReplica. Once it is (this runs again on each ISR change): (B1) AR OnlineReplica,
        (B2) RS = TRS in memory, (B3) a new leader from TRS if the current one leaves or is
        dead, else a leader epoch bump, (B4-B5) RR OfflineReplica, ReplicaDeletionStarted
        (StopReplica with delete), ReplicaDeletionSuccessful, NonExistentReplica, (B6) RS =
        TRS in ZooKeeper, (B7) the partition out of /admin/reassign_partitions, (B8)
        UpdateMetadata to every broker."""
        self.topic_deletion_manager.mark_topic_ineligible_for_deletion([tp.topic])
        await self._update_current_reassignment(tp, reassignment)
        if not await self._is_reassignment_complete(tp, reassignment):
            await self._update_leader_epoch_and_send_request(tp, reassignment)
            for replica in reassignment.adding_replicas:
                await self.replica_state_machine.handle_state_changes(
                    [PartitionAndReplica(tp.topic, tp.partition, replica)],
                    ReplicaState.NEW_REPLICA,
                )
            return
        await self.replica_state_machine.handle_state_changes(
            [PartitionAndReplica(tp.topic, tp.partition, r) for r in reassignment.adding_replicas],
            ReplicaState.ONLINE_REPLICA,
        )
        completed = ReplicaAssignment.of(reassignment.target_replicas)
        self.context.update_partition_full_replica_assignment(tp, completed)
        await self._move_reassigned_partition_leader_if_required(tp, completed)
        await self._stop_removed_replicas_of_reassigned_partition(
            tp, reassignment.removing_replicas
        )
        await self._update_replica_assignment_for_partition(tp, completed)
        await self._remove_partition_from_reassigning_partitions(tp, completed)
        self.send_update_metadata_request(
            sorted(self.context.live_or_shutting_down_broker_ids), [tp]
        )
        await self.topic_deletion_manager.resume_deletion_for_topics([tp.topic])

    async def _update_current_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        ctx = self.context
        current = ctx.partition_full_replica_assignment(tp)
        if current != reassignment:
            self.log.debug("Updating assignment of partition %s from %s to %s",
                           tp, current, reassignment)  # fmt: skip
            await self._update_replica_assignment_for_partition(tp, reassignment)
            ctx.update_partition_full_replica_assignment(tp, reassignment)
            # replicas a previous reassignment was adding that this one does not need
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                await self._stop_removed_replicas_of_reassigned_partition(tp, unneeded)
        handler = self._partition_reassignment_isr_change_handler(tp)
        await self.zk_client.store.exists(TopicPartitionStateZNode.path(tp), handler)
        ctx.partitions_being_reassigned.add(tp)

    async def _is_reassignment_complete(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> bool:
        if not assignment.is_being_reassigned:
            return True
        state = await self.zk_client.get_topic_partition_state(tp)
        if state is None:
            return False
        return set(assignment.target_replicas) <= set(state.leader_and_isr.isr)

    async def maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        """Complete `tp`'s reassignment if its target replicas are all in the ISR."""
        assignment = self.context.partition_full_replica_assignment(tp)
        if await self._is_reassignment_complete(tp, assignment):
            self.log.info(
                "Target replicas %s have all caught up with the leader for reassigning "
                "partition %s",
                f"List({', '.join(map(str, assignment.target_replicas))})",
                tp,
            )
            await self._on_partition_reassignment(tp, assignment)

    async def process_partition_reassignment_isr_change(self, tp: TopicPartition) -> None:
        """The state znode of a reassigning partition changed: watch it again and complete
        the reassignment if the target replicas are all in the ISR now."""
        if tp not in self.context.partitions_being_reassigned:
            return
        # re-arm the watch (one-shot, as ZooKeeper's)
        handler = self._partition_reassignment_isr_change_handler(tp)
        await self.zk_client.store.exists(TopicPartitionStateZNode.path(tp), handler)
        await self.maybe_complete_reassignment(tp)

    async def _move_reassigned_partition_leader_if_required(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctx = self.context
        info = ctx.partition_leadership_info.get(tp)
        leader = info.leader_and_isr.leader if info is not None else -1
        replicas = comma_list(assignment.replicas)
        if leader not in assignment.replicas:
            self.log.info(
                "Leader %d for partition %s being reassigned, is not in the new list of "
                "replicas %s. Re-electing leader",
                leader,
                tp,
                replicas,
            )
            await self.partition_state_machine.handle_state_changes(
                [tp], PartitionState.ONLINE_PARTITION, ReassignPartitionLeaderElectionStrategy()
            )
        elif ctx.is_replica_online(leader, tp):
            self.log.info(
                "Leader %d for partition %s being reassigned is already in the new list of "
                "replicas %s and is alive",
                leader,
                tp,
                replicas,
            )
            await self._update_leader_epoch_and_send_request(tp, assignment)
        else:
            self.log.info(
                "Leader %d for partition %s being reassigned is already in the new list of "
                "replicas %s but is dead",
                leader,
                tp,
                replicas,
            )
            await self.partition_state_machine.handle_state_changes(
                [tp], PartitionState.ONLINE_PARTITION, ReassignPartitionLeaderElectionStrategy()
            )

    async def _stop_removed_replicas_of_reassigned_partition(
        self, tp: TopicPartition, removed: Iterable[int]
    ) -> None:
        replicas = [PartitionAndReplica(tp.topic, tp.partition, r) for r in removed]
        if not replicas:
            return
        rsm = self.replica_state_machine
        await rsm.handle_state_changes(replicas, ReplicaState.OFFLINE_REPLICA)
        await rsm.handle_state_changes(replicas, ReplicaState.REPLICA_DELETION_STARTED)
        await rsm.handle_state_changes(replicas, ReplicaState.REPLICA_DELETION_SUCCESSFUL)
        await rsm.handle_state_changes(replicas, ReplicaState.NON_EXISTENT_REPLICA)

    async def _update_replica_assignment_for_partition(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        topic_assignment = self.context.partition_full_replica_assignment_for_topic(tp.topic)
        topic_assignment[tp.partition] = assignment
        try:
            await self.zk_client.set_full_topic_assignment(
                tp.topic, topic_assignment, topic_id=self.context.topic_ids.get(tp.topic)
            )
        except NoNodeError as e:
            raise RuntimeError(
                f"Failed to update assignment for {tp} since the topic has no current assignment"
            ) from e
        self.log.info("Successfully updated assignment of partition %s to %s", tp, assignment)

    async def _update_leader_epoch_and_send_request(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        """Bump the leader epoch (even without a leader or ISR change, so the leader learns
        the new replica set) and send LeaderAndIsr to every replica in RS."""
        ctx = self.context
        updated: LeaderIsrAndControllerEpoch | None = None
        for _ in range(MAX_ZK_UPDATE_ATTEMPTS):
            state = await self.zk_client.get_topic_partition_state(tp)
            if state is None:
                raise RuntimeError(
                    f"Cannot update leader epoch for partition {tp} as leaderAndIsr path is "
                    "empty. This could mean we somehow tried to reassign a partition that "
                    "doesn't exist"
                )
            if state.controller_epoch > ctx.epoch:
                raise StateChangeFailedError(
                    "Leader and isr path written by another controller. This probably means "
                    f"the current controller with epoch {ctx.epoch} went through a soft "
                    "failure and another controller was elected with epoch "
                    f"{state.controller_epoch}. Aborting state change by this controller"
                )
            lai = state.leader_and_isr
            new = lai.new_leader_and_isr(lai.leader, lai.isr)
            result = await self.zk_client.update_leader_and_isr(
                {tp: new}, ctx.epoch, ctx.epoch_zk_version
            )
            outcome = result.finished.get(tp)
            if isinstance(outcome, Exception):
                raise outcome
            if outcome is not None:
                updated = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                ctx.partition_leadership_info[tp] = updated
                self.log.info(
                    "Updated leader epoch for partition %s to %d", tp, outcome.leader_epoch
                )
                break
        if updated is None:
            self.state_change_logger.error(
                f"Failed to send LeaderAndIsr request with new replica assignment {assignment} "
                f"to leader for partition being reassigned {tp}"
            )
            return
        self.request_batch.new_batch()
        self.request_batch.add_leader_and_isr_request_for_brokers(
            assignment.replicas, tp, updated, list(assignment.replicas), False
        )
        self.request_batch.send_requests_to_brokers(ctx.epoch)
        self.state_change_logger.info(
            f"Sent LeaderAndIsr request {updated} with new replica assignment {assignment} to "
            f"leader {updated.leader_and_isr.leader} for partition being reassigned {tp}"
        )

    async def _remove_partition_from_reassigning_partitions(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctx = self.context
        if tp not in ctx.partitions_being_reassigned:
            raise RuntimeError(
                "Cannot remove a reassigning partition because it is not present in memory"
            )
        self._isr_change_handlers.pop(tp, None)
        await self._maybe_remove_from_zk_reassignment(
            lambda t, replicas: t == tp and list(replicas) == list(assignment.replicas)
        )
        ctx.partitions_being_reassigned.discard(tp)

    async def _maybe_remove_from_zk_reassignment(
        self, should_remove: Callable[[TopicPartition, list[int]], bool]
    ) -> None:
        zk = self.zk_client
        if not await zk.reassign_partitions_in_progress():
            return
        try:
            current = await zk.get_partition_reassignment()
        except ZkDataError:
            current = {}
        removing = {tp: r for tp, r in current.items() if should_remove(tp, r)}
        remaining = {tp: r for tp, r in current.items() if not should_remove(tp, r)}
        self.log.info(
            "Removing partitions %s from the list of reassigned partitions in zookeeper",
            scala_map(removing),
        )
        if not remaining:
            self.log.info(
                "No more partitions need to be reassigned. Deleting zk path %s",
                ReassignPartitionsZNode.path,
            )
            await zk.delete_partition_reassignment()
            # watch again, for the next reassignment
            self.on_zk_partition_reassignment()
        else:
            await zk.set_or_create_partition_reassignment(remaining)
