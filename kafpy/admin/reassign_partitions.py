"""Partition reassignment as an operator runs it: Kafka 2.8's ReassignPartitionsCommand.

One implementation of --generate, --execute, --verify, --cancel and --list over a
`ReassignmentCluster`, which has two backends: `AdminClientCluster` (--bootstrap-server:
AlterPartitionReassignments, ListPartitionReassignments, IncrementalAlterConfigs) and
`ZkCluster` (--zookeeper: /admin/reassign_partitions and the config znodes). Every input
is checked before anything is written: a malformed file, a partition that does not
exist, an unknown broker or duplicate entries stop the command with a sentence naming
the problem. The JSON formats and the lines printed are Kafka's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.replica_assignment import (
    BrokerMetadata,
    RackAwareMode,
    assign_replicas_to_brokers,
)
from kafpy.client.admin_client import AdminClient, ConfigResource
from kafpy.common.errors import (
    AdminCommandFailedError,
    AdminOperationError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigType
from kafpy.protocol.config_resource import ConfigSource

EARLIEST_VERSION = 1
ANY_LOG_DIR = "any"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
REPLICA_ALTER_LOG_DIRS_THROTTLED_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLES = (
    LEADER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_THROTTLED_RATE,
)
TOPIC_THROTTLES = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)

YOU_MUST_RUN_VERIFY_PERIODICALLY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to "
    "ensure the throttle is removed."
)
CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional "
    "to override this and interrupt the reassignment in progress."
)

Out = Callable[[str], None]


@dataclass(frozen=True)
class OngoingReassignment:
    """A partition being reassigned: all its replicas, the adding and removing ones."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)


class ReassignmentCluster(Protocol):
    """What the command needs of a cluster, through either backend."""

    async def brokers(self) -> list[BrokerMetadata]:
        """The live brokers, by id, with their racks."""
        ...

    async def replica_assignment(self, topics: Iterable[str]) -> dict[TopicPartition, list[int]]:
        """The current replicas of every partition of the topics that exist."""
        ...

    async def ongoing(self) -> dict[TopicPartition, OngoingReassignment]: ...

    async def alter(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, str]:
        """Start (or cancel, None) reassignments; the error message of each one refused."""
        ...

    async def set_broker_configs(self, broker_id: int, configs: Mapping[str, str]) -> None: ...

    async def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None: ...

    async def remove_broker_configs(self, broker_id: int, keys: Sequence[str]) -> None: ...

    async def remove_topic_configs(self, topic: str, keys: Sequence[str]) -> None: ...


# -- JSON ------------------------------------------------------------------------------------


def _load(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise AdminOperationError(f"The {what} is not a valid JSON") from None
    if not isinstance(data, dict):
        raise AdminOperationError(f"The {what} is not a JSON object")
    version = data.get("version", EARLIEST_VERSION)
    if version != EARLIEST_VERSION:
        raise AdminOperationError(f"Not supported version field value {version}")
    return data


def parse_topics_data(text: str) -> list[str]:
    """The topics of a --topics-to-move-json-file: {"topics":[{"topic":"foo"}],"version":1}."""
    data = _load(text, "topics to move JSON file")
    topics = data.get("topics")
    if not isinstance(topics, list):
        raise AdminOperationError(
            'The topics to move JSON file has no "topics" list; expected '
            '{"topics": [{"topic": "foo"}], "version": 1}'
        )
    names = []
    for i, entry in enumerate(topics):
        name = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise AdminOperationError(f'topics[{i}] of the topics to move JSON file has no "topic"')
        names.append(name)
    return names


def parse_partition_reassignment_data(text: str) -> list[tuple[TopicPartition, list[int]]]:
    """The (partition, replicas) entries of a reassignment JSON file, in file order:
    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],
    "log_dirs":["any","any"]}]}. Log dirs other than "any" are refused (kafpy moves
    replicas between brokers here, not between the log dirs of one broker)."""
    data = _load(text, "reassignment JSON file")
    partitions = data.get("partitions")
    if not isinstance(partitions, list):
        raise AdminOperationError('The reassignment JSON file has no "partitions" list')
    out = []
    for i, p in enumerate(partitions):
        if not isinstance(p, dict):
            raise AdminOperationError(
                f"partitions[{i}] of the reassignment JSON file is not an object"
            )
        topic, partition, replicas = p.get("topic"), p.get("partition"), p.get("replicas")
        if not isinstance(topic, str) or not topic:
            raise AdminOperationError(
                f'partitions[{i}] of the reassignment JSON file has no "topic"'
            )
        if not isinstance(partition, int) or isinstance(partition, bool):
            raise AdminOperationError(
                f"partitions[{i}].partition of the reassignment JSON file is not an integer: "
                f"{partition!r}"
            )
        if not isinstance(replicas, list) or not all(
            isinstance(r, int) and not isinstance(r, bool) for r in replicas
        ):
            raise AdminOperationError(
                f"partitions[{i}].replicas of the reassignment JSON file is not a list of broker "
                f"ids: {replicas!r}"
            )
        tp = TopicPartition(topic, partition)
        log_dirs = p.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise AdminCommandFailedError(
                f"Size of replicas list {_scala_list(replicas)} is different from size of log "
                f"dirs list {log_dirs} for partition {tp}"
            )
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise AdminCommandFailedError(
                f"Partition {tp} names log dirs {log_dirs}: kafpy reassigns replicas between "
                'brokers only; give "any" for each replica (or leave log_dirs out)'
            )
        out.append((tp, list(replicas)))
    return out


def _scala_list(items: Iterable[object]) -> str:
    return f"List({', '.join(map(str, items))})"


def _sorted_partitions(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(partitions, key=lambda tp: (tp.topic, tp.partition))


def format_as_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's formatAsReassignmentJson: partitions by topic and partition, log_dirs "any"."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(assignment[tp]),
                    "log_dirs": [ANY_LOG_DIR] * len(assignment[tp]),
                }
                for tp in _sorted_partitions(assignment)
            ],
        },
        separators=(",", ":"),
    )


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError:
        raise AdminCommandFailedError(
            f"--broker-list {text!r} is not a comma-separated list of broker ids (e.g. 0,1,2)"
        ) from None
    duplicates = [str(b) for b, n in Counter(brokers).items() if n > 1]
    if duplicates:
        raise AdminCommandFailedError(
            f"Broker list contains duplicate entries: {','.join(duplicates)}"
        )
    return brokers


def parse_throttle(value: str | None, option: str) -> int:
    """A throttle in bytes/s (-1 when not given); a clear error for anything else."""
    if value is None:
        return -1
    try:
        throttle = int(value)
    except ValueError:
        raise AdminCommandFailedError(
            f"{option} must be a whole number of bytes per second, not {value!r}"
        ) from None
    if throttle < -1:
        raise AdminCommandFailedError(f"{option} must be 0 or more bytes per second, not {value}")
    return throttle


# -- the actions ---------------------------------------------------------------------------------


async def generate_assignment(
    cluster: ReassignmentCluster,
    topics_json: str,
    broker_list: str,
    enable_rack_awareness: bool,
    out: Out,
) -> tuple[dict[TopicPartition, list[int]], dict[TopicPartition, list[int]]]:
    """Propose moving every partition of the topics onto the brokers; prints the current
    and proposed assignments. Returns (proposed, current)."""
    brokers_to_reassign = parse_broker_list(broker_list)
    topics = parse_topics_data(topics_json)
    duplicates = [t for t, n in Counter(topics).items() if n > 1]
    if duplicates:
        raise AdminCommandFailedError(
            f"List of topics to reassign contains duplicate entries: {','.join(duplicates)}"
        )
    current = await cluster.replica_assignment(topics)
    missing = [t for t in topics if not any(tp.topic == t for tp in current)]
    if missing:
        raise UnknownTopicOrPartitionError(f"Topic {missing[0]} not found.")
    live = {b.id: b for b in await cluster.brokers()}
    unknown = [b for b in brokers_to_reassign if b not in live]
    if unknown:
        raise AdminCommandFailedError(f"Unknown broker id {unknown[0]}")
    metadatas = [
        live[b] if enable_rack_awareness else BrokerMetadata(b) for b in sorted(brokers_to_reassign)
    ]
    rackless = sum(1 for b in metadatas if b.rack is None)
    if enable_rack_awareness and rackless not in (0, len(metadatas)):
        raise AdminOperationError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line "
            "to make replica assignment without rack information."
        )
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in dict.fromkeys(tp.topic for tp in _sorted_partitions(current)):
        partitions = [tp for tp in current if tp.topic == topic]
        replication_factor = len(current[partitions[0]])
        assigned = assign_replicas_to_brokers(metadatas, len(partitions), replication_factor)
        proposed.update({TopicPartition(topic, p): r for p, r in assigned.items()})
    out(f"Current partition replica assignment\n{format_as_reassignment_json(current)}\n")
    out(f"Proposed partition reassignment configuration\n{format_as_reassignment_json(proposed)}")
    return proposed, current


def parse_execute_assignment(text: str) -> dict[TopicPartition, list[int]]:
    """The reassignment to execute: non-empty, no partition twice, no replica twice."""
    entries = parse_partition_reassignment_data(text)
    if not entries:
        raise AdminCommandFailedError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise AdminCommandFailedError("Partition replica list cannot be empty")
    duplicate_partitions = [str(tp) for tp, n in Counter(tp for tp, _ in entries).items() if n > 1]
    if duplicate_partitions:
        raise AdminCommandFailedError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(duplicate_partitions)
        )
    duplicate_replicas = [
        f"{tp} contains multiple entries for "
        + ",".join(str(r) for r, n in Counter(replicas).items() if n > 1)
        for tp, replicas in entries
        if len(set(replicas)) != len(replicas)
    ]
    if duplicate_replicas:
        raise AdminCommandFailedError(
            "Partition replica lists may not contain duplicate entries: "
            + ". ".join(duplicate_replicas)
        )
    return dict(entries)


async def _current_replicas(
    cluster: ReassignmentCluster, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, list[int]]:
    wanted = list(partitions)
    current = await cluster.replica_assignment({tp.topic for tp in wanted})
    missing = [tp for tp in wanted if tp not in current]
    if missing:
        raise UnknownTopicOrPartitionError(
            f"Unable to find partition: {','.join(map(str, _sorted_partitions(missing)))}"
        )
    return {tp: current[tp] for tp in wanted}


async def execute_assignment(
    cluster: ReassignmentCluster,
    reassignment_json: str,
    additional: bool,
    inter_broker_throttle: int,
    log_dir_throttle: int,
    out: Out,
) -> None:
    """Start the reassignment in the file: prints the current assignment (for rollback),
    sets the throttles and starts the reassignments, as Kafka's executeAssignment."""
    proposed = parse_execute_assignment(reassignment_json)
    ongoing = await cluster.ongoing()
    if not additional and ongoing:
        raise AdminCommandFailedError(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    live = {b.id for b in await cluster.brokers()}
    for broker in sorted({r for replicas in proposed.values() for r in replicas}):
        if broker not in live:
            raise AdminCommandFailedError(f"Unknown broker id {broker}")
    current = await _current_replicas(cluster, proposed)
    out(
        "Current partition replica assignment\n\n"
        f"{format_as_reassignment_json(current)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )
    if inter_broker_throttle >= 0 or log_dir_throttle >= 0:
        out(YOU_MUST_RUN_VERIFY_PERIODICALLY)
        if inter_broker_throttle >= 0:
            await _set_reassignment_throttles(
                cluster, proposed, current, ongoing, inter_broker_throttle, out
            )
        # log_dir_throttle applies to moves between log dirs, which the file cannot hold here
    errors = await cluster.alter(proposed)
    if errors:
        lines = "\n".join(f"{tp}: {errors[tp]}" for tp in _sorted_partitions(errors))
        raise AdminCommandFailedError(f"Error reassigning partition(s):\n{lines}")
    plural = "" if len(proposed) == 1 else "s"
    out(
        f"Successfully started partition reassignment{plural} for "
        + ",".join(map(str, _sorted_partitions(proposed)))
    )


async def _set_reassignment_throttles(
    cluster: ReassignmentCluster,
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    throttle: int,
    out: Out,
) -> None:
    """Kafka's move map: a partition's sources are its current replicas (the origin ones
    while it is being reassigned), its destinations the targets that are not sources.
    Sources are leader-throttled, destinations follower-throttled, as `partition:broker`
    lists per topic; the rate goes to every broker involved. Brokers first: a broker that
    refuses the rate stops the command before any topic config is written."""
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for tp, target in proposed.items():
        sources = list(ongoing[tp].origin_replicas) if tp in ongoing else list(current[tp])
        destinations = [r for r in target if r not in sources]
        leader.setdefault(tp.topic, set()).update(f"{tp.partition}:{b}" for b in sources)
        follower.setdefault(tp.topic, set()).update(f"{tp.partition}:{b}" for b in destinations)
        brokers.update(sources, destinations)
    rate = str(throttle)
    for broker in sorted(brokers):
        await cluster.set_broker_configs(
            broker, {LEADER_THROTTLED_RATE: rate, FOLLOWER_THROTTLED_RATE: rate}
        )
    for topic in sorted(leader):
        await cluster.set_topic_configs(
            topic,
            {
                LEADER_THROTTLED_REPLICAS: ",".join(sorted(leader[topic])),
                FOLLOWER_THROTTLED_REPLICAS: ",".join(sorted(follower[topic])),
            },
        )
    out(f"The inter-broker throttle limit was set to {throttle} B/s")


async def verify_assignment(
    cluster: ReassignmentCluster, reassignment_json: str, preserve_throttles: bool, out: Out
) -> bool:
    """Print each partition's state; once none is in progress, clear the throttles.
    Returns whether some reassignment is still in progress."""
    targets = dict(parse_partition_reassignment_data(reassignment_json))
    current = await _current_replicas(cluster, targets)
    ongoing = await cluster.ongoing()
    lines = ["Status of partition reassignment:"]
    in_progress = False
    for tp in _sorted_partitions(targets):
        if tp in ongoing:
            in_progress = True
            lines.append(f"Reassignment of partition {tp} is still in progress.")
        elif list(current[tp]) == list(targets[tp]):
            lines.append(f"Reassignment of partition {tp} is complete.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp}, but replica set is "
                f"{','.join(map(str, current[tp]))} rather than "
                f"{','.join(map(str, targets[tp]))}."
            )
    out("\n".join(lines))
    out("")  # the (empty) status of replica moves between log dirs
    if not in_progress and not preserve_throttles:
        await clear_all_throttles(cluster, targets, out)
    return in_progress


async def clear_all_throttles(
    cluster: ReassignmentCluster, targets: Mapping[TopicPartition, Sequence[int]], out: Out
) -> None:
    """Remove the throttle rates from every live broker and those of the targets, and the
    throttled replica lists from the topics (Kafka's clearAllThrottles)."""
    brokers = sorted(
        {b.id for b in await cluster.brokers()} | {r for rs in targets.values() for r in rs}
    )
    out(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
        + ",".join(map(str, brokers)))  # fmt: skip
    for broker in brokers:
        await cluster.remove_broker_configs(broker, BROKER_THROTTLES)
    topics = sorted({tp.topic for tp in targets})
    out(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} "
        + ",".join(topics))  # fmt: skip
    for topic in topics:
        await cluster.remove_topic_configs(topic, TOPIC_THROTTLES)


async def cancel_assignment(
    cluster: ReassignmentCluster, reassignment_json: str, preserve_throttles: bool, out: Out
) -> None:
    """Cancel the ongoing reassignments among the file's partitions (back to their origin
    replicas), clear the throttles, and say what was cancelled."""
    targets = dict(parse_partition_reassignment_data(reassignment_json))
    ongoing = await cluster.ongoing()
    cancelling = [tp for tp in _sorted_partitions(targets) if tp in ongoing]
    if cancelling:
        errors = await cluster.alter({tp: None for tp in cancelling})
        if errors:
            lines = "\n".join(f"{tp}: {errors[tp]}" for tp in _sorted_partitions(errors))
            plural = "" if len(errors) == 1 else "s"
            raise AdminCommandFailedError(
                f"Error cancelling partition reassignment{plural} for:\n{lines}"
            )
    if not preserve_throttles:
        await clear_all_throttles(cluster, targets, out)
    if cancelling:
        plural = "" if len(cancelling) == 1 else "s"
        out(f"Successfully cancelled partition reassignment{plural} for: "
            + ",".join(map(str, cancelling)))  # fmt: skip
    else:
        out("None of the specified partition reassignments are active.")


async def list_reassignments(cluster: ReassignmentCluster, out: Out) -> None:
    ongoing = await cluster.ongoing()
    if not ongoing:
        out("No partition reassignments found.")
        return
    lines = ["Current partition reassignments:"]
    for tp in _sorted_partitions(ongoing):
        r = ongoing[tp]
        line = f"{tp}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding_replicas:
            line += f" adding: {','.join(map(str, r.adding_replicas))}."
        if r.removing_replicas:
            line += f" removing: {','.join(map(str, r.removing_replicas))}."
        lines.append(line)
    out("\n".join(lines))


# -- backends --------------------------------------------------------------------------------


class AdminClientCluster:
    """The cluster through the Kafka protocol (--bootstrap-server)."""

    def __init__(self, admin: AdminClient) -> None:
        self.admin = admin

    async def brokers(self) -> list[BrokerMetadata]:
        nodes, _ = await self.admin.describe_cluster()
        return [BrokerMetadata(n.node_id, n.rack) for n in sorted(nodes, key=lambda n: n.node_id)]

    async def replica_assignment(self, topics: Iterable[str]) -> dict[TopicPartition, list[int]]:
        result: dict[TopicPartition, list[int]] = {}
        for topic in sorted(set(topics)):
            try:
                info = (await self.admin.describe_topics([topic]))[topic]
            except UnknownTopicOrPartitionError:
                continue
            for p, partition in info.partitions.items():
                result[TopicPartition(topic, p)] = list(partition.replicas)
        return result

    async def ongoing(self) -> dict[TopicPartition, OngoingReassignment]:
        listed = await self.admin.list_partition_reassignments()
        return {
            tp: OngoingReassignment(
                tuple(r.replicas), tuple(r.adding_replicas), tuple(r.removing_replicas)
            )
            for tp, r in listed.items()
        }

    async def alter(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, str]:
        results = await self.admin.alter_partition_reassignments(reassignments)
        return {tp: str(e) for tp, e in results.items() if e is not None}

    async def set_broker_configs(self, broker_id: int, configs: Mapping[str, str]) -> None:
        await self.admin.alter_configs(ConfigResource.broker(broker_id), configs)

    async def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        await self.admin.alter_configs(ConfigResource.topic(topic), configs)

    async def remove_broker_configs(self, broker_id: int, keys: Sequence[str]) -> None:
        resource = ConfigResource.broker(broker_id)
        entries = (await self.admin.describe_configs([resource]))[resource]
        present = [
            e.name
            for e in entries
            if e.name in keys and e.source is ConfigSource.DYNAMIC_BROKER_CONFIG
        ]
        if present:
            await self.admin.alter_configs(resource, {}, present)

    async def remove_topic_configs(self, topic: str, keys: Sequence[str]) -> None:
        overrides = await self.admin.describe_topic_overrides(topic)
        present = [k for k in keys if k in overrides]
        if present:
            await self.admin.alter_configs(ConfigResource.topic(topic), {}, present)


class ZkCluster:
    """The cluster through ZooKeeper (--zookeeper): /admin/reassign_partitions, the topic
    znodes' adding/removing replicas, and the config znodes."""

    def __init__(self, zk_client: KafkaZkClient) -> None:
        self.zk = zk_client
        self.admin = AdminZkClient(zk_client)

    async def brokers(self) -> list[BrokerMetadata]:
        return await self.admin.get_broker_metadatas(RackAwareMode.SAFE)

    async def replica_assignment(self, topics: Iterable[str]) -> dict[TopicPartition, list[int]]:
        return await self.zk.get_replica_assignment_for_topics(sorted(set(topics)))

    async def ongoing(self) -> dict[TopicPartition, OngoingReassignment]:
        result: dict[TopicPartition, OngoingReassignment] = {}
        requested = await self.zk.get_partition_reassignment()
        for topic in await self.zk.get_all_topics_in_cluster():
            for p, a in (await self.zk.get_full_topic_assignment(topic)).items():
                tp = TopicPartition(topic, p)
                if a.is_being_reassigned or tp in requested:
                    result[tp] = OngoingReassignment(
                        a.replicas, a.adding_replicas, a.removing_replicas
                    )
        return result

    async def alter(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, str]:
        if any(r is None for r in reassignments.values()):
            raise AdminCommandFailedError(
                "Cancelling a reassignment needs --bootstrap-server (AlterPartitionReassignments)"
            )
        targets = {tp: list(r) for tp, r in reassignments.items() if r is not None}
        try:
            await self.zk.create_partition_reassignment(targets)
        except NodeExistsError:
            raise AdminCommandFailedError(CANNOT_EXECUTE_BECAUSE_OF_EXISTING) from None
        return {}

    async def set_broker_configs(self, broker_id: int, configs: Mapping[str, str]) -> None:
        current = await self.admin.fetch_entity_config(ConfigType.BROKER, str(broker_id))
        await self.admin.change_broker_config(broker_id, {**current, **configs})

    async def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        current = await self.admin.fetch_entity_config(ConfigType.TOPIC, topic)
        await self.admin.change_topic_config(topic, {**current, **configs})

    async def remove_broker_configs(self, broker_id: int, keys: Sequence[str]) -> None:
        current = await self.admin.fetch_entity_config(ConfigType.BROKER, str(broker_id))
        if any(k in current for k in keys):
            kept = {k: v for k, v in current.items() if k not in keys}
            await self.admin.change_broker_config(broker_id, kept)

    async def remove_topic_configs(self, topic: str, keys: Sequence[str]) -> None:
        current = await self.admin.fetch_entity_config(ConfigType.TOPIC, topic)
        if any(k in current for k in keys):
            kept = {k: v for k, v in current.items() if k not in keys}
            await self.admin.change_topic_config(topic, kept)
