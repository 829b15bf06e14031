"""KafkaController: the controller of a Kafka 2.x cluster, in the broker that wins /controller.

As Kafka's `kafka.controller.KafkaController`. Every broker runs one; the one whose
ephemeral /controller node is in ZooKeeper (and that incremented /controller_epoch) is
active. A watch on /controller re-runs the election when the node goes; a broker whose
ZooKeeper session expires resigns, registers again and re-runs the election.

The active controller turns ZooKeeper changes into events on its queue
(ControllerEventManager): new topics (/brokers/topics children), added partitions
(/brokers/topics/<t> data), topic deletion markers (/admin/delete_topics children) and
broker membership (/brokers/ids children), reassignments, elections and notifications.
The events and their dispatch live here; processing one calls the parts Kafka's controller
is made of: the partition and replica state machines, TopicDeletionManager,
PartitionReassignment, ReplicaLeaderElection and BrokerChange, which send LeaderAndIsr,
UpdateMetadata and StopReplica requests to brokers through the ControllerChannelManager.

Use (from KafkaServer): `controller = KafkaController(config, zk_client, channel_factory,
time, broker_info, broker_epoch)`, `await controller.startup()` after the broker registered
itself, `await controller.shutdown()` before the metadata store session closes; `is_active`
and `epoch` tell KafkaApis whether to answer controller-only requests, `broker_epoch` is
this broker's current epoch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from kafpy.common.election_type import ElectionType
from kafpy.common.errors import ControllerMovedError
from kafpy.common.features import BrokerFeatures
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.alter_isr import AlterIsrProcessor, AlterIsrResult
from kafpy.controller.broker_change import BrokerChange
from kafpy.controller.controller_channel_manager import (
    Body,
    ChannelFactory,
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
    broker_connection_factory,
)
from kafpy.controller.controller_config import BrokerConfigSource, ControllerConfig
from kafpy.controller.controller_context import ControllerContext
from kafpy.controller.controller_event_manager import ControllerEvent, ControllerEventManager
from kafpy.controller.controller_state import ControllerState
from kafpy.controller.feature_versioning import ApiError, FeatureVersioning
from kafpy.controller.log_format import comma_list, controller_logger, scala_map, scala_set
from kafpy.controller.partition_reassignment import PartitionReassignment
from kafpy.controller.partition_state_machine import PartitionState, PartitionStateMachine
from kafpy.controller.replica_leader_election import (
    ElectionResult,
    ElectionTrigger,
    ReplicaLeaderElection,
)
from kafpy.controller.replica_state_machine import (
    ReplicaState,
    ReplicaStateMachine,
)
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.controller.topic_deletion_manager import TopicDeletionManager
from kafpy.metadata.errors import NodeExistsError, NoNodeError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import EventType, WatchedEvent
from kafpy.metadata.zk_data import (
    BrokerInfo,
    ControllerZNode,
    IsrChangeNotificationSequenceZNode,
    IsrChangeNotificationZNode,
    LeaderAndIsr,
    LogDirEventNotificationSequenceZNode,
    LogDirEventNotificationZNode,
    ReplicaAssignment,
    TopicZNode,
)
from kafpy.protocol.errors import Errors

UNKNOWN_CONTROLLER_ID = -1

_T = TypeVar("_T")


class KafkaController:
    """The controller of one broker: elects itself or follows the elected one, and when
    active, runs the cluster's topic, partition and broker changes.

    Parameters:
        config: the broker's configuration (`KafkaConfig`, or anything with `broker_id` and
            `get(key)`); reads delete.topic.enable, unclean.leader.election.enable,
            inter.broker.listener.name, controller.socket.timeout.ms.
        zk_client: the broker's KafkaZkClient (its store session is the broker's session).
        channel_factory: makes the connection to a broker, `(broker_id, host, port) ->
            channel`; default: kafpy's BrokerConnection.
        time: the clock for event timings.
        broker_info: this broker's registration; when given, the controller registers the
            broker again after its session expired (as Kafka's controller does).
    """

    def __init__(
        self,
        config: BrokerConfigSource | ControllerConfig,
        zk_client: KafkaZkClient,
        channel_factory: ChannelFactory | None = None,
        time: Time = SYSTEM_TIME,
        broker_info: BrokerInfo | None = None,
        broker_epoch: int = -1,
    ) -> None:
        self.config = (
            config if isinstance(config, ControllerConfig) else ControllerConfig.from_config(config)
        )
        self.broker_id = self.config.broker_id
        self.zk_client = zk_client
        self.time = time
        self.broker_info = broker_info
        self.log = controller_logger(self.broker_id)
        self.context = ControllerContext()
        self.state_change_logger = StateChangeLogger(self.broker_id, in_controller_context=True)
        self.event_manager = ControllerEventManager(self.broker_id, time)
        self.channel_manager = ControllerChannelManager(
            self.broker_id,
            self.context,
            channel_factory
            or broker_connection_factory(self.broker_id, self.config.controller_socket_timeout_ms),
            self.config.inter_broker_listener_name,
        )
        self.request_batch = ControllerBrokerRequestBatch(
            self.broker_id,
            self.context,
            self.channel_manager,
            self.state_change_logger,
            leader_and_isr_callback=self._on_leader_and_isr_response,
        )
        self.replica_state_machine = ReplicaStateMachine(
            self.broker_id,
            self.context,
            zk_client,
            self.request_batch,
            self.state_change_logger,
            self._is_topic_queued_for_deletion,
        )
        self.partition_state_machine = PartitionStateMachine(
            self.broker_id,
            self.context,
            zk_client,
            self.request_batch,
            self.state_change_logger,
            self._is_topic_queued_for_deletion,
            self._unclean_leader_election_enabled,
        )
        self.topic_deletion_manager = TopicDeletionManager(
            self.broker_id,
            self.context,
            zk_client,
            self.replica_state_machine,
            self.partition_state_machine,
            self.config.delete_topic_enable,
            self.send_update_metadata_request,
            self._deregister_partition_modifications_handler,
            self._on_stop_replica_delete_response,
            self._topic_deletion_watcher,
        )
        self.partition_reassignment = PartitionReassignment(
            self.broker_id,
            self.context,
            zk_client,
            self.replica_state_machine,
            self.partition_state_machine,
            self.topic_deletion_manager,
            self.request_batch,
            self.state_change_logger,
            self.send_update_metadata_request,
            self._queue_zk_partition_reassignment,
            self._queue_partition_reassignment_isr_change,
        )
        self.broker_change = BrokerChange(
            self.broker_id,
            self.context,
            zk_client,
            self.channel_manager,
            self.replica_state_machine,
            self.partition_state_machine,
            self.topic_deletion_manager,
            self.partition_reassignment,
            self.state_change_logger,
            self.send_update_metadata_request,
            self._broker_change_watcher,
        )
        self.replica_leader_election = ReplicaLeaderElection(
            self.config,
            self.context,
            zk_client,
            self.partition_state_machine,
            self.replica_state_machine,
            self.topic_deletion_manager,
            self._queue_preferred_replica_election,
        )
        self.alter_isr_processor = AlterIsrProcessor(
            self.context, zk_client, self.send_update_metadata_request,
            self.partition_reassignment.maybe_complete_reassignment, self.log,
        )  # fmt: skip
        features = BrokerFeatures.create_default()  # every kafpy broker supports the same
        self.feature_versioning = FeatureVersioning(
            zk_client, features, lambda: [features] * len(self.context.live_or_shutting_down_broker_ids),
            self.log,
        )  # fmt: skip
        self.active_controller_id = UNKNOWN_CONTROLLER_ID
        # This broker's epoch (KIP-380), as Kafka's KafkaController.brokerEpoch: the one
        # home of it, read by KafkaApis' fencing and the controlled shutdown. KafkaServer's
        # registration gives the first; each registration after a session expiry the next.
        self.broker_epoch = broker_epoch
        self._started = False
        # stable watch callbacks (one per watched node), so a re-armed watch is not doubled
        self._partition_modifications_handlers: dict[str, Callable[[WatchedEvent], None]] = {}
        self._auto_rebalance_task: asyncio.Task[None] | None = None

    # -- public API -------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        """True while this broker is the cluster's controller."""
        return self.active_controller_id == self.broker_id

    @property
    def epoch(self) -> int:
        """The controller epoch this broker won (0 before it was ever elected)."""
        return self.context.epoch

    @property
    def epoch_zk_version(self) -> int:
        return self.context.epoch_zk_version

    async def startup(self) -> None:
        """Start the event queue and run the election (asynchronously, as an event)."""
        if self._started:
            return
        self._started = True
        self.zk_client.store.on_session_expired(self._on_session_expired)
        self.event_manager.start()
        self._put("Startup", ControllerState.CONTROLLER_CHANGE, self._process_startup)

    async def shutdown(self) -> None:
        """Stop processing events and resign; the broker's session closing then frees
        /controller for another broker."""
        if not self._started:
            return
        self._started = False
        await self.event_manager.close()
        await self._on_controller_resignation()
        self.log.info("Controller shutdown complete")

    def is_idle(self) -> bool:
        """No event queued or running and no request waiting to be sent (for tests)."""
        return self.event_manager.is_idle and self.channel_manager.pending_requests() == 0

    # -- events -------------------------------------------------------------------------------

    def _put(self, name: str, state: ControllerState, body: Callable[[], Awaitable[None]]) -> None:
        async def process() -> None:
            try:
                await body()
            except ControllerMovedError as e:
                self.log.info("Controller moved to another broker when processing %s: %s", name, e)
                await self._maybe_resign()

        self.event_manager.put(ControllerEvent(name, state, process))

    def _if_active(self, body: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
        """An event body that runs `body` only while this broker is the controller."""

        async def process() -> None:
            if self.is_active:
                await body()

        return process

    async def _put_and_wait_if_active(
        self,
        name: str,
        state: ControllerState,
        body: Callable[[], Awaitable[_T]],
        not_controller: Callable[[], _T],
        timeout_s: float,
    ) -> _T:
        """As `_put_and_wait`, answering `not_controller()` when this broker is not (or is
        no longer) the controller."""

        async def process() -> _T:
            if not self.is_active:
                return not_controller()
            return await body()

        try:
            return await self._put_and_wait(name, state, process, timeout_s)
        except ControllerMovedError:
            return not_controller()

    async def _put_and_wait(
        self,
        name: str,
        state: ControllerState,
        body: Callable[[], Awaitable[_T]],
        timeout_s: float,
    ) -> _T:
        """Queue `body` as the event `name` and wait up to `timeout_s` for what it returns
        (or raises), as Kafka's controller APIs wait for their event's callback."""
        future: asyncio.Future[_T] = asyncio.get_running_loop().create_future()

        async def process() -> None:
            try:
                result = await body()
            except BaseException as e:
                if not future.done():
                    future.set_exception(e)
                raise
            if not future.done():
                future.set_result(result)

        self._put(name, state, process)
        return await asyncio.wait_for(future, timeout_s)

    def enable_default_unclean_leader_election(self) -> None:
        """unclean.leader.election.enable was turned on for the brokers: offline partitions
        may now elect a leader out of the ISR (Kafka's UncleanLeaderElectionEnable event)."""

        async def body() -> None:
            if self.is_active:
                await self.partition_state_machine.trigger_online_partition_state_change()

        self._put(
            "UncleanLeaderElectionEnable", ControllerState.UNCLEAN_LEADER_ELECTION_ENABLE, body
        )

    def _on_session_expired(self) -> None:
        self.event_manager.clear()
        self._put(
            "RegisterBrokerAndReelect",
            ControllerState.CONTROLLER_CHANGE,
            self._process_register_broker_and_reelect,
        )

    # watch callbacks: called on the loop by the metadata store; they only queue events

    def _controller_change_watcher(self, event: WatchedEvent) -> None:
        if event.type is EventType.DELETED:
            self._put("Reelect", ControllerState.CONTROLLER_CHANGE, self._process_reelect)
        else:
            self._put(
                "ControllerChange",
                ControllerState.CONTROLLER_CHANGE,
                self._process_controller_change,
            )

    def _broker_change_watcher(self, event: WatchedEvent) -> None:
        self._put(
            "BrokerChange",
            ControllerState.BROKER_CHANGE,
            self._if_active(lambda: self.broker_change.process_broker_change()),
        )

    def _topic_change_watcher(self, event: WatchedEvent) -> None:
        self._put("TopicChange", ControllerState.TOPIC_CHANGE, self._process_topic_change)

    def _topic_deletion_watcher(self, event: WatchedEvent) -> None:
        self._put(
            "TopicDeletion",
            ControllerState.TOPIC_DELETION,
            self._if_active(self.topic_deletion_manager.process_topic_deletion),
        )

    def _queue_preferred_replica_election(self) -> None:
        self._put("ReplicaLeaderElection", ControllerState.MANUAL_LEADER_BALANCE,
                  self._process_preferred_replica_election_znode)  # fmt: skip

    def _isr_change_notification_watcher(self, event: WatchedEvent) -> None:
        self._put(
            "IsrChangeNotification",
            ControllerState.ISR_CHANGE,
            self._process_isr_change_notification,
        )

    def _log_dir_event_notification_watcher(self, event: WatchedEvent) -> None:
        self._put(
            "LogDirEventNotification",
            ControllerState.LOG_DIR_CHANGE,
            self._process_log_dir_event_notification,
        )

    def _queue_zk_partition_reassignment(self) -> None:
        self._put("ZkPartitionReassignment", ControllerState.ALTER_PARTITION_REASSIGNMENT,
                  self._if_active(self.partition_reassignment.process_zk_partition_reassignment))  # fmt: skip

    def _queue_partition_reassignment_isr_change(self, tp: TopicPartition) -> None:
        self._put(
            "PartitionReassignmentIsrChange",
            ControllerState.ALTER_PARTITION_REASSIGNMENT,
            self._if_active(
                lambda: self.partition_reassignment.process_partition_reassignment_isr_change(tp)
            ),
        )

    def _register_partition_modifications_handler(
        self, topic: str
    ) -> Callable[[WatchedEvent], None]:
        handler = self._partition_modifications_handlers.get(topic)
        if handler is None:

            def handler(event: WatchedEvent) -> None:
                if event.type is EventType.CHANGED:
                    self._put(
                        f"PartitionModifications({topic})",
                        ControllerState.TOPIC_CHANGE,
                        lambda: self._process_partition_modifications(topic),
                    )

            self._partition_modifications_handlers[topic] = handler
        return handler

    def _deregister_partition_modifications_handler(self, topic: str) -> None:
        self._partition_modifications_handlers.pop(topic, None)

    def _on_stop_replica_delete_response(self, broker_id: int, response: Body) -> None:
        self._put(
            "TopicDeletionStopReplicaResponseReceived",
            ControllerState.TOPIC_DELETION,
            self._if_active(
                lambda: self.topic_deletion_manager.process_topic_deletion_stop_replica_response(
                    broker_id, response
                )
            ),
        )

    def _on_leader_and_isr_response(self, broker_id: int, response: Body) -> None:
        self._put(
            "LeaderAndIsrResponseReceived",
            ControllerState.LEADER_AND_ISR_RESPONSE_RECEIVED,
            self._if_active(
                lambda: self.broker_change.process_leader_and_isr_response(broker_id, response)
            ),
        )

    # -- election -------------------------------------------------------------------------------

    async def _watch_controller(self) -> None:
        """Set the watch on /controller and learn who the controller is."""
        controller_id = await self.zk_client.get_controller_id(self._controller_change_watcher)
        self.active_controller_id = (
            controller_id if controller_id is not None else UNKNOWN_CONTROLLER_ID
        )

    async def _process_startup(self) -> None:
        await self._watch_controller()
        await self._elect()

    async def _process_controller_change(self) -> None:
        await self._maybe_resign()

    async def _process_reelect(self) -> None:
        await self._maybe_resign()
        await self._elect()

    async def _process_register_broker_and_reelect(self) -> None:
        self.log.info(
            "ZooKeeper session expired: resigning, registering the broker again and re-electing"
        )
        if self.is_active or self.context.epoch:
            self.active_controller_id = UNKNOWN_CONTROLLER_ID
            await self._on_controller_resignation()
        if self.broker_info is not None:
            try:
                self.broker_epoch = await self.zk_client.register_broker(self.broker_info)
                self.log.info(
                    "Registered broker %d again with broker epoch %d",
                    self.broker_id,
                    self.broker_epoch,
                )
            except NodeExistsError:
                self.log.error(
                    "Broker %d could not register again: %s is held by another live session "
                    "(another broker with this broker.id?); its broker epoch stays %d",
                    self.broker_id,
                    self.broker_info.path,
                    self.broker_epoch,
                )
        await self._watch_controller()
        await self._elect()

    async def _maybe_resign(self) -> None:
        was_active = self.is_active
        await self._watch_controller()
        if was_active and not self.is_active:
            await self._on_controller_resignation()

    async def _elect(self) -> None:
        if self.active_controller_id != UNKNOWN_CONTROLLER_ID:
            self.log.debug(
                "Broker %d has been elected as the controller, so stopping the election process.",
                self.active_controller_id,
            )
            return
        try:
            (
                epoch,
                epoch_zk_version,
            ) = await self.zk_client.register_controller_and_increment_controller_epoch(
                self.broker_id, self.time.milliseconds()
            )
        except ControllerMovedError:
            await self._maybe_resign()
            if self.active_controller_id != UNKNOWN_CONTROLLER_ID:
                self.log.debug(
                    "Broker %d was elected as controller instead of broker %d",
                    self.active_controller_id,
                    self.broker_id,
                )
            else:
                self.log.warning(
                    "A controller has been elected but just resigned, this will result in "
                    "another round of election"
                )
            return
        self.context.epoch = epoch
        self.context.epoch_zk_version = epoch_zk_version
        self.active_controller_id = self.broker_id
        self.log.info(
            "%d successfully elected as the controller. Epoch incremented to %d and epoch zk "
            "version is now %d",
            self.broker_id,
            epoch,
            epoch_zk_version,
        )
        try:
            await self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            self.log.exception(
                "Error while electing or becoming controller on broker %d. Trigger controller "
                "movement immediately",
                self.broker_id,
            )
            await self._trigger_controller_move()

    async def _trigger_controller_move(self) -> None:
        await self._on_controller_resignation()
        self.active_controller_id = UNKNOWN_CONTROLLER_ID
        try:
            data, _ = await self.zk_client.store.get(ControllerZNode.path)
            if ControllerZNode.decode(data) == self.broker_id:
                await self.zk_client.store.delete(ControllerZNode.path)
        except NoNodeError:
            pass

    # -- failover and resignation ---------------------------------------------------------------

    async def _on_controller_failover(self) -> None:
        await self.feature_versioning.enable_feature_versioning()
        self.log.info("Registering handlers")
        await self._initialize_controller_context()
        await self._process_isr_change_notification()
        await self._process_log_dir_event_notification()
        await self._process_preferred_replica_election_znode()
        self._start_auto_leader_rebalance()
        tdm = self.topic_deletion_manager
        to_delete, ineligible = await tdm.fetch_topic_deletions_in_progress()
        self.log.info("Initializing topic deletion manager")
        await tdm.init(to_delete, ineligible)
        self.log.info("Sending update metadata request")
        self.send_update_metadata_request(
            sorted(self.context.live_or_shutting_down_broker_ids), self.context.all_partitions()
        )
        await self.replica_state_machine.startup()
        await self.partition_state_machine.startup()
        self.log.info("Ready to serve as the new controller with epoch %d", self.context.epoch)
        await self.partition_reassignment.initialize_partition_reassignments()
        await self.topic_deletion_manager.try_topic_deletion()

    async def _initialize_controller_context(self) -> None:
        ctx = self.context
        brokers = await self.zk_client.get_all_broker_and_epochs_in_cluster(
            self._broker_change_watcher
        )
        ctx.set_live_brokers_and_epochs(brokers)
        self.log.info(
            "Initialized broker epochs cache: %s",
            scala_map({bid: epoch for bid, (_, epoch) in sorted(brokers.items())}),
        )
        topics = await self.zk_client.get_all_topics_in_cluster(self._topic_change_watcher)
        ctx.all_topics = set(topics)
        for topic, full in (await self._read_topics(topics)).items():
            for p, assignment in full.items():
                tp = TopicPartition(topic, p)
                ctx.update_partition_full_replica_assignment(tp, assignment)
                if assignment.is_being_reassigned:
                    ctx.partitions_being_reassigned.add(tp)
        states = await self.zk_client.get_topic_partition_states(ctx.all_partitions())
        ctx.partition_leadership_info.update(states)
        self.channel_manager.startup()
        self.log.info("Currently active brokers in the cluster: %s", scala_set(ctx.live_broker_ids))
        self.log.info(
            "Currently shutting brokers in the cluster: %s", scala_set(ctx.shutting_down_broker_ids)
        )
        self.log.info("Current list of topics in the cluster: %s", scala_set(ctx.all_topics))

    async def _read_assignment_and_watch(self, topic: str) -> dict[int, list[int]]:
        handler = self._register_partition_modifications_handler(topic)
        assignment, _ = await self.zk_client.get_topic_assignment_and_version(topic, handler)
        return assignment

    async def _on_controller_resignation(self) -> None:
        self.log.debug("Resigning")
        if self._auto_rebalance_task is not None:
            self._auto_rebalance_task.cancel()
            self._auto_rebalance_task = None
        self._partition_modifications_handlers.clear()
        self.partition_reassignment.reset()
        self.topic_deletion_manager.reset()
        self.replica_state_machine.shutdown()
        self.partition_state_machine.shutdown()
        await self.channel_manager.shutdown()
        self.request_batch.clear()
        self.context.reset()
        self.log.info("Resigned")

    # -- helpers for the state machines ----------------------------------------------------------

    def _is_topic_queued_for_deletion(self, topic: str) -> bool:
        return self.topic_deletion_manager.is_topic_queued_up_for_deletion(topic)

    async def _unclean_leader_election_enabled(self, topic: str) -> bool:
        overrides = await self.zk_client.get_entity_configs("topics", topic)
        value = overrides.get("unclean.leader.election.enable")
        if value is None:
            return self.config.unclean_leader_election_enable
        return str(value).strip().lower() == "true"

    def send_update_metadata_request(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        """UpdateMetadata to `broker_ids` with the current state of `partitions`."""
        try:
            self.request_batch.new_batch()
            self.request_batch.add_update_metadata_request_for_brokers(broker_ids, partitions)
            self.request_batch.send_requests_to_brokers(self.context.epoch)
        except RuntimeError:
            self.log.exception("Error while sending the update metadata request")

    # -- topic and partition changes ---------------------------------------------------------------

    async def _process_topic_change(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        topics = set(await self.zk_client.get_all_topics_in_cluster(self._topic_change_watcher))
        new_topics = topics - ctx.all_topics
        deleted_topics = ctx.all_topics - topics
        ctx.all_topics = topics
        for topic in deleted_topics:
            self._deregister_partition_modifications_handler(topic)
            ctx.remove_topic(topic)
        added = {
            TopicPartition(topic, p): list(assignment.replicas)
            for topic, full in (await self._read_topics(sorted(new_topics))).items()
            for p, assignment in sorted(full.items())
        }
        for tp, replicas in added.items():
            ctx.update_partition_replica_assignment(tp, replicas)
        self.log.info(
            "New topics: [%s], deleted topics: [%s], new partition replica assignment [%s]",
            scala_set(new_topics),
            scala_set(deleted_topics),
            scala_map(added),
        )
        if new_topics:
            await self.on_new_topic_creation(new_topics, list(added))

    async def _read_topics(self, topics: Iterable[str]) -> dict[str, dict[int, ReplicaAssignment]]:
        """Each topic's full assignment, read with a watch on its partition changes. Its id
        goes into the context; a topic without one (created by a tool, or before 2.8) gets
        a new random id written to its node, as Kafka 2.8's processTopicIds does."""
        assignments: dict[str, dict[int, ReplicaAssignment]] = {}
        without_id: dict[str, dict[int, ReplicaAssignment]] = {}
        for topic in topics:
            handler = self._register_partition_modifications_handler(topic)
            full, topic_id = await self.zk_client.get_full_topic_assignment_and_id(topic, handler)
            assignments[topic] = full
            if topic_id is not None:
                self.context.add_topic_id(topic, topic_id)
            elif full:  # (a topic deleted meanwhile has no node to write an id to)
                without_id[topic] = full
        if without_id:
            for topic, topic_id in (await self.zk_client.set_topic_ids(without_id)).items():
                self.context.add_topic_id(topic, topic_id)
        return assignments

    async def on_new_topic_creation(
        self, topics: set[str], new_partitions: list[TopicPartition]
    ) -> None:
        self.log.info("New topic creation callback for %s", comma_list(new_partitions))
        for topic in topics:
            self._register_partition_modifications_handler(topic)
        await self.on_new_partition_creation(new_partitions)

    async def on_new_partition_creation(self, new_partitions: list[TopicPartition]) -> None:
        """NewPartition, NewReplica, OnlinePartition (leader election, state znodes,
        LeaderAndIsr + UpdateMetadata), OnlineReplica."""
        if not new_partitions:
            return
        self.log.info("New partition creation callback for %s", comma_list(new_partitions))
        psm, rsm, ctx = self.partition_state_machine, self.replica_state_machine, self.context
        await psm.handle_state_changes(new_partitions, PartitionState.NEW_PARTITION)
        await rsm.handle_state_changes(
            ctx.replicas_for_partitions(new_partitions), ReplicaState.NEW_REPLICA
        )
        await psm.handle_state_changes(new_partitions, PartitionState.ONLINE_PARTITION)
        await rsm.handle_state_changes(
            ctx.replicas_for_partitions(new_partitions), ReplicaState.ONLINE_REPLICA
        )

    async def _process_partition_modifications(self, topic: str) -> None:
        if not self.is_active or topic not in self._partition_modifications_handlers:
            return
        ctx = self.context
        assignment = await self._read_assignment_and_watch(topic)
        self.log.info(
            "Partition modification triggered %s for path %s",
            TopicZNode.encode(topic, assignment, ctx.topic_ids.get(topic)).decode(),
            TopicZNode.path(topic),
        )
        to_add = {
            TopicPartition(topic, p): replicas
            for p, replicas in assignment.items()
            if not ctx.partition_replica_assignment(TopicPartition(topic, p))
        }
        if self.topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
            if to_add:
                self.log.error(
                    "Skipping adding partitions %s for topic %s since it is currently being deleted",
                    comma_list(sorted(tp.partition for tp in to_add)),
                    topic,
                )
            return
        if to_add:
            self.log.info("New partitions to be added %s", scala_map(to_add))
            for tp, replicas in to_add.items():
                ctx.update_partition_replica_assignment(tp, replicas)
            await self.on_new_partition_creation(sorted(to_add))

    # -- partition reassignment (PartitionReassignment) ---------------------------------------

    async def alter_partition_reassignments(
        self, reassignments: dict[TopicPartition, list[int] | None], timeout_s: float = 60.0
    ) -> tuple[int, dict[TopicPartition, tuple[int, str | None]]]:
        """AlterPartitionReassignments: start (target replicas) or cancel (None) the
        reassignment of each partition, as an event (Kafka's ApiPartitionReassignment).
        Returns (request error, partition -> (error code, message)); a broker that is not
        the controller answers NOT_CONTROLLER for the request."""

        async def process() -> tuple[int, dict[TopicPartition, tuple[int, str | None]]]:
            return (
                Errors.NONE,
                await self.partition_reassignment.process_api_partition_reassignment(reassignments),
            )

        return await self._put_and_wait_if_active(
            "ApiPartitionReassignment",
            ControllerState.ALTER_PARTITION_REASSIGNMENT,
            process,
            lambda: (Errors.NOT_CONTROLLER, {}),
            timeout_s,
        )

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None, timeout_s: float = 60.0
    ) -> tuple[int, dict[TopicPartition, ReplicaAssignment]]:
        """ListPartitionReassignments: the ongoing reassignments among `partitions` (None:
        all of them), or NOT_CONTROLLER."""
        requested = None if partitions is None else list(partitions)

        async def process() -> tuple[int, dict[TopicPartition, ReplicaAssignment]]:
            return Errors.NONE, self.partition_reassignment.list_partition_reassignments(requested)

        return await self._put_and_wait_if_active(
            "ListPartitionReassignments",
            ControllerState.LIST_PARTITION_REASSIGNMENT,
            process,
            lambda: (Errors.NOT_CONTROLLER, {}),
            timeout_s,
        )

    # -- controlled shutdown and leader elections (ReplicaLeaderElection) ------------------------

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout_s: float = 30.0
    ) -> tuple[int, list[TopicPartition]]:
        """ControlledShutdown from `broker_id`: move the leadership of its partitions to
        other in-sync replicas and take it out of the ISRs it follows in. Returns (error
        code, the partitions it still leads)."""

        async def process() -> tuple[int, list[TopicPartition]]:
            if not self.is_active:
                return Errors.NOT_CONTROLLER, []
            return await self.replica_leader_election.do_controlled_shutdown(
                broker_id, broker_epoch
            )

        return await self._put_and_wait(
            "ControlledShutdown", ControllerState.CONTROLLED_SHUTDOWN, process, timeout_s
        )

    async def alter_isr(
        self,
        broker_id: int,
        broker_epoch: int,
        isrs: dict[TopicPartition, LeaderAndIsr],
        timeout_s: float = 30.0,
    ) -> AlterIsrResult:
        """AlterIsr from the leader `broker_id` (KIP-497), as the AlterIsrReceived event
        (processing in kafpy.controller.alter_isr)."""

        async def process() -> AlterIsrResult:
            return await self.alter_isr_processor.process_alter_isr(
                self.is_active, broker_id, broker_epoch, isrs
            )

        return await self._put_and_wait_if_active(
            "AlterIsrReceived", ControllerState.ISR_CHANGE, process,
            lambda: AlterIsrResult(Errors.NOT_CONTROLLER, {}), timeout_s,
        )  # fmt: skip

    async def update_features(
        self, updates: list[dict[str, object]], timeout_s: float
    ) -> ApiError | dict[str, ApiError]:
        """UpdateFeatures (KIP-584) as the UpdateFeatures event: each feature's outcome,
        or NOT_CONTROLLER (processing in kafpy.controller.feature_versioning)."""

        async def process() -> ApiError | dict[str, ApiError]:
            return await self.feature_versioning.process_feature_updates(updates)

        return await self._put_and_wait_if_active(
            "UpdateFeatures", ControllerState.UPDATE_FEATURES, process,
            lambda: ApiError(Errors.NOT_CONTROLLER), timeout_s,
        )  # fmt: skip

    async def elect_leaders(
        self,
        partitions: Iterable[TopicPartition] | None,
        election_type: ElectionType,
        timeout_s: float = 60.0,
    ) -> dict[TopicPartition, ElectionResult]:
        """ElectLeaders from an admin client: elect the leaders of `partitions` (None: every
        partition) under `election_type`, as an event on the controller's queue (Kafka's
        ReplicaLeaderElection). A broker that is not the controller answers NOT_CONTROLLER
        for each partition."""
        requested = None if partitions is None else list(partitions)

        async def process() -> dict[TopicPartition, ElectionResult]:
            chosen = self.context.all_partitions() if requested is None else requested
            return await self.replica_leader_election.process_replica_leader_election(
                chosen, election_type, ElectionTrigger.ADMIN_CLIENT_TRIGGERED
            )

        return await self._put_and_wait_if_active(
            "ReplicaLeaderElection",
            ControllerState.MANUAL_LEADER_BALANCE,
            process,
            lambda: {tp: ElectionResult(Errors.NOT_CONTROLLER) for tp in requested or ()},
            timeout_s,
        )

    def enable_topic_unclean_leader_election(self, topic: str) -> None:
        """The topic's unclean.leader.election.enable became true: elect leaders for its
        offline partitions now, from any live replica where no in-sync one is live (Kafka's
        TopicUncleanLeaderElectionEnable event; a broker that is not the controller ignores
        it)."""

        async def process() -> None:
            if self.is_active:
                await self.partition_state_machine.trigger_online_partition_state_change(topic)

        self._put(
            "TopicUncleanLeaderElectionEnable",
            ControllerState.UNCLEAN_LEADER_ELECTION_ENABLE,
            process,
        )

    async def _process_preferred_replica_election_znode(self) -> None:
        if self.is_active:
            await self.replica_leader_election.process_preferred_replica_election_znode()

    def _start_auto_leader_rebalance(self) -> None:
        if not self.config.auto_leader_rebalance_enable or self._auto_rebalance_task is not None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(self.config.leader_imbalance_check_interval_seconds)
                self._put("AutoPreferredReplicaLeaderElection", ControllerState.AUTO_LEADER_BALANCE,
                          self._if_active(self.replica_leader_election.check_and_trigger_auto_leader_rebalance))  # fmt: skip

        self._auto_rebalance_task = asyncio.get_running_loop().create_task(loop())

    # -- notifications -------------------------------------------------------------------------------

    async def _read_and_delete_notifications(
        self,
        parent: str,
        watcher: Callable[[WatchedEvent], None],
        decode: Callable[[bytes], _T],
        kind: str,
    ) -> list[_T]:
        """Read and delete the sequential notification znodes under `parent`, in order,
        watching it again; returns their decoded contents. A malformed notification is
        logged and deleted; one deleted meanwhile is skipped."""
        store = self.zk_client.store
        decoded: list[_T] = []
        for child in sorted(await store.get_children(parent, watcher)):
            path = f"{parent}/{child}"
            try:
                data, _ = await store.get(path)
                decoded.append(decode(data))
            except NoNodeError:
                continue
            except Exception as e:  # a malformed notification must not stop the others
                self.log.warning("Ignoring %s %s: %s", kind, child, e)
            try:
                await store.delete(path)
            except NoNodeError:
                pass
        return decoded

    # -- ISR changes -------------------------------------------------------------------------------

    async def _process_isr_change_notification(self) -> None:
        """Leaders changed ISRs: read the partitions' states again, send UpdateMetadata to
        every broker, and delete the notifications (Kafka's IsrChangeNotification)."""
        if not self.is_active:
            return
        changed: set[TopicPartition] = set()
        for partitions in await self._read_and_delete_notifications(
            IsrChangeNotificationZNode.path,
            self._isr_change_notification_watcher,
            IsrChangeNotificationSequenceZNode.decode,
            "ISR change notification",
        ):
            changed |= partitions
        ctx = self.context
        known = [tp for tp in sorted(changed) if ctx.partition_replica_assignment(tp)]
        if not known:
            return
        states = await self.zk_client.get_topic_partition_states(known)
        ctx.partition_leadership_info.update(states)
        for tp in known:
            if tp in ctx.partitions_being_reassigned:
                await self.partition_reassignment.maybe_complete_reassignment(tp)
        self.log.debug("Sending MetadataRequest to Brokers: %s for TopicPartitions: %s",
                       sorted(ctx.live_or_shutting_down_broker_ids), comma_list(known))  # fmt: skip
        self.send_update_metadata_request(sorted(ctx.live_or_shutting_down_broker_ids), known)

    # -- log dir failures ------------------------------------------------------------------------

    async def _process_log_dir_event_notification(self) -> None:
        """Brokers reported a failed log dir: send LeaderAndIsr for all their replicas, whose
        answers (KAFKA_STORAGE_ERROR) say which are offline, and delete the notifications
        (Kafka's LogDirEventNotification)."""
        if not self.is_active:
            return
        notified = await self._read_and_delete_notifications(
            LogDirEventNotificationZNode.path,
            self._log_dir_event_notification_watcher,
            LogDirEventNotificationSequenceZNode.decode,
            "log dir event notification",
        )
        broker_ids = {broker for broker in notified if broker is not None}
        if not broker_ids:
            return
        self.log.info(
            "Handling log directory failure for brokers %s", comma_list(sorted(broker_ids))
        )
        replicas = self.context.replicas_on_brokers(broker_ids)
        await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE_REPLICA)
