"""Broker changes: brokers joining, bouncing and failing, and replicas going offline.

As the broker membership part of Kafka's `kafka.controller.KafkaController`
(processBrokerChange, onBrokerStartup, onBrokerFailure, onReplicasBecomeOffline, and
processLeaderAndIsrResponseReceived, whose KAFKA_STORAGE_ERROR marks a replica on a failed
log dir offline): the /brokers/ids children against the ControllerContext's live brokers,
the channel to each broker, and the replica and partition state changes that follow.

The controller's event loop calls in here: the events (BrokerChange,
LeaderAndIsrResponseReceived) are queued and dispatched by KafkaController.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import Body, ControllerChannelManager
from kafpy.controller.controller_context import ControllerContext, PartitionAndReplica
from kafpy.controller.log_format import comma_list, controller_logger, error_name, scala_map
from kafpy.controller.partition_reassignment import PartitionReassignment
from kafpy.controller.partition_state_machine import PartitionState, PartitionStateMachine
from kafpy.controller.replica_state_machine import ReplicaState, ReplicaStateMachine
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.controller.topic_deletion_manager import TopicDeletionManager
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import WatchedEvent
from kafpy.protocol.errors import Errors


class BrokerChange:
    """Keeps the active controller's live brokers and their replicas' states in step with
    /brokers/ids and with the log dir failures brokers report.

    Parameters:
        controller_id: this broker's id (its log lines are the controller's).
        context: the controller's ControllerContext.
        zk_client: the broker's KafkaZkClient.
        channel_manager: the controller's connections to the brokers.
        replica_state_machine, partition_state_machine, topic_deletion_manager,
            partition_reassignment: the controller's; a returning broker may let
            deletions and reassignments waiting for it go on.
        state_change_logger: the controller's state-change logger.
        send_update_metadata_request: the controller's UpdateMetadata to brokers.
        broker_change_watcher: the controller's watch on /brokers/ids (it queues a
            BrokerChange event).
    """

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        channel_manager: ControllerChannelManager,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        topic_deletion_manager: TopicDeletionManager,
        partition_reassignment: PartitionReassignment,
        state_change_logger: StateChangeLogger,
        send_update_metadata_request: Callable[[Iterable[int], Iterable[TopicPartition]], None],
        broker_change_watcher: Callable[[WatchedEvent], None],
    ) -> None:
        self.context = context
        self.zk_client = zk_client
        self.channel_manager = channel_manager
        self.replica_state_machine = replica_state_machine
        self.partition_state_machine = partition_state_machine
        self.topic_deletion_manager = topic_deletion_manager
        self.partition_reassignment = partition_reassignment
        self.state_change_logger = state_change_logger
        self.send_update_metadata_request = send_update_metadata_request
        self.broker_change_watcher = broker_change_watcher
        self.log = controller_logger(controller_id)

    async def process_broker_change(self) -> None:
        """Kafka's processBrokerChange: compare /brokers/ids with the live brokers and run
        the startup and failure callbacks for the new, bounced and dead ones."""
        ctx = self.context
        current = await self.zk_client.get_all_broker_and_epochs_in_cluster(
            self.broker_change_watcher
        )
        current_ids = set(current)
        known_ids = ctx.live_or_shutting_down_broker_ids
        new_ids = current_ids - known_ids
        dead_ids = known_ids - current_ids
        bounced_ids = {
            b for b in current_ids & known_ids if current[b][1] > ctx.live_broker_epoch(b)
        }
        self.log.info(
            "Newly added brokers: %s, deleted brokers: %s, bounced brokers: %s, all live brokers: %s",
            comma_list(sorted(new_ids)),
            comma_list(sorted(dead_ids)),
            comma_list(sorted(bounced_ids)),
            comma_list(sorted(current_ids)),
        )
        for b in sorted(new_ids):
            self.channel_manager.add_broker(current[b][0])
        for b in sorted(bounced_ids):
            self.channel_manager.remove_broker(b)
            self.channel_manager.add_broker(current[b][0])
        for b in sorted(dead_ids):
            self.channel_manager.remove_broker(b)
        if new_ids:
            ctx.add_live_brokers_and_epochs({b: current[b] for b in new_ids})
            await self.on_broker_startup(sorted(new_ids))
        if bounced_ids:
            ctx.remove_live_brokers(bounced_ids)
            await self.on_broker_failure(sorted(bounced_ids))
            ctx.add_live_brokers_and_epochs({b: current[b] for b in bounced_ids})
            await self.on_broker_startup(sorted(bounced_ids))
        if dead_ids:
            ctx.remove_live_brokers(dead_ids)
            await self.on_broker_failure(sorted(dead_ids))

    async def on_broker_startup(self, new_brokers: list[int]) -> None:
        """UpdateMetadata to everyone (the new brokers get every partition), their replicas
        online, offline partitions re-elected, and deletions waiting for them resumed."""
        self.log.info("New broker startup callback for %s", comma_list(new_brokers))
        ctx = self.context
        for b in new_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
        existing = sorted(ctx.live_or_shutting_down_broker_ids - set(new_brokers))
        self.send_update_metadata_request(existing, [])
        self.send_update_metadata_request(new_brokers, list(ctx.partition_leadership_info))
        replicas = ctx.replicas_on_brokers(new_brokers)
        await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE_REPLICA)
        await self.partition_state_machine.trigger_online_partition_state_change()
        await self.partition_reassignment.maybe_resume_reassignments(
            lambda tp, a: any(r in new_brokers for r in a.target_replicas)
        )
        for_deletion = {
            r.topic
            for r in replicas
            if self.topic_deletion_manager.is_topic_queued_up_for_deletion(r.topic)
        }
        if for_deletion:
            self.log.info(
                "Some replicas %s for topics scheduled for deletion %s are on the newly restarted "
                "brokers %s. Signaling restart of topic deletion for these topics",
                comma_list(r for r in replicas if r.topic in for_deletion),
                comma_list(sorted(for_deletion)),
                comma_list(new_brokers),
            )
            await self.topic_deletion_manager.resume_deletion_for_topics(for_deletion)

    async def on_broker_failure(self, dead_brokers: list[int]) -> None:
        """Kafka's onBrokerFailure: the dead brokers' replicas go offline."""
        self.log.info("Broker failure callback for %s", comma_list(dead_brokers))
        for b in dead_brokers:
            self.context.replicas_on_offline_dirs.pop(b, None)
        await self.on_replicas_become_offline(self.context.replicas_on_brokers(dead_brokers))

    async def on_replicas_become_offline(self, offline: list[PartitionAndReplica]) -> None:
        """Partitions led by the offline replicas get a new leader (or go offline); the
        replicas become OfflineReplica; deletions involving them fail for now."""
        ctx, tdm = self.context, self.topic_deletion_manager
        for_deletion = [r for r in offline if tdm.is_topic_queued_up_for_deletion(r.topic)]
        not_for_deletion = [r for r in offline if not tdm.is_topic_queued_up_for_deletion(r.topic)]
        without_leader = [
            tp
            for tp, state in ctx.partition_leadership_info.items()
            if not ctx.is_replica_online(state.leader_and_isr.leader, tp)
            and not tdm.is_topic_queued_up_for_deletion(tp.topic)
        ]
        await self.partition_state_machine.handle_state_changes(
            without_leader, PartitionState.OFFLINE_PARTITION
        )
        await self.partition_state_machine.trigger_online_partition_state_change()
        await self.replica_state_machine.handle_state_changes(
            not_for_deletion, ReplicaState.OFFLINE_REPLICA
        )
        if for_deletion:
            await tdm.fail_replica_deletion(for_deletion)
        if not without_leader:
            # no election happened: tell the brokers about the dead ones
            self.send_update_metadata_request(sorted(ctx.live_or_shutting_down_broker_ids), [])

    async def process_leader_and_isr_response(self, broker_id: int, response: Body) -> None:
        """Kafka's processLeaderAndIsrResponseReceived: log the partition errors; replicas
        answering KAFKA_STORAGE_ERROR are offline, NONE online again."""
        request_error = int(response.get("error_code", 0))
        if request_error != 0:
            self.log.error(
                "Received error %s in LeaderAndIsr response from broker %d",
                error_name(request_error),
                broker_id,
            )
            return
        failed = {
            f"{p.get('topic_name', '')}-{p.get('partition_index')}": error_name(
                int(p["error_code"])
            )
            for p in _leader_and_isr_partition_errors(response, self.context.topic_names)
            if int(p.get("error_code", 0)) != 0
        }
        if failed:
            self.log.warning(
                "LeaderAndIsr response from broker %d has partition errors %s",
                broker_id,
                scala_map(failed),
            )
        # Kafka: KAFKA_STORAGE_ERROR marks the replica offline (its log dir failed), NONE
        # online again; the newly offline ones lose leadership and leave the ISR
        offline: set[TopicPartition] = set()
        online: set[TopicPartition] = set()
        for p in _leader_and_isr_partition_errors(response, self.context.topic_names):
            tp = TopicPartition(str(p.get("topic_name", "")), int(p["partition_index"]))
            code = int(p.get("error_code", 0))
            if code == Errors.KAFKA_STORAGE_ERROR:
                offline.add(tp)
            elif code == 0:
                online.add(tp)
        previous = self.context.replicas_on_offline_dirs.get(broker_id, set())
        current = (previous - online) | offline
        self.context.replicas_on_offline_dirs[broker_id] = current
        new_offline = sorted(current - previous)
        if new_offline:
            self.state_change_logger.info(
                f"Mark replicas {comma_list(new_offline)} on broker {broker_id} as offline"
            )
            await self.on_replicas_become_offline(
                [PartitionAndReplica(tp.topic, tp.partition, broker_id) for tp in new_offline]
            )


def _leader_and_isr_partition_errors(
    response: Body, topic_names: Mapping[uuid.UUID, str]
) -> list[dict[str, Any]]:
    """The partition errors of a LeaderAndIsr response with their topic names: v0-3 name
    each, v4 groups them by topic, v5 by topic id (named from the controller's context; a
    topic it no longer knows is left out, as Kafka's partitionErrors(topicNames) does)."""
    errors = response.get("partition_errors")
    if errors is not None:
        return list(errors)
    out: list[dict[str, Any]] = []
    for t in response.get("topics", []):
        name = t.get("topic_name")
        if name is None and t.get("topic_id") is not None:
            name = topic_names.get(t["topic_id"])
        if name is None:
            continue
        out.extend({**p, "topic_name": name} for p in t.get("partition_errors", []))
    return out
