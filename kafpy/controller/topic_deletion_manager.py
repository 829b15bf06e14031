"""TopicDeletionManager: deleting topics replica by replica, resuming when it can.

As Kafka's `kafka.controller.TopicDeletionManager` (the event-driven form of the
DeleteTopicsThread in the seeds). A topic marked under /admin/delete_topics is queued
(`topics_to_be_deleted`, `partitions_to_be_deleted`); `resume_deletions` walks the queue:

- every replica ReplicaDeletionSuccessful → `complete_delete_topic`: the partition
  modifications listener goes, replicas become NonExistentReplica, partitions
  OfflinePartition then NonExistentPartition, and /brokers/topics/<t>, /config/topics/<t>,
  /admin/delete_topics/<t> are deleted;
- a replica ReplicaDeletionStarted → deletion in progress, nothing to do;
- a replica ReplicaDeletionIneligible → `mark_topic_for_deletion_retry` (back to
  OfflineReplica);
- then, if the topic is eligible (not ineligible, nothing in progress) → `on_topic_deletion`:
  UpdateMetadata (leader -2, so brokers stop serving it) and `start_replica_deletion`:
  dead replicas → ReplicaDeletionIneligible (the topic becomes ineligible), live ones →
  OfflineReplica (StopReplica delete=false) → ReplicaDeletionStarted (StopReplica
  delete=true, whose response comes back as an event calling `complete_replica_deletion`
  or `fail_replica_deletion`, each resuming deletions).

A topic is ineligible while one of its replicas is on a dead broker or it is being
reassigned; `resume_deletion_for_topics` clears that when the broker returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import Body, ResponseCallback
from kafpy.controller.controller_context import ControllerContext, PartitionAndReplica
from kafpy.controller.log_format import comma_list, controller_logger, error_name, scala_map
from kafpy.controller.partition_state_machine import PartitionState, PartitionStateMachine
from kafpy.controller.replica_state_machine import ReplicaState, ReplicaStateMachine
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import WatchedEvent


class TopicDeletionManager:
    """Queues topics for deletion and drives their replicas through the deletion states."""

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        delete_topic_enable: bool,
        send_update_metadata_request: Callable[[Iterable[int], Iterable[TopicPartition]], None],
        deregister_partition_modifications_handler: Callable[[str], None],
        stop_replica_callback: ResponseCallback,
        topic_deletion_watcher: Callable[[WatchedEvent], None],
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.zk_client = zk_client
        self.replica_state_machine = replica_state_machine
        self.partition_state_machine = partition_state_machine
        self.is_delete_topic_enabled = delete_topic_enable
        self.send_update_metadata_request = send_update_metadata_request
        self.deregister_partition_modifications_handler = deregister_partition_modifications_handler
        self.stop_replica_callback = stop_replica_callback
        self.topic_deletion_watcher = topic_deletion_watcher
        self.log = component_logger(
            "kafpy.controller.TopicDeletionManager", "Topic Deletion Manager", None
        )
        self.log.prefix = f"[Topic Deletion Manager {controller_id}] "
        # what Kafka's KafkaController logs about deletions (the marker znodes, StopReplica
        # responses) keeps the controller's logger and prefix
        self.controller_log = controller_logger(controller_id)

    # the queues live in the context (they are rebuilt with it on failover)
    @property
    def topics_to_be_deleted(self) -> set[str]:
        return self.context.topics_to_be_deleted

    @property
    def partitions_to_be_deleted(self) -> set[TopicPartition]:
        return self.context.partitions_to_be_deleted

    @property
    def topics_ineligible_for_deletion(self) -> set[str]:
        return self.context.topics_ineligible_for_deletion

    async def init(
        self, initial_topics_to_be_deleted: set[str], initial_topics_ineligible: set[str]
    ) -> None:
        """Load the deletions a previous controller left (its markers in ZooKeeper)."""
        if self.is_delete_topic_enabled:
            self.topics_to_be_deleted.update(initial_topics_to_be_deleted)
            for topic in initial_topics_to_be_deleted:
                self.partitions_to_be_deleted.update(self.context.partitions_for_topic(topic))
            self.topics_ineligible_for_deletion.update(
                initial_topics_ineligible & self.topics_to_be_deleted
            )
        elif initial_topics_to_be_deleted:
            self.log.info(
                "Removing %s since delete topic is disabled",
                comma_list(sorted(initial_topics_to_be_deleted)),
            )
            await self.zk_client.delete_topic_deletions(initial_topics_to_be_deleted)

    async def try_topic_deletion(self) -> None:
        if self.is_delete_topic_enabled:
            await self.resume_deletions()

    def reset(self) -> None:
        if self.is_delete_topic_enabled:
            self.topics_to_be_deleted.clear()
            self.partitions_to_be_deleted.clear()
            self.topics_ineligible_for_deletion.clear()

    async def fetch_topic_deletions_in_progress(self) -> tuple[set[str], set[str]]:
        """On failover: the topics marked for deletion (watching /admin/delete_topics), and
        those of them ineligible (a replica offline, or being reassigned)."""
        ctx = self.context
        to_delete = set(await self.zk_client.get_topic_deletions(self.topic_deletion_watcher))
        with_offline_replicas = {
            r.topic
            for topic in to_delete
            for r in ctx.replicas_for_topic(topic)
            if not ctx.is_replica_online(r.replica, r.topic_partition)
        }
        being_reassigned = {tp.topic for tp in ctx.partitions_being_reassigned}
        ineligible = with_offline_replicas | (being_reassigned & to_delete)
        self.controller_log.info("List of topics to be deleted: %s", comma_list(sorted(to_delete)))
        self.controller_log.info(
            "List of topics ineligible for deletion: %s", comma_list(sorted(ineligible))
        )
        return to_delete, ineligible

    async def process_topic_deletion(self) -> None:
        """Kafka's processTopicDeletion: /admin/delete_topics changed; queue the marked
        topics (or remove their markers when they do not exist or deletion is disabled)."""
        ctx = self.context
        topics = set(await self.zk_client.get_topic_deletions(self.topic_deletion_watcher))
        self.controller_log.debug(
            "Delete topics listener fired for topics %s to be deleted", comma_list(sorted(topics))
        )
        non_existent = topics - ctx.all_topics
        if non_existent:
            self.controller_log.warning(
                "Ignoring request to delete non-existing topics %s",
                comma_list(sorted(non_existent)),
            )
            await self.zk_client.delete_topic_deletions(sorted(non_existent))
        topics -= non_existent
        if self.is_delete_topic_enabled:
            if topics:
                self.controller_log.info(
                    "Starting topic deletion for topics %s", comma_list(sorted(topics))
                )
                busy = {
                    tp.topic
                    for tp in ctx.partitions_being_reassigned
                    | ctx.partitions_undergoing_preferred_replica_election
                }
                await self.enqueue_topics_for_deletion(topics, ineligible=topics & busy)
        else:
            for topic in sorted(topics):
                self.controller_log.info(
                    "Removing /admin/delete_topics/%s since delete topic is disabled", topic
                )
                await self.zk_client.delete_topic_deletions([topic])

    async def process_topic_deletion_stop_replica_response(
        self, broker_id: int, response: Body
    ) -> None:
        """Kafka's processTopicDeletionStopReplicaResponseReceived: the replicas the
        StopReplica (delete) response names are deleted, or failed to be."""
        request_error = int(response.get("error_code", 0))
        partition_errors = {
            TopicPartition(p["topic_name"], p["partition_index"]): int(p["error_code"])
            for p in response.get("partition_errors", [])
            if self.is_topic_queued_up_for_deletion(p["topic_name"])
        }
        self.controller_log.debug(
            "Delete topic callback invoked on StopReplica response received from broker %d: "
            "request error = %s, partition errors = %s",
            broker_id,
            error_name(request_error),
            scala_map({tp: error_name(code) for tp, code in partition_errors.items()}),
        )
        if request_error != 0:
            in_error = set(partition_errors)
        else:
            in_error = {tp for tp, code in partition_errors.items() if code != 0}
        await self.fail_replica_deletion(
            [PartitionAndReplica(tp.topic, tp.partition, broker_id) for tp in sorted(in_error)]
        )
        deleted = [tp for tp in partition_errors if tp not in in_error]
        if deleted:
            await self.complete_replica_deletion(
                [PartitionAndReplica(tp.topic, tp.partition, broker_id) for tp in deleted]
            )

    # -- queue --------------------------------------------------------------------------------

    async def enqueue_topics_for_deletion(
        self, topics: Iterable[str], ineligible: Iterable[str] = ()
    ) -> None:
        """Queue `topics`; those in `ineligible` (a reassignment or election is running)
        wait until it ends."""
        if self.is_delete_topic_enabled:
            topics = set(topics)
            self.topics_to_be_deleted.update(topics)
            for topic in topics:
                self.partitions_to_be_deleted.update(self.context.partitions_for_topic(topic))
            self.mark_topic_ineligible_for_deletion(ineligible)
            await self.resume_deletions()

    async def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        """Called when what made the topics ineligible went away (e.g. a broker returned)."""
        if self.is_delete_topic_enabled:
            to_resume = set(topics) & self.topics_to_be_deleted
            if to_resume:
                self.topics_ineligible_for_deletion.difference_update(to_resume)
                await self.resume_deletions()

    async def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        if self.is_delete_topic_enabled:
            failed = [r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic)]
            if failed:
                topics = {r.topic for r in failed}
                self.log.debug(
                    "Deletion failed for replicas %s. Halting deletion for topics %s",
                    comma_list(failed),
                    comma_list(sorted(topics)),
                )
                await self.replica_state_machine.handle_state_changes(
                    failed, ReplicaState.REPLICA_DELETION_INELIGIBLE
                )
                self.mark_topic_ineligible_for_deletion(topics)
                await self.resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str]) -> None:
        if self.is_delete_topic_enabled:
            halted = self.topics_to_be_deleted & set(topics)
            self.topics_ineligible_for_deletion.update(halted)
            if halted:
                self.log.info("Halted deletion of topics %s", comma_list(sorted(halted)))

    async def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        deleted = [r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic)]
        self.log.debug("Deletion successfully completed for replicas %s", comma_list(deleted))
        await self.replica_state_machine.handle_state_changes(
            deleted, ReplicaState.REPLICA_DELETION_SUCCESSFUL
        )
        await self.resume_deletions()

    # -- queries ------------------------------------------------------------------------------

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self.is_delete_topic_enabled and topic in self.topics_to_be_deleted

    def is_topic_ineligible_for_deletion(self, topic: str) -> bool:
        return not self.is_delete_topic_enabled or topic in self.topics_ineligible_for_deletion

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return (
            self.is_delete_topic_enabled
            and self.replica_state_machine.is_at_least_one_replica_in_deletion_started_state(topic)
        )

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return (
            topic in self.topics_to_be_deleted
            and not self.is_topic_deletion_in_progress(topic)
            and not self.is_topic_ineligible_for_deletion(topic)
        )

    # -- the deletion walk ------------------------------------------------------------------

    async def resume_deletions(self) -> None:
        rsm = self.replica_state_machine
        queued = sorted(self.topics_to_be_deleted)
        if queued:
            self.log.info("Handling deletion for topics %s", comma_list(queued))
        for topic in queued:
            if rsm.are_all_replicas_for_topic_deleted(topic):
                await self.complete_delete_topic(topic)
                self.log.info("Deletion of topic %s successfully completed", topic)
            elif rsm.is_at_least_one_replica_in_deletion_started_state(topic):
                started = rsm.replicas_in_state(topic, ReplicaState.REPLICA_DELETION_STARTED)
                self.log.info(
                    "Deletion for replicas %s for partition %s of topic %s in progress",
                    comma_list(r.replica for r in started),
                    comma_list(r.topic_partition for r in started),
                    topic,
                )
            elif rsm.is_any_replica_in_state(topic, ReplicaState.REPLICA_DELETION_INELIGIBLE):
                await self.mark_topic_for_deletion_retry(topic)

            if self.is_topic_eligible_for_deletion(topic):
                self.log.info("Deletion of topic %s (re)started", topic)
                await self.on_topic_deletion({topic})
            elif topic in self.topics_to_be_deleted and self.is_topic_ineligible_for_deletion(
                topic
            ):
                self.log.info(
                    "Not retrying deletion of topic %s at this time since it is marked "
                    "ineligible for deletion",
                    topic,
                )

    async def mark_topic_for_deletion_retry(self, topic: str) -> None:
        failed = self.replica_state_machine.replicas_in_state(
            topic, ReplicaState.REPLICA_DELETION_INELIGIBLE
        )
        self.log.info(
            "Retrying delete topic for topic %s since replicas %s were not successfully deleted",
            topic,
            comma_list(failed),
        )
        await self.replica_state_machine.handle_state_changes(failed, ReplicaState.OFFLINE_REPLICA)

    async def complete_delete_topic(self, topic: str) -> None:
        # the listener goes first, so it cannot fire before the topic listener when a
        # deleted topic is created again at once
        self.deregister_partition_modifications_handler(topic)
        rsm, psm = self.replica_state_machine, self.partition_state_machine
        deleted_replicas = rsm.replicas_in_state(topic, ReplicaState.REPLICA_DELETION_SUCCESSFUL)
        await rsm.handle_state_changes(deleted_replicas, ReplicaState.NON_EXISTENT_REPLICA)
        partitions = self.context.partitions_for_topic(topic)
        await psm.handle_state_changes(partitions, PartitionState.OFFLINE_PARTITION)
        await psm.handle_state_changes(partitions, PartitionState.NON_EXISTENT_PARTITION)
        self.topics_to_be_deleted.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)
        self.partitions_to_be_deleted.difference_update(
            [tp for tp in self.partitions_to_be_deleted if tp.topic == topic]
        )
        await self.zk_client.delete_topic_nodes(topic)
        self.context.remove_topic(topic)

    async def on_topic_deletion(self, topics: set[str]) -> None:
        self.log.info("Topic deletion callback for %s", comma_list(sorted(topics)))
        partitions = [
            tp for topic in sorted(topics) for tp in self.context.partitions_for_topic(topic)
        ]
        # brokers stop serving the topics (their partitions carry leader -2)
        self.send_update_metadata_request(
            sorted(self.context.live_or_shutting_down_broker_ids), partitions
        )
        for topic in sorted(topics):
            await self.on_partition_deletion(self.context.partitions_for_topic(topic))

    async def on_partition_deletion(self, partitions: list[TopicPartition]) -> None:
        self.log.info("Partition deletion callback for %s", comma_list(partitions))
        await self.start_replica_deletion(self.context.replicas_for_partitions(partitions))

    async def start_replica_deletion(self, replicas: list[PartitionAndReplica]) -> None:
        rsm = self.replica_state_machine
        all_live = self.context.all_live_replicas()
        for topic in sorted({r.topic for r in replicas}):
            topic_replicas = [r for r in replicas if r.topic == topic]
            alive = [r for r in topic_replicas if r in all_live]
            dead = [r for r in topic_replicas if r not in all_live]
            successfully_deleted = set(
                rsm.replicas_in_state(topic, ReplicaState.REPLICA_DELETION_SUCCESSFUL)
            )
            retry = [r for r in alive if r not in successfully_deleted]
            # dead replicas cannot be deleted now: they fail at once
            await rsm.handle_state_changes(dead, ReplicaState.REPLICA_DELETION_INELIGIBLE)
            # StopReplica (delete=false) first, so followers stop fetching from the leader
            await rsm.handle_state_changes(retry, ReplicaState.OFFLINE_REPLICA)
            self.log.debug("Deletion started for replicas %s", comma_list(retry))
            await rsm.handle_state_changes(
                retry, ReplicaState.REPLICA_DELETION_STARTED, self.stop_replica_callback
            )
            if dead:
                self.log.debug("Dead Replicas (%s) found for topic %s", comma_list(dead), topic)
                self.mark_topic_ineligible_for_deletion({topic})
