"""Cluster: the client's view of the cluster, built from Metadata responses.

After Kafka's `org.apache.kafka.common.Cluster`: the live brokers, the controller, and per
topic its partitions with leader, replicas, ISR and offline replicas. KafkaClient keeps one
and updates it on every metadata refresh; callers read it to route requests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafpy.common.topic_partition import TopicPartition

NO_NODE = -1
_UNKNOWN_TOPIC_OR_PARTITION = 3


@dataclass(frozen=True)
class Node:
    """A broker as Metadata describes it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.node_id} rack: {self.rack})"


@dataclass(frozen=True)
class PartitionInfo:
    """One partition's placement; `leader` is -1 when it has none."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int = -1
    error_code: int = 0


@dataclass(frozen=True)
class TopicInfo:
    """A topic's metadata; `error_code` is non-zero when the broker could not describe it
    (e.g. LEADER_NOT_AVAILABLE while it is being created)."""

    name: str
    partitions: Mapping[int, PartitionInfo] = field(default_factory=dict)
    is_internal: bool = False
    error_code: int = 0
    topic_id: uuid.UUID | None = None  # Metadata v10+ (KIP-516); None for the zero id


class Cluster:
    """The brokers, controller and topic placement last learnt from Metadata."""

    def __init__(self) -> None:
        self.brokers: dict[int, Node] = {}
        self.controller_id: int = NO_NODE
        self.cluster_id: str | None = None
        self.topics: dict[str, TopicInfo] = {}

    def update(self, response: Mapping[str, Any], requested: Iterable[str] | None) -> None:
        """Take in a Metadata response body. `requested` is the list of topics asked for
        (None: all topics, so topics missing from the answer are forgotten)."""
        self.brokers = {
            b["node_id"]: Node(b["node_id"], b["host"], b["port"], b.get("rack"))
            for b in response["brokers"]
        }
        self.controller_id = response.get("controller_id", NO_NODE)
        self.cluster_id = response.get("cluster_id", self.cluster_id)
        if requested is None:
            self.topics = {}
        for t in response["topics"]:
            name = t["name"]
            if t["error_code"] == _UNKNOWN_TOPIC_OR_PARTITION:
                self.topics.pop(name, None)
                continue
            partitions = {
                p["partition_index"]: PartitionInfo(
                    topic=name,
                    partition=p["partition_index"],
                    leader=p["leader_id"],
                    replicas=tuple(p["replica_nodes"]),
                    isr=tuple(p["isr_nodes"]),
                    offline_replicas=tuple(p.get("offline_replicas", ())),
                    leader_epoch=p.get("leader_epoch", -1),
                    error_code=p["error_code"],
                )
                for p in t["partitions"]
            }
            self.topics[name] = TopicInfo(
                name=name,
                partitions=partitions,
                is_internal=t.get("is_internal", False),
                error_code=t["error_code"],
                topic_id=t.get("topic_id"),
            )

    @property
    def controller(self) -> Node | None:
        return self.brokers.get(self.controller_id)

    def broker(self, node_id: int) -> Node | None:
        return self.brokers.get(node_id)

    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def partitions_for(self, topic: str) -> list[int] | None:
        """The topic's partition numbers in order, None if the topic is unknown."""
        info = self.topics.get(topic)
        return None if info is None else sorted(info.partitions)

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        info = self.topics.get(tp.topic)
        return None if info is None else info.partitions.get(tp.partition)

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The id of the partition's leader, None if unknown or it has none."""
        p = self.partition(tp)
        if p is None or p.leader < 0:
            return None
        return p.leader

    def __repr__(self) -> str:
        return (
            f"Cluster(id={self.cluster_id}, brokers={sorted(self.brokers)}, "
            f"controller={self.controller_id}, topics={sorted(self.topics)})"
        )
