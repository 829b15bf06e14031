"""Replica assignment: which brokers hold each partition's replicas, as Kafka's AdminUtils does it.

Goals (Kafka's): spread replicas evenly over brokers; for the partitions led by one
broker, spread their followers over the other brokers; when every broker has a rack,
put each partition's replicas on distinct racks while racks remain.

Rack-unaware: the first replica of each partition goes round-robin over the broker list
from a start index; the others follow at an increasing shift, bumped after every full
round of brokers, `replica_index = (first + 1 + (shift + j) % (n - 1)) % n`.

Rack-aware: the same round robin over a rack-alternated broker list (one broker of each
rack in turn), skipping a follower candidate whose rack (while some rack has no replica
yet) or broker (while some broker has none) already holds a replica of the partition.

The assignment-string parsers for `--replica-assignment` live here too.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafpy.common.errors import (
    AdminCommandFailedError,
    AdminOperationError,
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

Assignment = dict[int, list[int]]


@dataclass(frozen=True)
class BrokerMetadata:
    """A broker as replica assignment sees it: its id and its rack, if any."""

    id: int
    rack: str | None = None


class RackAwareMode(enum.Enum):
    """How racks are used: Enforced (error if only some brokers have one), Disabled
    (ignore racks), Safe (use racks only if every broker has one)."""

    ENFORCED = "Enforced"
    DISABLED = "Disabled"
    SAFE = "Safe"


_random = random.Random()


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> Assignment:
    """Assign `n_partitions` partitions of `replication_factor` replicas each.

    `brokers` should be sorted by id (the admin client does). With `fixed_start_index`
    < 0 the start index and the first shift are random (from `rng`); otherwise both are
    `fixed_start_index`. Partition ids start at `max(0, start_partition_id)`.

    Raises InvalidPartitionsError / InvalidReplicationFactorError with Kafka's wording,
    and AdminOperationError when only some brokers have a rack.
    """
    if n_partitions <= 0:
        raise InvalidPartitionsError("number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}"
        )
    rng = rng or _random
    if all(b.rack is None for b in brokers):
        return _assign_rack_unaware(
            n_partitions,
            replication_factor,
            [b.id for b in brokers],
            fixed_start_index,
            start_partition_id,
            rng,
        )
    if any(b.rack is None for b in brokers):
        raise AdminOperationError(
            "Not all brokers have rack information for replica rack aware assignment"
        )
    return _assign_rack_aware(
        n_partitions, replication_factor, brokers, fixed_start_index, start_partition_id, rng
    )


def _replica_index(first_replica_index: int, second_replica_shift: int, j: int, n: int) -> int:
    shift = 1 + (second_replica_shift + j) % (n - 1)
    return (first_replica_index + shift) % n


def _start_index_and_shift(fixed_start_index: int, n: int, rng: random.Random) -> tuple[int, int]:
    """Kafka's startIndex and nextReplicaShift over `n` brokers: both the fixed start index
    when one is given, else random (drawn in that order, so a seeded `rng` repeats)."""
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    return start_index, shift


def _assign_rack_unaware(
    n_partitions: int,
    replication_factor: int,
    broker_list: Sequence[int],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> Assignment:
    n = len(broker_list)
    start_index, shift = _start_index_and_shift(fixed_start_index, n, rng)
    partition_id = max(0, start_partition_id)
    result: Assignment = {}
    for _ in range(n_partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start_index) % n
        replicas = [broker_list[first]]
        for j in range(replication_factor - 1):
            replicas.append(broker_list[_replica_index(first, shift, j, n)])
        result[partition_id] = replicas
        partition_id += 1
    return result


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers taking one from each rack in turn (racks sorted, brokers sorted within a rack).

    rack1: 0,1,2; rack2: 3,4,5; rack3: 6,7,8 → 0,3,6,1,4,7,2,5,8.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    result: list[int] = []
    depth = 0
    while len(result) < len(broker_racks):
        for queue in queues:
            if depth < len(queue):
                result.append(queue[depth])
        depth += 1
    return result


def _assign_rack_aware(
    n_partitions: int,
    replication_factor: int,
    brokers: Sequence[BrokerMetadata],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> Assignment:
    broker_racks = {b.id: b.rack for b in brokers if b.rack is not None}
    num_racks = len(set(broker_racks.values()))
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    start_index, shift = _start_index_and_shift(fixed_start_index, n, rng)
    partition_id = max(0, start_partition_id)
    result: Assignment = {}
    for _ in range(n_partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with_replicas = {broker_racks[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = broker_racks[broker]
                k += 1
                # skip a broker whose rack already has a replica while some rack has none,
                # or that already has a replica while some broker has none
                if (rack not in racks_with_replicas or len(racks_with_replicas) == num_racks) and (
                    broker not in brokers_with_replicas or len(brokers_with_replicas) == n
                ):
                    replicas.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    break
        result[partition_id] = replicas
        partition_id += 1
    return result


def _parse_broker_ids(partition_text: str, partition: int, whole: str) -> list[int]:
    ids: list[int] = []
    for part in partition_text.split(":"):
        text = part.strip()
        try:
            ids.append(int(text))
        except ValueError:
            raise AdminCommandFailedError(
                f"Invalid replica assignment '{whole}': '{text}' (partition {partition}) is not "
                "a broker id; write one list of integer broker ids per partition, partitions "
                "separated by ',' and replicas by ':', e.g. 1:2:0,2:0:1"
            ) from None
    return ids


def parse_replica_assignment(replica_assignment: str) -> Assignment:
    """Parse `--replica-assignment` for a new topic: "1:2:0,2:0:1,0:1:2".

    Partitions are separated by ",", a partition's replicas by ":", the first replica is
    the preferred leader. Duplicates within a partition and partitions with different
    replication factors are refused with Kafka's messages.
    """
    result: Assignment = {}
    for i, partition_text in enumerate(replica_assignment.split(",")):
        brokers = _parse_broker_ids(partition_text, i, replica_assignment)
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise AdminCommandFailedError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(str(b) for b in duplicates)
            )
        result[i] = brokers
        if len(brokers) != len(result[0]):
            raise AdminOperationError(
                f"Partition {i} has different replication factor: "
                f"{':'.join(str(b) for b in brokers)} has {len(brokers)} replicas, "
                f"partition 0 has {len(result[0])}; give every partition the same number"
            )
    return result


def parse_added_replica_assignment(replica_assignment: str, start_partition_id: int) -> Assignment:
    """Parse `--replica-assignment` when adding partitions: the entries for the partitions
    from `start_partition_id` on (earlier entries, describing existing partitions, are
    skipped, as Kafka's alter does)."""
    entries = replica_assignment.split(",")[start_partition_id:]
    result: Assignment = {}
    for offset, partition_text in enumerate(entries):
        partition = start_partition_id + offset
        result[partition] = _parse_broker_ids(partition_text, partition, replica_assignment)
    return result


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    expected_replication_factor: int,
    available_broker_ids: set[int],
) -> None:
    """Check an explicit assignment for new partitions against the live brokers."""
    for partition, replicas in sorted(assignment.items()):
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {partition}."
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                "Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {partition}."
            )
        if not set(replicas) <= available_broker_ids:
            raise BrokerNotAvailableError(
                f"Some brokers specified for partition id {partition} are not available. "
                f"Specified brokers: {', '.join(map(str, replicas))}, "
                f"available brokers: {', '.join(map(str, sorted(available_broker_ids)))}."
            )
    bad = sorted(
        (p, len(r)) for p, r in assignment.items() if len(r) != expected_replication_factor
    )
    if bad:
        raise InvalidReplicaAssignmentError(
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{expected_replication_factor} while partitions [{', '.join(str(p) for p, _ in bad)}] "
            f"have replication factors [{', '.join(str(rf) for _, rf in bad)}], respectively."
        )
