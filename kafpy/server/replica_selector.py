"""Fetching from the closest replica (KIP-392): the replica selector a partition leader
asks which replica a consumer should read from.

Kafka's `org.apache.kafka.common.replica` package: `ClientMetadata` (who is fetching,
from which rack), `ReplicaView` and `PartitionView` (what the leader knows of the
partition's replicas), the `ReplicaSelector` interface and its one implementation,
`RackAwareReplicaSelector`; and ReplicaManager's `findPreferredReadReplica`, which builds
the views from the leader's state and keeps only a follower's id as the answer.

`replica.selector.class` names the selector: unset (no selection, every consumer reads
from the leader) or `org.apache.kafka.common.replica.RackAwareReplicaSelector`; kafpy
cannot load other Java classes and refuses any other name at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kafpy.cluster.partition import Partition
from kafpy.common.errors import InvalidConfigurationError

REPLICA_SELECTOR_CLASS_CONFIG = "replica.selector.class"
RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """The fetching client as a Fetch v11+ describes it (Kafka's DefaultClientMetadata)."""

    rack_id: str
    client_id: str
    client_address: str
    principal: str
    listener_name: str


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica as the leader sees it: its broker (id and rack on the client's
    listener), its log end offset and how long ago it was last caught up."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int

    def sort_key(self) -> tuple[int, int]:
        """Kafka's ReplicaView.comparator: the greatest is the one furthest along, then
        the one caught up most recently."""
        return self.log_end_offset, -self.time_since_last_caught_up_ms


@dataclass(frozen=True, slots=True)
class PartitionView:
    """The replicas a selector may choose from (the leader among them) and the leader."""

    replicas: tuple[ReplicaView, ...]
    leader: ReplicaView


class ReplicaSelector(Protocol):
    """Chooses the replica a consumer should fetch from (Kafka's ReplicaSelector)."""

    def select(self, client: ClientMetadata, partition: PartitionView) -> ReplicaView | None:
        """The preferred replica, or None for no preference."""
        ...


class RackAwareReplicaSelector:
    """Kafka's RackAwareReplicaSelector: the leader when the client names no rack, when
    no replica is in the client's rack or when the leader is; otherwise the replica in the
    client's rack that is furthest along."""

    def select(self, client: ClientMetadata, partition: PartitionView) -> ReplicaView | None:
        if not client.rack_id:
            return partition.leader
        same_rack = [r for r in partition.replicas if r.rack == client.rack_id]
        if not same_rack or partition.leader in same_rack:
            return partition.leader
        return max(same_rack, key=ReplicaView.sort_key)

    def __repr__(self) -> str:
        return "RackAwareReplicaSelector"


def replica_selector(class_name: str | None) -> ReplicaSelector | None:
    """The selector `replica.selector.class` names: None when it is unset or empty; an
    InvalidConfigurationError naming the class when kafpy has no such selector."""
    name = (class_name or "").strip()
    if not name:
        return None
    if name == RACK_AWARE_REPLICA_SELECTOR:
        return RackAwareReplicaSelector()
    raise InvalidConfigurationError(
        f"Invalid value {name} for configuration {REPLICA_SELECTOR_CLASS_CONFIG}: kafpy cannot "
        f"load Java classes; it provides {RACK_AWARE_REPLICA_SELECTOR}, or leave it unset for "
        "consumers to fetch from the leader only"
    )


def find_preferred_read_replica(
    selector: ReplicaSelector,
    partition: Partition,
    client: ClientMetadata,
    racks: Mapping[int, str | None],
    fetch_offset: int,
    now_ms: int,
) -> int | None:
    """Kafka's ReplicaManager.findPreferredReadReplica on the leader of `partition`: the
    follower a consumer fetching `fetch_offset` should read from, or None (the leader).

    Candidates are the followers whose log holds `fetch_offset` (log start <= offset <=
    log end, whether or not they are in the ISR) and that are alive with the client's
    listener (`racks`: broker id -> rack of the live brokers that have it), and the leader.
    """
    log = partition.log
    if log is None or not partition.is_leader or partition.local_broker_id not in racks:
        return None
    followers = tuple(
        ReplicaView(
            r.broker_id, racks[r.broker_id], r.log_end_offset, now_ms - r.last_caught_up_time_ms
        )
        for r in partition.remote_replicas.values()
        if r.broker_id in racks and r.log_start_offset <= fetch_offset <= r.log_end_offset
    )
    leader = ReplicaView(partition.local_broker_id, racks[partition.local_broker_id],
                         log.log_end_offset, 0)  # fmt: skip
    chosen = selector.select(client, PartitionView((*followers, leader), leader))
    if chosen is None or chosen == leader:
        return None
    return chosen.broker_id
