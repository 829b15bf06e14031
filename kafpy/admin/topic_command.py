"""TopicCommand: the create / alter / delete / list / describe operations of kafka-topics.

After Kafka's `kafka.admin.TopicCommand` (ZooKeeper mode): the options, their checks and
the lines printed are Kafka's. The operations are coroutines writing their output
through `out` (one call per line), so the CLI prints them and tests collect them.
Failures raise exceptions whose message is the one line the CLI shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.replica_assignment import (
    RackAwareMode,
    parse_added_replica_assignment,
    parse_replica_assignment,
)
from kafpy.common import topic as topic_rules
from kafpy.common.errors import (
    AdminOperationError,
    InvalidTopicError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigType
from kafpy.storage.log_config import validate_names, validate_topic_config

Out = Callable[[str], None]

ACTIONS = ("list", "describe", "create", "alter", "delete")


class TopicCommandError(Exception):
    """A command line that Kafka's TopicCommand would refuse; the message says why."""


@dataclass
class TopicCommandOptions:
    """The parsed options of `kafpy topics` (kafka-topics.sh's, ZooKeeper mode)."""

    zookeeper: str | None = None
    actions: Sequence[str] = ()
    topic: str | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    replica_assignment: str | None = None
    configs: Sequence[str] = field(default_factory=list)
    delete_configs: Sequence[str] = field(default_factory=list)
    if_exists: bool = False
    if_not_exists: bool = False
    disable_rack_aware: bool = False
    under_replicated_partitions: bool = False
    unavailable_partitions: bool = False
    topics_with_overrides: bool = False
    exclude_internal: bool = False

    @property
    def action(self) -> str:
        return self.actions[0]

    def check_args(self) -> None:
        """Kafka's option checks: exactly one action, required and incompatible options."""
        if len(self.actions) != 1:
            raise TopicCommandError(
                "Command must include exactly one action: "
                "--list, --describe, --create, --alter or --delete"
            )
        action = self.action
        if not self.zookeeper:
            raise TopicCommandError('Missing required argument "[zookeeper]"')
        if action not in ("list", "describe") and not self.topic:
            raise TopicCommandError('Missing required argument "[topic]"')
        used = {
            "config": bool(self.configs),
            "delete-config": bool(self.delete_configs),
            "partitions": self.partitions is not None,
            "replication-factor": self.replication_factor is not None,
            "replica-assignment": self.replica_assignment is not None,
            "under-replicated-partitions": self.under_replicated_partitions,
            "unavailable-partitions": self.unavailable_partitions,
            "topics-with-overrides": self.topics_with_overrides,
            "if-exists": self.if_exists,
            "if-not-exists": self.if_not_exists,
            "disable-rack-aware": self.disable_rack_aware,
            "exclude-internal": self.exclude_internal,
        }
        allowed_with = {
            "config": {"alter", "create"},
            "delete-config": {"alter"},
            "partitions": {"alter", "create"},
            "replication-factor": {"create"},
            "replica-assignment": {"create", "alter"},
            "under-replicated-partitions": {"describe"},
            "unavailable-partitions": {"describe"},
            "topics-with-overrides": {"describe"},
            "if-exists": {"alter", "delete"},
            "if-not-exists": {"create"},
            "disable-rack-aware": {"create", "alter"},
            "exclude-internal": {"list", "describe"},
        }
        for option, is_used in used.items():
            if is_used and action not in allowed_with[option]:
                raise TopicCommandError(
                    f'Option "[{option}]" can\'t be used with option "[{action}]"'
                )
        if action == "create" and self.replica_assignment is not None:
            for other in ("partitions", "replication-factor"):
                if used[other]:
                    raise TopicCommandError(
                        f'Option "[replica-assignment]" can\'t be used with option "[{other}]"'
                    )
        filters = [
            o
            for o in (
                "under-replicated-partitions",
                "unavailable-partitions",
                "topics-with-overrides",
            )
            if used[o]
        ]
        if len(filters) > 1:
            raise TopicCommandError(
                f'Option "[{filters[0]}]" can\'t be used with option "[{filters[1]}]"'
            )
        if action == "create" and self.replica_assignment is None:
            for required, value in (
                ("partitions", self.partitions),
                ("replication-factor", self.replication_factor),
            ):
                if value is None:
                    raise TopicCommandError(f'Missing required argument "[{required}]"')


def topic_filter(spec: str) -> re.Pattern[str]:
    """Kafka's Whitelist: a regular expression where ',' also means '|', spaces and
    surrounding quotes are dropped, and a topic must match as a whole."""
    regex = spec.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"""^["']+""", "", regex)
    regex = re.sub(r"""["']+$""", "", regex)
    try:
        return re.compile(regex)
    except re.error as e:
        raise TopicCommandError(f"{regex} is an invalid regex ({e}).") from None


async def get_topics(zk: KafkaZkClient, opts: TopicCommandOptions) -> list[str]:
    """The topics the command applies to: all, or those matching --topic; internal topics
    left out with --exclude-internal."""
    all_topics = sorted(await zk.get_all_topics_in_cluster())
    exclude = opts.exclude_internal
    if opts.topic is not None:
        pattern = topic_filter(opts.topic)
        matched = [t for t in all_topics if pattern.fullmatch(t)]
    else:
        matched = all_topics
    return [t for t in matched if not (exclude and topic_rules.is_internal(t))]


def parse_topic_configs_to_be_added(opts: TopicCommandOptions, out: Out) -> dict[str, str]:
    """`--config k=v` pairs, validated against the topic configs."""
    props: dict[str, str] = {}
    for entry in opts.configs:
        parts = re.split(r"\s*=\s*", entry)
        if len(parts) != 2:
            raise TopicCommandError(
                f'Invalid topic config "{entry}": all configs to be added must be in the '
                'format "key=val".'
            )
        props[parts[0].strip()] = parts[1].strip()
    validate_topic_config(props)
    if "message.format.version" in props:
        out(
            "WARNING: The configuration message.format.version="
            f"{props['message.format.version']} is specified. This configuration will be "
            "ignored if the version is newer than the inter.broker.protocol.version specified "
            "in the broker."
        )
    return props


def parse_topic_configs_to_be_deleted(opts: TopicCommandOptions) -> list[str]:
    names = [name.strip() for name in opts.delete_configs]
    validate_names(dict.fromkeys(names, ""))
    return names


def _not_found(opts: TopicCommandOptions) -> TopicCommandError:
    return TopicCommandError(f"Topic {opts.topic} does not exist on ZK path {opts.zookeeper}")


async def create_topic(zk: KafkaZkClient, opts: TopicCommandOptions, out: Out) -> None:
    topic = opts.topic or ""
    configs = parse_topic_configs_to_be_added(opts, out)
    if topic_rules.has_collision_chars(topic):
        out(topic_rules.COLLISION_WARNING)
    admin = AdminZkClient(zk)
    try:
        if opts.replica_assignment is not None:
            assignment = parse_replica_assignment(opts.replica_assignment)
            await admin.create_or_update_topic_partition_assignment_path_in_zk(
                topic, assignment, configs, update=False
            )
        else:
            assert opts.partitions is not None and opts.replication_factor is not None
            mode = RackAwareMode.DISABLED if opts.disable_rack_aware else RackAwareMode.ENFORCED
            await admin.create_topic(topic, opts.partitions, opts.replication_factor, configs, mode)
        out(f'Created topic "{topic}".')
    except TopicExistsError:
        if not opts.if_not_exists:
            raise


async def alter_topic(zk: KafkaZkClient, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(zk, opts)
    if not topics and not opts.if_exists:
        raise _not_found(opts)
    admin = AdminZkClient(zk)
    for topic in topics:
        if opts.configs or opts.delete_configs:
            out(
                "WARNING: Altering topic configuration from this script has been deprecated "
                "and may be removed in future releases."
            )
            out("         Going forward, please use kafpy configs for this functionality")
            configs = await admin.fetch_entity_config(ConfigType.TOPIC, topic)
            configs.update(parse_topic_configs_to_be_added(opts, out))
            for name in parse_topic_configs_to_be_deleted(opts):
                configs.pop(name, None)
            await admin.change_topic_config(topic, configs)
            out(f'Updated config for topic "{topic}".')
        if opts.partitions is not None:
            if topic == topic_rules.GROUP_METADATA_TOPIC_NAME:
                raise TopicCommandError(
                    "The number of partitions for the offsets topic cannot be changed."
                )
            out(
                "WARNING: If partitions are increased for a topic that has a key, the partition "
                "logic or ordering of the messages will be affected"
            )
            existing, _ = await zk.get_topic_assignment_and_version(topic)
            if not existing:
                raise InvalidTopicError(f"The topic {topic} does not exist")
            new_assignment = None
            if opts.replica_assignment:
                new_assignment = parse_added_replica_assignment(
                    opts.replica_assignment, len(existing)
                )
            mode = RackAwareMode.DISABLED if opts.disable_rack_aware else RackAwareMode.ENFORCED
            brokers = await admin.get_broker_metadatas(mode)
            await admin.add_partitions(topic, existing, brokers, opts.partitions, new_assignment)
            out("Adding partitions succeeded!")


async def list_topics(zk: KafkaZkClient, opts: TopicCommandOptions, out: Out) -> None:
    for topic in await get_topics(zk, opts):
        if await zk.is_topic_marked_for_deletion(topic):
            out(f"{topic} - marked for deletion")
        else:
            out(topic)


async def delete_topic(zk: KafkaZkClient, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(zk, opts)
    if not topics and not opts.if_exists:
        raise _not_found(opts)
    admin = AdminZkClient(zk)
    for topic in topics:
        if topic_rules.is_internal(topic):
            raise AdminOperationError(
                f"Topic {topic} is a kafka internal topic and is not allowed to be marked for "
                "deletion."
            )
        try:
            await admin.delete_topic(topic)
        except TopicAlreadyMarkedForDeletionError as e:
            out(str(e))
            continue
        out(f"Topic {topic} is marked for deletion.")
        out("Note: This will have no impact if delete.topic.enable is not set to true.")


async def describe_topic(zk: KafkaZkClient, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(zk, opts)
    if not topics and opts.topic is not None and not opts.if_exists:
        raise _not_found(opts)
    under_replicated = opts.under_replicated_partitions
    unavailable = opts.unavailable_partitions
    with_overrides = opts.topics_with_overrides
    live_brokers = set(await zk.get_all_broker_ids())
    for topic in topics:
        assignment, _ = await zk.get_topic_assignment_and_version(topic)
        if not assignment:
            out(f"Topic {topic} doesn't exist!")
            continue
        describe_configs = not unavailable and not under_replicated
        describe_partitions = not with_overrides
        marked = await zk.is_topic_marked_for_deletion(topic)
        if describe_configs:
            configs = await zk.get_entity_configs(ConfigType.TOPIC, topic)
            if not with_overrides or configs:
                replication_factor = len(assignment[min(assignment)])
                configs_text = ",".join(f"{k}={v}" for k, v in configs.items())
                marked_text = "\tMarkedForDeletion:true" if marked else ""
                out(
                    f"Topic:{topic}\tPartitionCount:{len(assignment)}\t"
                    f"ReplicationFactor:{replication_factor}\tConfigs:{configs_text}{marked_text}"
                )
        if not describe_partitions:
            continue
        for partition in sorted(assignment):
            replicas = assignment[partition]
            state = await zk.get_topic_partition_state(TopicPartition(topic, partition))
            isr = list(state.leader_and_isr.isr) if state is not None else []
            leader = state.leader_and_isr.leader if state is not None else None
            if (
                (not under_replicated and not unavailable)
                or (under_replicated and len(isr) < len(replicas))
                or (unavailable and (leader is None or leader not in live_brokers))
            ):
                marked_text = "\tMarkedForDeletion: true" if marked and not describe_configs else ""
                out(
                    f"\tTopic: {topic}\tPartition: {partition}"
                    f"\tLeader: {leader if leader is not None else 'none'}"
                    f"\tReplicas: {','.join(map(str, replicas))}"
                    f"\tIsr: {','.join(map(str, isr))}{marked_text}"
                )


_OPERATIONS = {
    "create": create_topic,
    "alter": alter_topic,
    "list": list_topics,
    "describe": describe_topic,
    "delete": delete_topic,
}


async def run_topic_command(zk: KafkaZkClient, opts: TopicCommandOptions, out: Out) -> None:
    """Run the one action of `opts` (check_args() first)."""
    await _OPERATIONS[opts.action](zk, opts, out)
