"""MetadataCache: the broker's view of the cluster, fed by the controller's UpdateMetadata.

Every broker answers Metadata requests for the whole cluster from this cache: live
brokers with their endpoints per listener, the controller id, and the state of every
partition (leader, leader epoch, replicas, ISR, offline replicas). The controller sends
the full picture at start-up and changes afterwards; a partition whose leader is -2
(LeaderDuringDelete) is being deleted and leaves the cache.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.common.errors import InvalidTopicError
from kafpy.common.topic import validate_topic_partition
from kafpy.common.topic_ids import TopicIds
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors

log = logging.getLogger("kafpy.server.MetadataCache")

LEADER_DURING_DELETE = -2
NO_LEADER = -1
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# UpdateMetadata v1/v2 carry a security protocol id instead of a listener name.
_SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    host: str
    port: int
    listener: str
    security_protocol: int


@dataclass(frozen=True, slots=True)
class MetadataBroker:
    """A live broker as UpdateMetadata describes it."""

    id: int
    endpoints: dict[str, BrokerEndpoint]
    rack: str | None

    def endpoint(self, listener_name: str) -> BrokerEndpoint | None:
        return self.endpoints.get(listener_name)


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition's state (UpdateMetadataPartitionState)."""

    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: list[int]
    zk_version: int
    replicas: list[int]
    offline_replicas: list[int]


def _partition_states(body: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """(topic, partition state) from either shape: ungrouped (v0-4) or per topic (v5+)."""
    for state in body.get("ungrouped_partition_states") or ():
        yield state["topic_name"], state
    for topic in body.get("topic_states") or ():
        for state in topic["partition_states"]:
            yield topic["topic_name"], state


def _brokers(body: Mapping[str, Any]) -> dict[int, MetadataBroker]:
    brokers: dict[int, MetadataBroker] = {}
    for b in body.get("live_brokers") or ():
        endpoints: dict[str, BrokerEndpoint] = {}
        if b.get("endpoints"):
            for ep in b["endpoints"]:
                protocol = ep.get("security_protocol", 0)
                listener = ep.get("listener") or _SECURITY_PROTOCOLS.get(protocol, "PLAINTEXT")
                endpoints[listener] = BrokerEndpoint(ep["host"], ep["port"], listener, protocol)
        elif "v0_host" in b:
            endpoints["PLAINTEXT"] = BrokerEndpoint(b["v0_host"], b["v0_port"], "PLAINTEXT", 0)
        brokers[b["id"]] = MetadataBroker(b["id"], endpoints, b.get("rack"))
    return brokers


class MetadataCache:
    """Live brokers, controller id and partition states of the cluster, as last sent by the
    controller; answers Metadata requests."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller_id: int | None = None
        self._brokers: dict[int, MetadataBroker] = {}
        self._partitions: dict[str, dict[int, PartitionInfo]] = {}
        self._topic_ids = TopicIds()  # those the controller sent (UpdateMetadata v7+)
        # counts the UpdateMetadata requests applied: a Metadata answer built at one
        # generation holds until the next
        self.generation = 0

    def update_metadata(
        self, request_body: Mapping[str, Any], version: int = 0
    ) -> list[TopicPartition]:
        """Apply an UpdateMetadata request; returns the partitions it deleted."""
        self.generation += 1
        controller_id = request_body["controller_id"]
        self.controller_id = controller_id if controller_id >= 0 else None
        self._brokers = _brokers(request_body)
        for t in request_body.get("topic_states") or ():
            if t.get("topic_id") is not None:
                self._topic_ids.set(t["topic_name"], t["topic_id"])
        deleted: list[TopicPartition] = []
        for topic, state in _partition_states(request_body):
            index = state["partition_index"]
            try:
                validate_topic_partition(topic, index)
            except InvalidTopicError as e:
                log.error(
                    "Ignoring the state of partition %s-%s in UpdateMetadata: %s", topic, index, e
                )
                continue
            if state["leader"] == LEADER_DURING_DELETE:
                parts = self._partitions.get(topic)
                if parts is not None and parts.pop(index, None) is not None:
                    deleted.append(TopicPartition(topic, index))
                    if not parts:
                        del self._partitions[topic]
                        self._topic_ids.remove(topic)
                continue
            self._partitions.setdefault(topic, {})[index] = PartitionInfo(
                state["controller_epoch"],
                state["leader"],
                state["leader_epoch"],
                list(state["isr"]),
                state["zk_version"],
                list(state["replicas"]),
                list(state.get("offline_replicas") or ()),
            )
        return deleted

    # -- queries --------------------------------------------------------------------------

    def alive_brokers(self) -> list[MetadataBroker]:
        return [self._brokers[b] for b in sorted(self._brokers)]

    def get_alive_broker(self, broker_id: int) -> MetadataBroker | None:
        return self._brokers.get(broker_id)

    def alive_endpoints(self, listener_name: str) -> list[tuple[int, BrokerEndpoint, str | None]]:
        """(id, endpoint, rack) of the live brokers that have `listener_name`."""
        out = []
        for b in self.alive_brokers():
            ep = b.endpoint(listener_name)
            if ep is not None:
                out.append((b.id, ep, b.rack))
        return out

    def contains_topic(self, topic: str) -> bool:
        return topic in self._partitions

    def get_all_topics(self) -> list[str]:
        return list(self._partitions)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic of a KIP-516 id the controller sent (None for an unknown one)."""
        return self._topic_ids.by_id.get(topic_id)

    def get_partition_info(self, tp: TopicPartition) -> PartitionInfo | None:
        parts = self._partitions.get(tp.topic)
        return None if parts is None else parts.get(tp.partition)

    def partitions_for(self, topic: str) -> dict[int, PartitionInfo]:
        return dict(self._partitions.get(topic, {}))

    def get_topic_metadata(
        self,
        topics: Iterable[str],
        listener_name: str,
        error_unavailable_endpoints: bool = False,
        error_unavailable_listeners: bool = False,
    ) -> list[dict[str, Any]]:
        """MetadataResponse topic entries for the cached topics among `topics` (unknown
        topics are left out; the caller decides what to answer for them)."""
        out = []
        for topic in topics:
            parts = self._partitions.get(topic)
            if parts is None:
                continue
            partitions = [
                self._partition_metadata(index, info, listener_name, error_unavailable_endpoints,
                                         error_unavailable_listeners)
                for index, info in sorted(parts.items())
            ]  # fmt: skip
            out.append({
                "error_code": Errors.NONE,
                "name": topic,
                "topic_id": self._topic_ids.by_name.get(topic),
                "is_internal": topic in INTERNAL_TOPICS,
                "partitions": partitions,
            })  # fmt: skip
        return out

    def _partition_metadata(
        self,
        index: int,
        info: PartitionInfo,
        listener_name: str,
        error_unavailable_endpoints: bool,
        error_unavailable_listeners: bool,
    ) -> dict[str, Any]:
        replicas = info.replicas
        isr = info.isr
        if error_unavailable_endpoints:
            replicas = [r for r in replicas if self._has_endpoint(r, listener_name)]
            isr = [r for r in isr if self._has_endpoint(r, listener_name)]
        leader = self._brokers.get(info.leader)
        error = Errors.NONE
        leader_id = info.leader
        if leader is None or leader.endpoint(listener_name) is None:
            leader_id = NO_LEADER
            error = Errors.LEADER_NOT_AVAILABLE
            if leader is not None and error_unavailable_listeners:
                error = Errors.LISTENER_NOT_FOUND
        elif len(replicas) < len(info.replicas) or len(isr) < len(info.isr):
            error = Errors.REPLICA_NOT_AVAILABLE
        return {
            "error_code": error,
            "partition_index": index,
            "leader_id": leader_id,
            "leader_epoch": info.leader_epoch,
            "replica_nodes": replicas,
            "isr_nodes": isr,
            "offline_replicas": info.offline_replicas,
        }

    def _has_endpoint(self, broker_id: int, listener_name: str) -> bool:
        b = self._brokers.get(broker_id)
        return b is not None and b.endpoint(listener_name) is not None
