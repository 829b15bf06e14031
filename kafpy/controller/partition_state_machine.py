"""PartitionStateMachine: the life of each partition as the controller sees it.

As Kafka's `kafka.controller.PartitionStateMachine`. A partition is NonExistent, New
(assigned, no leader yet), Online (has a live leader) or Offline (its leader died). Going
Online elects a leader: a new partition's first live assigned replica leads with the live
assigned replicas as ISR, its state node is created in ZooKeeper (leader epoch 0, fenced
by the controller epoch) and LeaderAndIsr goes to those replicas; an Offline or Online
partition gets a leader under an election strategy (offline: from its live ISR, or any
live replica when unclean election is allowed; preferred replica; controlled shutdown),
written to ZooKeeper with a version check. Every election, whatever triggered it, goes
through `handle_state_changes` and the state-change log. Invalid transitions are logged
to state-change.log and not applied.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Sequence

from kafpy.common.errors import ControllerMovedError
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import ControllerBrokerRequestBatch
from kafpy.controller.controller_context import ControllerContext
from kafpy.controller.log_format import comma_list
from kafpy.controller.partition_leader_election import (
    OfflinePartitionLeaderElectionStrategy,
    PartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.controller.state_machine import (
    MAX_ZK_UPDATE_ATTEMPTS,
    ControllerStateMachine,
    StateChangeFailedError,
)
from kafpy.metadata.errors import NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch


class PartitionState(enum.Enum):
    NEW_PARTITION = "NewPartition"
    ONLINE_PARTITION = "OnlinePartition"
    OFFLINE_PARTITION = "OfflinePartition"
    NON_EXISTENT_PARTITION = "NonExistentPartition"

    def __str__(self) -> str:
        return self.value


_S = PartitionState

VALID_PREVIOUS_STATES: dict[PartitionState, tuple[PartitionState, ...]] = {
    _S.NEW_PARTITION: (_S.NON_EXISTENT_PARTITION,),
    _S.ONLINE_PARTITION: (_S.NEW_PARTITION, _S.ONLINE_PARTITION, _S.OFFLINE_PARTITION),
    _S.OFFLINE_PARTITION: (_S.NEW_PARTITION, _S.ONLINE_PARTITION, _S.OFFLINE_PARTITION),
    _S.NON_EXISTENT_PARTITION: (_S.OFFLINE_PARTITION,),
}

# topic -> whether unclean leader election is enabled for it (its config, else the broker's)
UncleanLeaderElectionCheck = Callable[[str], Awaitable[bool]]


class PartitionStateMachine(ControllerStateMachine):
    """Moves partitions between states, electing leaders when they go online."""

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        batch: ControllerBrokerRequestBatch,
        state_change_logger: StateChangeLogger,
        is_topic_queued_for_deletion: Callable[[str], bool],
        unclean_leader_election_enabled: UncleanLeaderElectionCheck,
    ) -> None:
        super().__init__(
            "PartitionStateMachine",
            controller_id,
            context,
            zk_client,
            batch,
            state_change_logger,
            is_topic_queued_for_deletion,
        )
        self.unclean_leader_election_enabled = unclean_leader_election_enabled

    # -- start-up ---------------------------------------------------------------------------

    async def startup(self) -> None:
        self.log.info("Initializing partition state")
        self.initialize_partition_state()
        self.log.info("Triggering online partition state changes")
        await self.trigger_online_partition_state_change()

    def shutdown(self) -> None:
        self.log.info("Stopped partition state machine")

    def initialize_partition_state(self) -> None:
        for tp in self.context.all_partitions():
            leadership = self.context.partition_leadership_info.get(tp)
            if leadership is None:
                self.context.partition_states[tp] = PartitionState.NEW_PARTITION
            elif self.context.is_replica_online(leadership.leader_and_isr.leader, tp):
                self.context.partition_states[tp] = PartitionState.ONLINE_PARTITION
            else:
                self.context.partition_states[tp] = PartitionState.OFFLINE_PARTITION

    async def trigger_online_partition_state_change(self, topic: str | None = None) -> None:
        """Try to bring every New or Offline partition (of `topic`, default: of every topic)
        online, topics being deleted excepted; offline partitions elect from their ISR, or
        from any live replica where the topic's unclean.leader.election.enable allows it."""
        partitions = [
            tp
            for tp, s in self.context.partition_states.items()
            if s in (PartitionState.NEW_PARTITION, PartitionState.OFFLINE_PARTITION)
            and (topic is None or tp.topic == topic)
            and not self.is_topic_queued_for_deletion(tp.topic)
        ]
        await self.handle_state_changes(
            partitions,
            PartitionState.ONLINE_PARTITION,
            OfflinePartitionLeaderElectionStrategy(allow_unclean=False),
        )

    # -- queries ----------------------------------------------------------------------------

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self.context.partition_states.get(tp, PartitionState.NON_EXISTENT_PARTITION)

    # -- transitions ------------------------------------------------------------------------

    async def handle_state_changes(
        self,
        partitions: Iterable[TopicPartition],
        target_state: PartitionState,
        strategy: PartitionLeaderElectionStrategy | None = None,
    ) -> dict[TopicPartition, Exception]:
        """Move `partitions` to `target_state`; returns the partitions that failed.

        Online or Offline partitions going Online elect a leader under `strategy` (Kafka's
        handleStateChanges(partitions, OnlinePartition, Some(strategy))); without one they
        elect as offline partitions do, from the ISR unless the topic allows unclean
        election. New partitions going Online get their first leader whatever the strategy.
        """
        partitions = list(partitions)
        if not partitions:
            return {}
        return await self._in_request_batch(
            "partitions",
            target_state,
            lambda: self._do_handle_state_changes(
                partitions,
                target_state,
                strategy or OfflinePartitionLeaderElectionStrategy(allow_unclean=False),
            ),
            lambda e: {tp: e for tp in partitions},
        )

    def _log_failed_state_change(
        self, tp: TopicPartition, current: PartitionState, target: PartitionState, e: Exception
    ) -> None:
        self._scl().error(
            f"Controller {self.controller_id} epoch {self.context.epoch} failed to change state "
            f"for partition {tp} from {current} to {target}",
            e,
        )

    def _log_invalid_transition(self, tp: TopicPartition, target: PartitionState) -> None:
        current = self.partition_state(tp)
        e = StateChangeFailedError(
            f"Partition {tp} should be in one of {comma_list(VALID_PREVIOUS_STATES[target])} "
            f"states before moving to {target} state. Instead it is in {current} state"
        )
        self._log_failed_state_change(tp, current, target, e)

    async def _do_handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target: PartitionState,
        strategy: PartitionLeaderElectionStrategy,
    ) -> dict[TopicPartition, Exception]:
        ctx = self.context
        scl = self._scl()
        for tp in partitions:
            ctx.partition_states.setdefault(tp, PartitionState.NON_EXISTENT_PARTITION)
        valid: list[TopicPartition] = []
        failed: dict[TopicPartition, Exception] = {}
        for tp in partitions:
            if self.partition_state(tp) in VALID_PREVIOUS_STATES[target]:
                valid.append(tp)
            else:
                self._log_invalid_transition(tp, target)
                failed[tp] = StateChangeFailedError(f"invalid transition of {tp} to {target}")

        if target is PartitionState.NEW_PARTITION:
            for tp in valid:
                scl.trace(
                    f"Changed partition {tp} state from {self.partition_state(tp)} to {target} "
                    f"with assigned replicas {comma_list(ctx.partition_replica_assignment(tp))}"
                )
                ctx.partition_states[tp] = target

        elif target is PartitionState.ONLINE_PARTITION:
            uninitialized = [
                tp for tp in valid if self.partition_state(tp) is PartitionState.NEW_PARTITION
            ]
            to_elect = [
                tp for tp in valid if self.partition_state(tp) is not PartitionState.NEW_PARTITION
            ]
            if uninitialized:
                successful, init_failed = await self._initialize_leader_and_isr_for_partitions(
                    uninitialized
                )
                failed.update(init_failed)
                for tp in successful:
                    scl.trace(
                        f"Changed partition {tp} from {self.partition_state(tp)} to {target} with "
                        f"state {_describe(ctx.partition_leadership_info[tp].leader_and_isr)}"
                    )
                    ctx.partition_states[tp] = target
            if to_elect:
                elected, elect_failed = await self._elect_leader_for_partitions(to_elect, strategy)
                failed.update(elect_failed)
                for tp in elected:
                    scl.trace(
                        f"Changed partition {tp} from {self.partition_state(tp)} to {target} with "
                        f"state {_describe(ctx.partition_leadership_info[tp].leader_and_isr)}"
                    )
                    ctx.partition_states[tp] = target

        elif target in (PartitionState.OFFLINE_PARTITION, PartitionState.NON_EXISTENT_PARTITION):
            for tp in valid:
                scl.trace(
                    f"Changed partition {tp} state from {self.partition_state(tp)} to {target}"
                )
                ctx.partition_states[tp] = target
        return failed

    async def _initialize_leader_and_isr_for_partitions(
        self, partitions: Sequence[TopicPartition]
    ) -> tuple[list[TopicPartition], dict[TopicPartition, Exception]]:
        """Leader = first live assigned replica, ISR = live assigned replicas; state node
        created in ZooKeeper; LeaderAndIsr (is_new) to the ISR."""
        ctx = self.context
        failed: dict[TopicPartition, Exception] = {}
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            replicas = ctx.partition_replica_assignment(tp)
            live = [r for r in replicas if ctx.is_replica_online(r, tp)]
            if not live:
                e = StateChangeFailedError(
                    f"Controller {self.controller_id} epoch {ctx.epoch} encountered error during "
                    f"state change of partition {tp} from New to Online, assigned replicas are "
                    f"[{comma_list(replicas)}], live brokers are "
                    f"[{comma_list(sorted(ctx.live_broker_ids))}]. No assigned replica is alive."
                )
                self._log_failed_state_change(
                    tp, PartitionState.NEW_PARTITION, PartitionState.ONLINE_PARTITION, e
                )
                failed[tp] = e
                continue
            states[tp] = LeaderIsrAndControllerEpoch(
                LeaderAndIsr(live[0], 0, tuple(live), 0), ctx.epoch
            )
        if not states:
            return [], failed
        results = await self.zk_client.create_topic_partition_states(states, ctx.epoch_zk_version)
        successful: list[TopicPartition] = []
        for tp, error in results.items():
            if isinstance(error, ControllerMovedError):
                raise error
            if error is not None:
                if isinstance(error, NodeExistsError):
                    error = StateChangeFailedError(
                        f"Failed to create the state of partition {tp}: it already exists"
                    )
                self._log_failed_state_change(
                    tp, PartitionState.NEW_PARTITION, PartitionState.ONLINE_PARTITION, error
                )
                failed[tp] = error
                continue
            state = states[tp]
            ctx.partition_leadership_info[tp] = state
            self.batch.add_leader_and_isr_request_for_brokers(
                state.leader_and_isr.isr, tp, state, ctx.partition_replica_assignment(tp), True
            )
            successful.append(tp)
        return successful, failed

    async def _elect_leader_for_partitions(
        self, partitions: Sequence[TopicPartition], strategy: PartitionLeaderElectionStrategy
    ) -> tuple[list[TopicPartition], dict[TopicPartition, Exception]]:
        """Elect leaders under `strategy`, retrying the partitions whose state node another
        writer changed meanwhile (read again, elected again), at most
        MAX_ZK_UPDATE_ATTEMPTS times; every failure is logged to the state-change log."""
        elected: list[TopicPartition] = []
        failed: dict[TopicPartition, Exception] = {}
        remaining = list(partitions)
        for _ in range(MAX_ZK_UPDATE_ATTEMPTS):
            if not remaining:
                break
            done, errors, remaining = await self._do_elect_leader_for_partitions(
                remaining, strategy
            )
            elected.extend(done)
            failed.update(errors)
        for tp in remaining:
            failed[tp] = StateChangeFailedError(
                f"Failed to elect leader for partition {tp} under strategy {strategy}: its "
                f"state in ZooKeeper changed under every one of {MAX_ZK_UPDATE_ATTEMPTS} attempts "
                "(zkVersion conflict); giving up until the next election"
            )
        for tp, e in failed.items():
            self._log_failed_state_change(
                tp, self.partition_state(tp), PartitionState.ONLINE_PARTITION, e
            )
        return elected, failed

    async def _do_elect_leader_for_partitions(
        self, partitions: Sequence[TopicPartition], strategy: PartitionLeaderElectionStrategy
    ) -> tuple[list[TopicPartition], dict[TopicPartition, Exception], list[TopicPartition]]:
        """One round: read the states, choose leaders, write them with version checks.
        Returns (elected, failed, to retry)."""
        ctx = self.context
        failed: dict[TopicPartition, Exception] = {}
        current = await self.zk_client.get_topic_partition_states(partitions)
        new_states: dict[TopicPartition, LeaderAndIsr] = {}
        recipients: dict[TopicPartition, list[int]] = {}
        unclean_by_topic: dict[str, bool] = {}
        for tp in partitions:
            state = current.get(tp)
            if state is None:
                failed[tp] = StateChangeFailedError(
                    f"Failed to elect leader for partition {tp} since its leader and isr path "
                    "in zookeeper is empty"
                )
                continue
            if state.controller_epoch > ctx.epoch:
                failed[tp] = StateChangeFailedError(
                    f"Aborted leader election for partition {tp} since the LeaderAndIsr path was "
                    "already written by another controller. This probably means that the "
                    f"current controller {self.controller_id} went through a soft failure and "
                    f"another controller was elected with epoch {state.controller_epoch}."
                )
                continue
            lai = state.leader_and_isr
            assignment = ctx.partition_replica_assignment(tp)
            live = [r for r in assignment if ctx.is_replica_online(r, tp)]
            isr: list[int]
            if isinstance(strategy, OfflinePartitionLeaderElectionStrategy):
                live_isr = [r for r in lai.isr if ctx.is_replica_online(r, tp)]
                unclean = strategy.allow_unclean
                if not live_isr and not unclean:
                    if tp.topic not in unclean_by_topic:
                        unclean_by_topic[tp.topic] = await self.unclean_leader_election_enabled(
                            tp.topic
                        )
                    unclean = unclean_by_topic[tp.topic]
                leader = offline_partition_leader_election(assignment, lai.isr, live, unclean)
                if leader is None:
                    failed[tp] = StateChangeFailedError(
                        f"Failed to elect leader for partition {tp} under strategy {strategy}: no "
                        "replica in ISR is alive. Live brokers are: "
                        f"[{comma_list(sorted(ctx.live_broker_ids))}], ISR brokers are: "
                        f"[{comma_list(lai.isr)}]"
                    )
                    continue
                if not live_isr:
                    self.log.warning(
                        "No broker in ISR is alive for %s. Elect leader %d from live brokers "
                        "%s. There's potential data loss.",
                        tp,
                        leader,
                        comma_list(live),
                    )
                isr = live_isr if live_isr else [leader]
            elif isinstance(strategy, ReassignPartitionLeaderElectionStrategy):
                target = ctx.partition_full_replica_assignment(tp).target_replicas
                live = [r for r in target if ctx.is_replica_online(r, tp)]
                leader = reassign_partition_leader_election(target, lai.isr, live)
                isr = list(lai.isr)
            elif isinstance(strategy, PreferredReplicaPartitionLeaderElectionStrategy):
                leader = preferred_replica_partition_leader_election(assignment, lai.isr, live)
                isr = list(lai.isr)
            else:
                shutting = ctx.shutting_down_broker_ids
                leader = controlled_shutdown_partition_leader_election(
                    assignment, lai.isr, live, shutting
                )
                isr = [r for r in lai.isr if r not in shutting]
            if leader is None:
                failed[tp] = StateChangeFailedError(
                    f"Failed to elect leader for partition {tp} under strategy {strategy}: no "
                    f"eligible replica among the live assigned replicas [{comma_list(live)}] "
                    f"and the ISR [{comma_list(lai.isr)}]"
                )
                continue
            new_states[tp] = lai.new_leader_and_isr(leader, isr)
            recipients[tp] = live
        if not new_states:
            return [], failed, []
        result = await self.zk_client.update_leader_and_isr(
            new_states, ctx.epoch, ctx.epoch_zk_version
        )
        elected: list[TopicPartition] = []
        for tp, outcome in result.finished.items():
            if isinstance(outcome, Exception):
                failed[tp] = outcome
                continue
            state = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
            ctx.partition_leadership_info[tp] = state
            self.batch.add_leader_and_isr_request_for_brokers(
                recipients[tp], tp, state, ctx.partition_replica_assignment(tp), False
            )
            elected.append(tp)
        return elected, failed, list(result.partitions_to_retry)


def _describe(lai: LeaderAndIsr) -> str:
    return (
        f"LeaderAndIsr(leader={lai.leader}, leaderEpoch={lai.leader_epoch}, "
        f"isr={comma_list(lai.isr)}, zkVersion={lai.zk_version})"
    )
