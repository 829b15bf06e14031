"""ControllerChannelManager and ControllerBrokerRequestBatch: how the controller talks to brokers.

As Kafka's `kafka.controller.ControllerChannelManager`: one queue, one sender task and one
connection per live broker (its own broker included, over the network like any other);
requests to a broker go out one at a time in the order they were queued, are retried
while the broker is alive, and are dropped when it is removed. The connection comes from
a `ChannelFactory`, by default kafpy's `BrokerConnection`; tests inject one that records.

`ControllerBrokerRequestBatch` collects what the state machines decide during one state
change (LeaderAndIsr per broker and partition, UpdateMetadata for a set of brokers and
partitions, StopReplica per broker and replica) and turns it into Kafka's request bodies.
Bodies are built when the request is about to go out, for the version the connection
agreed with the broker, so the same batch serves brokers of different versions.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_config import CONTROLLER_CONFIG_DEF
from kafpy.controller.controller_context import ControllerContext, PartitionAndReplica
from kafpy.controller.log_format import comma_list
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.metadata.zk_data import Broker, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafpy.client.client_security import ClientSecurity

# The highest versions the controller sends: Kafka 2.8's (inter.broker.protocol.version 2.8),
# LeaderAndIsr v5 and UpdateMetadata v7 carrying the topic ids
CONTROLLER_MAX_VERSIONS: dict[int, int] = {
    ApiKey.LEADER_AND_ISR: 5,
    ApiKey.STOP_REPLICA: 3,
    ApiKey.UPDATE_METADATA: 7,
}

_REQUEST_NAMES: dict[int, str] = {
    ApiKey.LEADER_AND_ISR: "LeaderAndIsr",
    ApiKey.STOP_REPLICA: "StopReplica",
    ApiKey.UPDATE_METADATA: "UpdateMetadata",
}

# SecurityProtocol ids as UpdateMetadata carries them
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

RETRY_BACKOFF_S = 0.1

Body = dict[str, Any]
E = TypeVar("E")
ResponseCallback = Callable[[int, Body], None]


class ControllerChannel(Protocol):
    """What the controller needs of a connection to a broker (BrokerConnection offers it)."""

    @property
    def connected(self) -> bool: ...

    async def connect(self) -> None: ...

    def pick_version(self, api_key: int) -> int: ...

    async def send(self, api_key: int, body: Body, version: int | None = None) -> Body: ...

    def close(self) -> object: ...


# (broker id, host, port) -> a channel to that broker
ChannelFactory = Callable[[int, str, int], ControllerChannel]


def broker_connection_factory(
    controller_id: int,
    request_timeout_ms: int = CONTROLLER_CONFIG_DEF.default("controller.socket.timeout.ms"),
    security: ClientSecurity | None = None,
) -> ChannelFactory:
    """The production ChannelFactory: a kafpy BrokerConnection per broker, secured as the
    inter-broker listener asks (`security`)."""

    def factory(broker_id: int, host: str, port: int) -> ControllerChannel:
        from kafpy.client.connection import BrokerConnection

        return BrokerConnection(
            host,
            port,
            client_id=str(controller_id),
            request_timeout_ms=request_timeout_ms,
            node_id=broker_id,
            security=security,
        )

    return factory


def broker_endpoint(broker: Broker, listener_name: str) -> EndPoint:
    """The broker's endpoint for inter-broker traffic (its first one if it lacks the listener)."""
    endpoint = broker.endpoint(listener_name)
    if endpoint is None:
        if not broker.endpoints:
            raise ValueError(f"Broker {broker.id} registered no endpoint.")
        endpoint = broker.endpoints[0]
    return endpoint


@dataclass
class QueueItem:
    """A request waiting for its broker's sender: its API, a body builder per version, and
    the callback that gets the response."""

    api_key: int
    build: Callable[[int], Body]
    callback: ResponseCallback | None = None


@dataclass
class ControllerBrokerStateInfo:
    broker: Broker
    channel: ControllerChannel
    queue: asyncio.Queue[QueueItem] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    pending: int = 0  # queued or in flight


class ControllerChannelManager:
    """One request queue, sender task and connection per live broker."""

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        channel_factory: ChannelFactory,
        listener_name: str,
        retry_backoff_s: float = RETRY_BACKOFF_S,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.channel_factory = channel_factory
        self.listener_name = listener_name
        self.retry_backoff_s = retry_backoff_s
        self.broker_state_info: dict[int, ControllerBrokerStateInfo] = {}
        self.log = component_logger(
            "kafpy.controller.ControllerChannelManager",
            "Channel manager on controller",
            controller_id,
        )

    def startup(self) -> None:
        for broker in self.context.live_or_shutting_down_brokers:
            self.add_broker(broker)

    async def shutdown(self) -> None:
        for broker_id in list(self.broker_state_info):
            self.remove_broker(broker_id)
        await asyncio.sleep(0)  # let the cancelled senders finish

    def add_broker(self, broker: Broker) -> None:
        if broker.id in self.broker_state_info:
            return
        endpoint = broker_endpoint(broker, self.listener_name)
        host = endpoint.host or "localhost"
        self.log.info("Added broker %d at %s:%d", broker.id, host, endpoint.port)
        channel = self.channel_factory(broker.id, host, endpoint.port)
        info = ControllerBrokerStateInfo(broker, channel)
        info.task = asyncio.get_running_loop().create_task(
            self._send_loop(info), name=f"Controller-{self.controller_id}-to-broker-{broker.id}"
        )
        self.broker_state_info[broker.id] = info

    def remove_broker(self, broker_id: int) -> None:
        """Stop sending to the broker; requests still queued for it are dropped."""
        info = self.broker_state_info.pop(broker_id, None)
        if info is None:
            return
        if info.task is not None:
            info.task.cancel()
        try:
            info.channel.close()
        except Exception:  # closing a half-open channel must not stop the controller
            self.log.exception("Error closing the channel to broker %d", broker_id)
        dropped = info.queue.qsize()
        self.log.info("Removed broker %d (%d queued requests dropped)", broker_id, dropped)

    def send_request(
        self,
        broker_id: int,
        api_key: int,
        build: Callable[[int], Body],
        callback: ResponseCallback | None = None,
    ) -> None:
        info = self.broker_state_info.get(broker_id)
        if info is None:
            self.log.warning(
                "Not sending request %s to broker %d, since it is offline.",
                _REQUEST_NAMES.get(api_key, api_key),
                broker_id,
            )
            return
        info.pending += 1
        info.queue.put_nowait(QueueItem(api_key, build, callback))

    def pending_requests(self) -> int:
        """Requests queued or in flight, over all brokers."""
        return sum(i.pending for i in self.broker_state_info.values())

    async def _send_loop(self, info: ControllerBrokerStateInfo) -> None:
        broker_id = info.broker.id
        while True:
            item = await info.queue.get()
            try:
                response = await self._send_with_retries(info, item)
                if item.callback is not None:
                    try:
                        item.callback(broker_id, response)
                    except Exception:
                        self.log.exception(
                            "Error in the response callback of a request to broker %d", broker_id
                        )
            finally:
                info.pending -= 1

    async def _send_with_retries(self, info: ControllerBrokerStateInfo, item: QueueItem) -> Body:
        name = _REQUEST_NAMES.get(item.api_key, str(item.api_key))
        while True:
            try:
                if not info.channel.connected:
                    await info.channel.connect()
                version = min(
                    info.channel.pick_version(item.api_key),
                    CONTROLLER_MAX_VERSIONS.get(item.api_key, 0),
                )
                body = item.build(version)
                response = await info.channel.send(item.api_key, body, version)
                self.log.debug(
                    "Controller %d epoch %d received response for %s v%d from broker %d",
                    self.controller_id,
                    self.context.epoch,
                    name,
                    version,
                    info.broker.id,
                )
                return response
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.log.warning(
                    "Controller %d epoch %d fails to send request %s to broker %d (%s). "
                    "Reconnecting to broker.",
                    self.controller_id,
                    self.context.epoch,
                    name,
                    info.broker.id,
                    e,
                )
                try:
                    info.channel.close()
                except Exception:
                    pass
                await asyncio.sleep(self.retry_backoff_s)


@dataclass
class StopReplicaRequestInfo:
    replica: PartitionAndReplica
    delete_partition: bool
    callback: ResponseCallback | None = None

    def __str__(self) -> str:
        return (
            f"StopReplicaRequestInfo({self.replica},{'true' if self.delete_partition else 'false'})"
        )


@dataclass
class _LeaderAndIsrEntry:
    state: LeaderIsrAndControllerEpoch
    replicas: list[int]
    is_new: bool


@dataclass
class _UpdateMetadataEntry:
    state: LeaderIsrAndControllerEpoch
    replicas: list[int]
    offline_replicas: list[int]


class ControllerBrokerRequestBatch:
    """Requests collected during one state change, sent together by `send_requests_to_brokers`."""

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        channel_manager: ControllerChannelManager,
        state_change_logger: StateChangeLogger,
        leader_and_isr_callback: ResponseCallback | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.channel_manager = channel_manager
        self.state_change_logger = state_change_logger
        self.leader_and_isr_callback = leader_and_isr_callback
        self.log = component_logger("kafpy.controller.ControllerBrokerRequestBatch")
        self.leader_and_isr_request_map: dict[int, dict[TopicPartition, _LeaderAndIsrEntry]] = {}
        self.stop_replica_request_map: dict[int, list[StopReplicaRequestInfo]] = {}
        self.update_metadata_request_broker_set: set[int] = set()
        self.update_metadata_request_partition_info_map: dict[
            TopicPartition, _UpdateMetadataEntry
        ] = {}

    def new_batch(self) -> None:
        if (
            self.leader_and_isr_request_map
            or self.stop_replica_request_map
            or self.update_metadata_request_broker_set
        ):
            pending = (
                f"LeaderAndIsr for {sorted(self.leader_and_isr_request_map)}, StopReplica for "
                f"{sorted(self.stop_replica_request_map)}, UpdateMetadata for "
                f"{sorted(self.update_metadata_request_broker_set)}"
            )
            self.clear()
            raise RuntimeError(
                "Controller to broker state change requests batch is not empty while creating "
                f"a new one. Some requests were never sent: {pending}"
            )

    def clear(self) -> None:
        self.leader_and_isr_request_map.clear()
        self.stop_replica_request_map.clear()
        self.update_metadata_request_broker_set.clear()
        self.update_metadata_request_partition_info_map.clear()

    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch,
        replicas: list[int],
        is_new: bool,
    ) -> None:
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self.leader_and_isr_request_map.setdefault(broker_id, {})
            previous = per_broker.get(tp)
            per_broker[tp] = _LeaderAndIsrEntry(
                state, list(replicas), is_new or (previous is not None and previous.is_new)
            )
        self.add_update_metadata_request_for_brokers(
            self.context.live_or_shutting_down_broker_ids, [tp]
        )

    def add_stop_replica_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        delete_partition: bool,
        callback: ResponseCallback | None = None,
    ) -> None:
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            self.stop_replica_request_map.setdefault(broker_id, []).append(
                StopReplicaRequestInfo(
                    PartitionAndReplica(tp.topic, tp.partition, broker_id),
                    delete_partition,
                    callback,
                )
            )

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """UpdateMetadata for `broker_ids` carrying the current state of `partitions`
        (those of a topic being deleted carry leader -2, so brokers drop them)."""
        self.update_metadata_request_broker_set.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            state = self.context.partition_leadership_info.get(tp)
            if state is None:
                continue
            replicas = self.context.partition_replica_assignment(tp)
            offline = [r for r in replicas if not self.context.is_replica_online(r, tp)]
            if tp.topic in self.context.topics_to_be_deleted:
                lai = state.leader_and_isr
                state = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(
                        LeaderAndIsr.LEADER_DURING_DELETE, lai.leader_epoch, lai.isr, lai.zk_version
                    ),
                    state.controller_epoch,
                )
            self.update_metadata_request_partition_info_map[tp] = _UpdateMetadataEntry(
                state, replicas, offline
            )

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        try:
            self._send_leader_and_isr_requests(controller_epoch)
            self._send_update_metadata_requests(controller_epoch)
            self._send_stop_replica_requests(controller_epoch)
        finally:
            self.clear()

    # -- building and sending -------------------------------------------------------------

    def _control_request_header(self, controller_epoch: int, broker_id: int) -> Body:
        """The fields every controller-to-broker request starts with (Kafka's
        AbstractControlRequest): who sends, in which epoch, to which broker incarnation."""
        return {
            "controller_id": self.controller_id,
            "controller_epoch": controller_epoch,
            "broker_epoch": self.context.live_broker_epoch(broker_id),
        }

    def _send_leader_and_isr_requests(self, controller_epoch: int) -> None:
        scl = self.state_change_logger.with_controller_epoch(controller_epoch)
        live = self.context.live_or_shutting_down_broker_ids
        for broker_id, partitions in self.leader_and_isr_request_map.items():
            if broker_id not in live:
                continue
            for tp, entry in partitions.items():
                kind = (
                    "become-leader"
                    if entry.state.leader_and_isr.leader == broker_id
                    else "become-follower"
                )
                scl.trace(
                    f"Sending {kind} LeaderAndIsr request {_describe_state(entry.state)} "
                    f"to broker {broker_id} for partition {tp}"
                )
            leader_ids = {e.state.leader_and_isr.leader for e in partitions.values()}
            live_leaders = []
            for b in self.context.live_or_shutting_down_brokers:
                if b.id in leader_ids:
                    e = broker_endpoint(b, self.channel_manager.listener_name)
                    live_leaders.append(
                        {"broker_id": b.id, "host_name": e.host or "", "port": e.port}
                    )
            builder = _leader_and_isr_builder(
                self._control_request_header(controller_epoch, broker_id),
                dict(partitions),
                live_leaders,
                self.context.topic_ids,
            )
            self.channel_manager.send_request(
                broker_id, ApiKey.LEADER_AND_ISR, builder, self.leader_and_isr_callback
            )

    def _send_update_metadata_requests(self, controller_epoch: int) -> None:
        if not self.update_metadata_request_broker_set:
            return
        scl = self.state_change_logger.with_controller_epoch(controller_epoch)
        live = self.context.live_or_shutting_down_broker_ids
        partitions = dict(self.update_metadata_request_partition_info_map)
        live_brokers = [
            {
                "id": b.id,
                "v0_host": (broker_endpoint(b, self.channel_manager.listener_name).host or ""),
                "v0_port": broker_endpoint(b, self.channel_manager.listener_name).port,
                "endpoints": [
                    {
                        "port": e.port,
                        "host": e.host or "",
                        "listener": e.listener_name,
                        "security_protocol": SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0),
                    }
                    for e in b.endpoints
                ],
                "rack": b.rack,
            }
            for b in self.context.live_or_shutting_down_brokers
        ]
        for broker_id in sorted(self.update_metadata_request_broker_set):
            if broker_id not in live:
                continue
            for tp, entry in partitions.items():
                scl.trace(
                    f"Sending UpdateMetadata request {_describe_state(entry.state)} to brokers "
                    f"{broker_id} for partition {tp}"
                )
            builder = _update_metadata_builder(
                self._control_request_header(controller_epoch, broker_id),
                partitions,
                live_brokers,
                self.context.topic_ids,
            )
            self.channel_manager.send_request(broker_id, ApiKey.UPDATE_METADATA, builder)

    def _send_stop_replica_requests(self, controller_epoch: int) -> None:
        live = self.context.live_or_shutting_down_broker_ids
        for broker_id, infos in self.stop_replica_request_map.items():
            if broker_id not in live:
                continue
            for delete in (True, False):
                group = [i for i in infos if i.delete_partition == delete]
                if not group:
                    continue
                self.log.debug(
                    "The stop replica request (delete = %s) sent to broker %d is %s",
                    "true" if delete else "false",
                    broker_id,
                    comma_list(group),
                )
                callback = next((i.callback for i in group if i.callback), None)
                # v3's leader epochs: "deleting" for a deletion, else the one the controller knows
                epochs = {}
                for info in group:
                    tp = info.replica.topic_partition
                    known = self.context.partition_leadership_info.get(tp)
                    epochs[tp] = (
                        LeaderAndIsr.EPOCH_DURING_DELETE
                        if delete
                        else known.leader_and_isr.leader_epoch
                        if known is not None
                        else LeaderAndIsr.NO_EPOCH
                    )
                self.channel_manager.send_request(
                    broker_id,
                    ApiKey.STOP_REPLICA,
                    _stop_replica_builder(
                        self._control_request_header(controller_epoch, broker_id),
                        group,
                        delete,
                        epochs,
                    ),
                    callback,
                )


def _describe_state(state: LeaderIsrAndControllerEpoch) -> str:
    lai = state.leader_and_isr
    return (
        f"(Leader:{lai.leader},ISR:{comma_list(lai.isr)},LeaderEpoch:{lai.leader_epoch},"
        f"ControllerEpoch:{state.controller_epoch})"
    )


def _group_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[TopicPartition]]:
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp)
    return by_topic


def _leader_and_isr_builder(
    header: Body,
    partitions: Mapping[TopicPartition, _LeaderAndIsrEntry],
    live_leaders: list[Body],
    topic_ids: Mapping[str, uuid.UUID],
) -> Callable[[int], Body]:
    def state(tp: TopicPartition, entry: _LeaderAndIsrEntry) -> Body:
        return {
            **_partition_state(tp, entry.state, entry.replicas),
            "adding_replicas": [],
            "removing_replicas": [],
            "is_new": entry.is_new,
        }

    return _partition_states_builder(
        {**header, "live_leaders": live_leaders}, partitions, state, grouped_from=2,
        topic_ids=topic_ids, ids_from=5,
    )  # fmt: skip


def _partition_state(
    tp: TopicPartition, state: LeaderIsrAndControllerEpoch, replicas: Iterable[int]
) -> Body:
    """The fields LeaderAndIsr and UpdateMetadata partition states share."""
    lai = state.leader_and_isr
    return {
        "topic_name": tp.topic,
        "partition_index": tp.partition,
        "controller_epoch": state.controller_epoch,
        "leader": lai.leader,
        "leader_epoch": lai.leader_epoch,
        "isr": list(lai.isr),
        "zk_version": lai.zk_version,
        "replicas": list(replicas),
    }


def _partition_states_builder(
    fields: Body,
    partitions: Mapping[TopicPartition, E],
    state: Callable[[TopicPartition, E], Body],
    grouped_from: int,
    topic_ids: Mapping[str, uuid.UUID],
    ids_from: int,
) -> Callable[[int], Body]:
    """The body of a LeaderAndIsr or UpdateMetadata request for a version: `fields` and
    the partition states, grouped per topic (`topic_states`) from version `grouped_from`
    on, else one flat list; each topic with its id (the zero id for a topic without one)
    from version `ids_from` on."""

    def build(version: int) -> Body:
        body: Body = dict(fields)
        if version >= grouped_from:
            body["topic_states"] = [
                {"topic_name": topic, "partition_states": [state(tp, partitions[tp]) for tp in tps]}
                for topic, tps in _group_by_topic(partitions).items()
            ]
            if version >= ids_from:
                for t in body["topic_states"]:
                    t["topic_id"] = topic_ids.get(t["topic_name"])  # None: the zero id
        else:
            body["ungrouped_partition_states"] = [state(tp, e) for tp, e in partitions.items()]
        return body

    return build


def _update_metadata_builder(
    header: Body,
    partitions: Mapping[TopicPartition, _UpdateMetadataEntry],
    live_brokers: list[Body],
    topic_ids: Mapping[str, uuid.UUID],
) -> Callable[[int], Body]:
    def state(tp: TopicPartition, entry: _UpdateMetadataEntry) -> Body:
        return {
            **_partition_state(tp, entry.state, entry.replicas),
            "offline_replicas": list(entry.offline_replicas),
        }

    return _partition_states_builder(
        {**header, "live_brokers": live_brokers}, partitions, state, grouped_from=5,
        topic_ids=topic_ids, ids_from=7,
    )  # fmt: skip


def _stop_replica_builder(
    header: Body,
    infos: list[StopReplicaRequestInfo],
    delete_partitions: bool,
    leader_epochs: Mapping[TopicPartition, int],
) -> Callable[[int], Body]:
    partitions = [i.replica.topic_partition for i in infos]

    def build(version: int) -> Body:
        body: Body = {**header}
        if version >= 3:  # KIP-570: each partition with its delete flag and leader epoch
            body["topic_states"] = [
                {
                    "topic_name": topic,
                    "partition_states": [
                        {
                            "partition_index": tp.partition,
                            "leader_epoch": leader_epochs.get(tp, LeaderAndIsr.NO_EPOCH),
                            "delete_partition": delete_partitions,
                        }
                        for tp in tps
                    ],
                }
                for topic, tps in _group_by_topic(partitions).items()
            ]
            return body
        body["delete_partitions"] = delete_partitions
        if version >= 1:
            body["topics"] = [
                {"name": topic, "partition_indexes": [tp.partition for tp in tps]}
                for topic, tps in _group_by_topic(partitions).items()
            ]
        else:
            body["ungrouped_partitions"] = [
                {"topic_name": tp.topic, "partition_index": tp.partition} for tp in partitions
            ]
        return body

    return build
