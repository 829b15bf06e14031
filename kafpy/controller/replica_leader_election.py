"""Replica leader elections the controller runs on demand: preferred, unclean, controlled
shutdown, and the auto leader rebalance.

As the election part of Kafka's `kafka.controller.KafkaController`: ElectLeaders from an
admin client and /admin/preferred_replica_election (processReplicaLeaderElection), the
periodic auto leader rebalance (checkAndTriggerAutoLeaderRebalance) and the controlled
shutdown of a broker (doControlledShutdown). Each chooses partitions and a
PartitionLeaderElectionStrategy and lets the PartitionStateMachine elect (its algorithms
are in `partition_leader_election`).

The controller's event loop calls in here: the events (ReplicaLeaderElection,
AutoPreferredReplicaLeaderElection, ControlledShutdown) are queued and dispatched by
KafkaController, which hands in the callback that queues them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import NamedTuple

from kafpy.common.election_type import ElectionType
from kafpy.common.errors import ControllerMovedError
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_config import ControllerConfig
from kafpy.controller.controller_context import ControllerContext, PartitionAndReplica
from kafpy.controller.log_format import comma_list, controller_logger
from kafpy.controller.partition_leader_election import (
    ControlledShutdownPartitionLeaderElectionStrategy,
    OfflinePartitionLeaderElectionStrategy,
    PartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
)
from kafpy.controller.partition_state_machine import PartitionState, PartitionStateMachine
from kafpy.controller.replica_state_machine import ReplicaState, ReplicaStateMachine
from kafpy.controller.state_machine import StateChangeFailedError
from kafpy.controller.topic_deletion_manager import TopicDeletionManager
from kafpy.metadata.errors import NoNodeError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import WatchedEvent
from kafpy.metadata.zk_data import PreferredReplicaElectionZNode
from kafpy.protocol.errors import Errors


class ElectionTrigger(enum.Enum):
    """Who asked for a replica leader election (Kafka's ElectionTrigger)."""

    ZK_TRIGGERED = "ZkTriggered"
    AUTO_TRIGGERED = "AutoTriggered"
    ADMIN_CLIENT_TRIGGERED = "AdminClientTriggered"

    def __str__(self) -> str:
        return self.value


class ElectionResult(NamedTuple):
    """The outcome of one partition's election: its leader, or the error that stopped it
    (an `Errors` code, with the message an ElectLeaders response carries)."""

    error_code: int = Errors.NONE
    error_message: str | None = None
    leader: int = -1


class ReplicaLeaderElection:
    """Runs the active controller's requested leader elections through the partition and
    replica state machines.

    Parameters:
        config: the controller's configuration (leader.imbalance.per.broker.percentage).
        context: the controller's ControllerContext.
        zk_client: the broker's KafkaZkClient (/admin/preferred_replica_election).
        partition_state_machine, replica_state_machine, topic_deletion_manager: the
            controller's; topics queued for deletion are not elected.
        on_preferred_replica_election: queues a ReplicaLeaderElection event (the
            /admin/preferred_replica_election watch fired).
    """

    def __init__(
        self,
        config: ControllerConfig,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        partition_state_machine: PartitionStateMachine,
        replica_state_machine: ReplicaStateMachine,
        topic_deletion_manager: TopicDeletionManager,
        on_preferred_replica_election: Callable[[], None],
    ) -> None:
        self.config = config
        self.context = context
        self.zk_client = zk_client
        self.partition_state_machine = partition_state_machine
        self.replica_state_machine = replica_state_machine
        self.topic_deletion_manager = topic_deletion_manager
        self.on_preferred_replica_election = on_preferred_replica_election
        self.log = controller_logger(config.broker_id)

    def preferred_replica_election_watcher(self, event: WatchedEvent) -> None:
        """Kafka's PreferredReplicaElectionHandler: /admin/preferred_replica_election was
        created."""
        self.on_preferred_replica_election()

    async def do_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[int, list[TopicPartition]]:
        """Kafka's doControlledShutdown: move the leadership of `broker_id`'s partitions to
        other in-sync replicas and take it out of the ISRs it follows in. Returns (error
        code, the partitions it still leads)."""
        ctx = self.context
        self.log.info("Shutting down broker %d", broker_id)
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            return Errors.BROKER_NOT_AVAILABLE, []
        if broker_epoch != -1 and broker_epoch < ctx.live_broker_epoch(broker_id):
            return Errors.STALE_BROKER_EPOCH, []
        ctx.shutting_down_broker_ids.add(broker_id)
        self.log.debug(
            "All shutting down brokers: %s", comma_list(sorted(ctx.shutting_down_broker_ids))
        )
        self.log.debug("Live brokers: %s", comma_list(sorted(ctx.live_broker_ids)))
        to_act = [
            tp for tp in ctx.partitions_on_broker(broker_id)
            if tp in ctx.partition_leadership_info
            and len(ctx.partition_replica_assignment(tp)) > 1
            and not self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp.topic)
        ]  # fmt: skip
        led = [
            tp
            for tp in to_act
            if ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id
        ]
        followed = [tp for tp in to_act if tp not in set(led)]
        await self.partition_state_machine.handle_state_changes(
            led,
            PartitionState.ONLINE_PARTITION,
            ControlledShutdownPartitionLeaderElectionStrategy(),
        )
        await self.replica_state_machine.handle_state_changes(
            [PartitionAndReplica(tp.topic, tp.partition, broker_id) for tp in followed],
            ReplicaState.OFFLINE_REPLICA,
        )
        remaining = [
            tp for tp in ctx.partitions_on_broker(broker_id)
            if tp in ctx.partition_leadership_info
            and ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id
            and len(ctx.partition_replica_assignment(tp)) > 1
        ]  # fmt: skip
        self.log.info(
            "Broker %d leads %d partitions with replicas after the controlled shutdown: %s",
            broker_id,
            len(remaining),
            comma_list(remaining),
        )
        return Errors.NONE, remaining

    async def process_replica_leader_election(
        self,
        partitions: Iterable[TopicPartition],
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartition, ElectionResult]:
        """Kafka's processReplicaLeaderElection: unknown partitions and topics being
        deleted are refused, partitions whose leader is already right need no election,
        the rest are elected through the partition state machine."""
        ctx = self.context
        results: dict[TopicPartition, ElectionResult] = {}
        electable: list[TopicPartition] = []
        for tp in dict.fromkeys(partitions):
            assignment = ctx.partition_replica_assignment(tp)
            info = ctx.partition_leadership_info.get(tp)
            leader = info.leader_and_isr.leader if info is not None else -1
            if not assignment:
                results[tp] = ElectionResult(
                    Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            elif self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp.topic):
                results[tp] = ElectionResult(
                    Errors.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"
                )
            elif election_type is ElectionType.PREFERRED and leader == assignment[0]:
                results[tp] = ElectionResult(Errors.ELECTION_NOT_NEEDED, None, leader)
            elif election_type is ElectionType.UNCLEAN and ctx.is_replica_online(leader, tp):
                results[tp] = ElectionResult(Errors.ELECTION_NOT_NEEDED, None, leader)
            else:
                electable.append(tp)
        if not electable:
            return results
        self.log.info(
            "Starting replica leader election (%s) for partitions %s triggered by %s",
            election_type,
            ",".join(map(str, electable)),
            trigger,
        )
        psm = self.partition_state_machine
        strategy: PartitionLeaderElectionStrategy
        if election_type is ElectionType.PREFERRED:
            strategy = PreferredReplicaPartitionLeaderElectionStrategy()
        else:
            await psm.handle_state_changes(electable, PartitionState.OFFLINE_PARTITION)
            strategy = OfflinePartitionLeaderElectionStrategy(
                allow_unclean=trigger is ElectionTrigger.ADMIN_CLIENT_TRIGGERED
            )
        failed = await psm.handle_state_changes(
            electable, PartitionState.ONLINE_PARTITION, strategy
        )
        for tp in electable:
            error = failed.get(tp)
            if error is None:
                leader = ctx.partition_leadership_info[tp].leader_and_isr.leader
                results[tp] = ElectionResult(Errors.NONE, None, leader)
            elif isinstance(error, StateChangeFailedError):
                code = (
                    Errors.PREFERRED_LEADER_NOT_AVAILABLE
                    if election_type is ElectionType.PREFERRED
                    else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
                )
                results[tp] = ElectionResult(code, str(error))
            elif isinstance(error, ControllerMovedError):
                raise error
            else:
                results[tp] = ElectionResult(Errors.UNKNOWN_SERVER_ERROR, str(error))
            if error is not None and trigger is not ElectionTrigger.ADMIN_CLIENT_TRIGGERED:
                self.log.warning(
                    "Error completing replica leader election (%s) for partition %s: %s",
                    election_type,
                    tp,
                    error,
                )
        return results

    async def process_preferred_replica_election_znode(self) -> None:
        """/admin/preferred_replica_election (written by `kafpy leader-election`): move the
        listed partitions to their preferred leaders, then delete the node."""
        store = self.zk_client.store
        path = PreferredReplicaElectionZNode.path
        if await store.exists(path, self.preferred_replica_election_watcher) is None:
            return
        try:
            data, _ = await store.get(path)
            partitions = PreferredReplicaElectionZNode.decode(data)
        except NoNodeError:
            return
        except Exception as e:
            self.log.warning("Ignoring malformed %s: %s", path, e)
            partitions = set()
        if partitions:
            await self.process_replica_leader_election(
                sorted(partitions), ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED
            )
        try:
            await store.delete(path)
        except NoNodeError:
            pass
        await store.exists(path, self.preferred_replica_election_watcher)

    def imbalanced_partitions(self) -> list[TopicPartition]:
        """The partitions the auto leader rebalance moves, as Kafka's
        checkAndTriggerAutoLeaderRebalance chooses them.

        For each broker B, the imbalance ratio is the share of the partitions whose
        preferred replica is B that B does not lead (topics queued for deletion left out).
        Where it exceeds leader.imbalance.per.broker.percentage / 100, those partitions are
        candidates if B is online, no reassignment is running, the topic exists and B is in
        the ISR (the preferred replica could lead).
        """
        ctx = self.context
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in ctx.all_partitions():
            assignment = ctx.partition_replica_assignment(tp)
            if assignment and not self.topic_deletion_manager.is_topic_queued_up_for_deletion(
                tp.topic
            ):
                by_preferred.setdefault(assignment[0], []).append(tp)
        threshold = self.config.leader_imbalance_per_broker_percentage / 100
        out: list[TopicPartition] = []
        for broker, tps in sorted(by_preferred.items()):
            not_led = [
                tp for tp in tps
                if (info := ctx.partition_leadership_info.get(tp)) is not None
                and info.leader_and_isr.leader != broker
            ]  # fmt: skip
            ratio = len(not_led) / len(tps)
            self.log.debug("Leader imbalance ratio for broker %d is %s", broker, ratio)
            # compare ratios, not ratio * 100: 0.3 * 100 is 30.000000000000004
            if ratio <= threshold or ctx.partitions_being_reassigned:
                continue
            out.extend(
                tp for tp in not_led
                if ctx.is_replica_online(broker, tp)
                and tp.topic in ctx.all_topics
                and broker in ctx.partition_leadership_info[tp].leader_and_isr.isr
            )  # fmt: skip
        return out

    async def check_and_trigger_auto_leader_rebalance(self) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance: preferred leaders for the
        imbalanced partitions."""
        partitions = self.imbalanced_partitions()
        if partitions:
            await self.process_replica_leader_election(
                partitions, ElectionType.PREFERRED, ElectionTrigger.AUTO_TRIGGERED
            )
