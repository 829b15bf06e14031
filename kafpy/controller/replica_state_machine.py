"""ReplicaStateMachine: the life of each replica as the controller sees it.

As Kafka's `kafka.controller.ReplicaStateMachine`. A replica is in one of seven states;
each target state lists the states it may be entered from, and an invalid transition is
logged as an error to state-change.log and not applied. Transitions queue the requests
they imply (LeaderAndIsr to the replica going online, StopReplica to one going offline
or being deleted, new ISRs written to ZooKeeper when a replica drops out) on the shared
ControllerBrokerRequestBatch, sent once per `handle_state_changes` call.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence

from kafpy.common.errors import ControllerMovedError
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import (
    ControllerBrokerRequestBatch,
    ResponseCallback,
)
from kafpy.controller.controller_context import ControllerContext, PartitionAndReplica
from kafpy.controller.log_format import comma_list
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.controller.state_machine import (
    MAX_ZK_UPDATE_ATTEMPTS,
    ControllerStateMachine,
    StateChangeFailedError,
)
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch


class ReplicaState(enum.Enum):
    NEW_REPLICA = "NewReplica"
    ONLINE_REPLICA = "OnlineReplica"
    OFFLINE_REPLICA = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT_REPLICA = "NonExistentReplica"

    def __str__(self) -> str:
        return self.value


_S = ReplicaState

# target state -> the states it may be entered from (Kafka's validPreviousStates)
VALID_PREVIOUS_STATES: dict[ReplicaState, tuple[ReplicaState, ...]] = {
    _S.NEW_REPLICA: (_S.NON_EXISTENT_REPLICA,),
    _S.ONLINE_REPLICA: (
        _S.NEW_REPLICA,
        _S.ONLINE_REPLICA,
        _S.OFFLINE_REPLICA,
        _S.REPLICA_DELETION_INELIGIBLE,
    ),
    _S.OFFLINE_REPLICA: (
        _S.NEW_REPLICA,
        _S.ONLINE_REPLICA,
        _S.OFFLINE_REPLICA,
        _S.REPLICA_DELETION_INELIGIBLE,
    ),
    _S.REPLICA_DELETION_STARTED: (_S.OFFLINE_REPLICA,),
    _S.REPLICA_DELETION_SUCCESSFUL: (_S.REPLICA_DELETION_STARTED,),
    _S.REPLICA_DELETION_INELIGIBLE: (_S.OFFLINE_REPLICA, _S.REPLICA_DELETION_STARTED),
    _S.NON_EXISTENT_REPLICA: (_S.REPLICA_DELETION_SUCCESSFUL,),
}


class ReplicaStateMachine(ControllerStateMachine):
    """Moves replicas between states and queues the requests each move implies."""

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        batch: ControllerBrokerRequestBatch,
        state_change_logger: StateChangeLogger,
        is_topic_queued_for_deletion: Callable[[str], bool],
    ) -> None:
        super().__init__(
            "ReplicaStateMachine",
            controller_id,
            context,
            zk_client,
            batch,
            state_change_logger,
            is_topic_queued_for_deletion,
        )

    # -- start-up ---------------------------------------------------------------------------

    async def startup(self) -> None:
        """Set every replica's initial state and bring the live ones online."""
        self.log.info("Initializing replica state")
        self.initialize_replica_state()
        self.log.info("Triggering online replica state changes")
        online = [
            r for r, s in self.context.replica_states.items() if s is ReplicaState.ONLINE_REPLICA
        ]
        await self.handle_state_changes(online, ReplicaState.ONLINE_REPLICA)

    def shutdown(self) -> None:
        self.log.info("Stopped replica state machine")

    def initialize_replica_state(self) -> None:
        for tp in self.context.all_partitions():
            for replica_id in self.context.partition_replica_assignment(tp):
                r = PartitionAndReplica(tp.topic, tp.partition, replica_id)
                if self.context.is_replica_online(replica_id, tp):
                    self.context.replica_states[r] = ReplicaState.ONLINE_REPLICA
                else:
                    # the broker is down: it cannot take part in a deletion until it returns
                    self.context.replica_states[r] = ReplicaState.REPLICA_DELETION_INELIGIBLE

    # -- queries ----------------------------------------------------------------------------

    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        return self.context.replica_states.get(replica, ReplicaState.NON_EXISTENT_REPLICA)

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionAndReplica]:
        return [
            r for r, s in self.context.replica_states.items() if r.topic == topic and s is state
        ]

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(r.topic == topic and s is state for r, s in self.context.replica_states.items())

    def is_at_least_one_replica_in_deletion_started_state(self, topic: str) -> bool:
        return self.is_any_replica_in_state(topic, ReplicaState.REPLICA_DELETION_STARTED)

    def are_all_replicas_for_topic_deleted(self, topic: str) -> bool:
        return all(
            self.replica_state(r) is ReplicaState.REPLICA_DELETION_SUCCESSFUL
            for r in self.context.replicas_for_topic(topic)
        )

    # -- transitions ------------------------------------------------------------------------

    async def handle_state_changes(
        self,
        replicas: Iterable[PartitionAndReplica],
        target_state: ReplicaState,
        callback: ResponseCallback | None = None,
    ) -> None:
        """Move `replicas` to `target_state` and send the requests that implies."""
        replicas = list(replicas)
        if not replicas:
            return

        async def move() -> None:
            by_broker: dict[int, list[PartitionAndReplica]] = {}
            for r in replicas:
                by_broker.setdefault(r.replica, []).append(r)
            for replica_id, rs in by_broker.items():
                await self._do_handle_state_changes(replica_id, rs, target_state, callback)

        await self._in_request_batch("replicas", target_state, move, lambda e: None)

    def _is_valid_transition(self, replica: PartitionAndReplica, target: ReplicaState) -> bool:
        return self.replica_state(replica) in VALID_PREVIOUS_STATES[target]

    def _log_successful_transition(
        self, replica_id: int, tp: TopicPartition, current: ReplicaState, target: ReplicaState
    ) -> None:
        self._scl().trace(
            f"Changed state of replica {replica_id} for partition {tp} from {current} to {target}"
        )

    def _log_failed_state_change(
        self,
        replica: PartitionAndReplica,
        current: ReplicaState,
        target: ReplicaState,
        e: Exception,
    ) -> None:
        self._scl().error(
            f"Controller {self.controller_id} epoch {self.context.epoch} initiated state change "
            f"of replica {replica.replica} for partition {replica.topic_partition} from "
            f"{current} to {target} failed",
            e,
        )

    def _log_invalid_transition(self, replica: PartitionAndReplica, target: ReplicaState) -> None:
        current = self.replica_state(replica)
        valid = comma_list(VALID_PREVIOUS_STATES[target])
        e = StateChangeFailedError(
            f"Replica {replica} should be in the {valid} states before moving to {target} "
            f"state. Instead it is in {current} state"
        )
        self._log_failed_state_change(replica, current, target, e)

    def _set_state(self, replica: PartitionAndReplica, target: ReplicaState) -> None:
        current = self.replica_state(replica)
        self.context.replica_states[replica] = target
        self._log_successful_transition(replica.replica, replica.topic_partition, current, target)

    async def _do_handle_state_changes(
        self,
        replica_id: int,
        replicas: Sequence[PartitionAndReplica],
        target: ReplicaState,
        callback: ResponseCallback | None,
    ) -> None:
        for r in replicas:
            self.context.replica_states.setdefault(r, ReplicaState.NON_EXISTENT_REPLICA)
        valid = []
        for r in replicas:
            if self._is_valid_transition(r, target):
                valid.append(r)
            else:
                self._log_invalid_transition(r, target)
        ctx = self.context

        if target is ReplicaState.NEW_REPLICA:
            for r in valid:
                tp = r.topic_partition
                leadership = ctx.partition_leadership_info.get(tp)
                if leadership is not None:
                    if leadership.leader_and_isr.leader == replica_id:
                        self._log_failed_state_change(
                            r,
                            self.replica_state(r),
                            target,
                            StateChangeFailedError(
                                f"Replica {replica_id} for partition {tp} cannot be moved to "
                                "NewReplica state as it is being requested to become leader"
                            ),
                        )
                        continue
                    self.batch.add_leader_and_isr_request_for_brokers(
                        [replica_id], tp, leadership, ctx.partition_replica_assignment(tp), True
                    )
                self._set_state(r, target)

        elif target is ReplicaState.ONLINE_REPLICA:
            for r in valid:
                tp = r.topic_partition
                if self.replica_state(r) is ReplicaState.NEW_REPLICA:
                    assignment = ctx.partition_replica_assignment(tp)
                    if replica_id not in assignment:
                        ctx.update_partition_replica_assignment(tp, assignment + [replica_id])
                else:
                    leadership = ctx.partition_leadership_info.get(tp)
                    if leadership is not None:
                        self.batch.add_leader_and_isr_request_for_brokers(
                            [replica_id],
                            tp,
                            leadership,
                            ctx.partition_replica_assignment(tp),
                            False,
                        )
                self._set_state(r, target)

        elif target is ReplicaState.OFFLINE_REPLICA:
            for r in valid:
                self.batch.add_stop_replica_request_for_brokers(
                    [replica_id], r.topic_partition, delete_partition=False
                )
            with_leadership = [
                r for r in valid if r.topic_partition in ctx.partition_leadership_info
            ]
            without_leadership = [
                r for r in valid if r.topic_partition not in ctx.partition_leadership_info
            ]
            updated = await self._remove_replicas_from_isr(
                replica_id, [r.topic_partition for r in with_leadership]
            )
            for r in with_leadership:
                tp = r.topic_partition
                state = updated.get(tp)
                if state is None:
                    continue  # failed; logged by _remove_replicas_from_isr
                if not self.is_topic_queued_for_deletion(tp.topic):
                    assignment = ctx.partition_replica_assignment(tp)
                    recipients = [b for b in assignment if b != replica_id]
                    self.batch.add_leader_and_isr_request_for_brokers(
                        recipients, tp, state, assignment, False
                    )
                self._set_state(r, target)
            for r in without_leadership:
                self._set_state(r, target)

        elif target is ReplicaState.REPLICA_DELETION_STARTED:
            for r in valid:
                self.batch.add_stop_replica_request_for_brokers(
                    [replica_id], r.topic_partition, delete_partition=True, callback=callback
                )
                self._set_state(r, target)

        elif target in (
            ReplicaState.REPLICA_DELETION_INELIGIBLE,
            ReplicaState.REPLICA_DELETION_SUCCESSFUL,
        ):
            for r in valid:
                self._set_state(r, target)

        elif target is ReplicaState.NON_EXISTENT_REPLICA:
            for r in valid:
                tp = r.topic_partition
                current = self.replica_state(r)
                assignment = ctx.partition_replica_assignment(tp)
                ctx.update_partition_replica_assignment(
                    tp, [b for b in assignment if b != replica_id]
                )
                ctx.replica_states.pop(r, None)
                self._log_successful_transition(replica_id, tp, current, target)

    async def _remove_replicas_from_isr(
        self, replica_id: int, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Take `replica_id` out of the ISR (and leadership) of `partitions` in ZooKeeper,
        with version checks, retrying partitions whose state moved meanwhile (at most
        MAX_ZK_UPDATE_ATTEMPTS rounds; the partitions still conflicting then are logged).

        The first round writes over the controller's cached states, whose zkVersion fences
        the write, instead of reading every state first: taking the replicas of a 1,000
        partition topic offline is then 1,000 writes per broker, not 1,000 reads and 1,000
        writes. Partitions whose version moved, or whose cached ISR lacks the replica, are
        read from ZooKeeper."""
        results: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        remaining = list(partitions)
        for attempt in range(MAX_ZK_UPDATE_ATTEMPTS):
            if not remaining:
                break
            done, remaining = await self._do_remove_replicas_from_isr(
                replica_id, remaining, use_cache=attempt == 0
            )
            results.update(done)
        for tp in remaining:
            r = PartitionAndReplica(tp.topic, tp.partition, replica_id)
            self._log_failed_state_change(
                r,
                self.replica_state(r),
                ReplicaState.OFFLINE_REPLICA,
                StateChangeFailedError(
                    f"Failed to remove replica {replica_id} from the ISR of partition {tp}: its "
                    f"state in ZooKeeper changed under every one of {MAX_ZK_UPDATE_ATTEMPTS} "
                    "attempts (zkVersion conflict)"
                ),
            )
        return results

    async def _do_remove_replicas_from_isr(
        self, replica_id: int, partitions: Sequence[TopicPartition], use_cache: bool
    ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch], list[TopicPartition]]:
        ctx = self.context
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        if use_cache:
            for tp in partitions:
                cached = ctx.partition_leadership_info.get(tp)
                if cached is not None and replica_id in cached.leader_and_isr.isr:
                    states[tp] = cached
        unread = [tp for tp in partitions if tp not in states]
        if unread:
            states.update(await self.zk_client.get_topic_partition_states(unread))
        done: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        to_update: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in partitions:
            state = states.get(tp)
            if state is None:
                if not self.is_topic_queued_for_deletion(tp.topic):
                    self._log_failed_state_change(
                        PartitionAndReplica(tp.topic, tp.partition, replica_id),
                        self.replica_state(PartitionAndReplica(tp.topic, tp.partition, replica_id)),
                        ReplicaState.OFFLINE_REPLICA,
                        StateChangeFailedError(
                            f"Failed to change state of replica {replica_id} for partition {tp} "
                            "since the leader and isr path in zookeeper is empty"
                        ),
                    )
                continue
            if state.controller_epoch > ctx.epoch:
                raise ControllerMovedError(
                    f"Leader and isr of partition {tp} was written by a controller with epoch "
                    f"{state.controller_epoch}, newer than this controller's {ctx.epoch}."
                )
            lai = state.leader_and_isr
            if replica_id not in lai.isr:
                updated = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
                ctx.partition_leadership_info[tp] = updated
                done[tp] = updated
                continue
            new_leader = LeaderAndIsr.NO_LEADER if lai.leader == replica_id else lai.leader
            # the last ISR member stays, so an unclean election can be told apart later
            new_isr = lai.isr if len(lai.isr) == 1 else tuple(b for b in lai.isr if b != replica_id)
            to_update[tp] = lai.new_leader_and_isr(new_leader, new_isr)
        if not to_update:
            return done, []
        result = await self.zk_client.update_leader_and_isr(
            to_update, ctx.epoch, ctx.epoch_zk_version
        )
        for tp, outcome in result.finished.items():
            r = PartitionAndReplica(tp.topic, tp.partition, replica_id)
            if isinstance(outcome, Exception):
                self._log_failed_state_change(
                    r, self.replica_state(r), ReplicaState.OFFLINE_REPLICA, outcome
                )
                continue
            updated = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
            ctx.partition_leadership_info[tp] = updated
            done[tp] = updated
        return done, list(result.partitions_to_retry)
