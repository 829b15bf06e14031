"""TopicCommand: the create / alter / delete / list / describe operations of kafka-topics.

After Kafka's `kafka.admin.TopicCommand`: one set of options and checks, one operation
per action, the lines printed written once, and two backends behind them, as Kafka 2.8
has: `ZookeeperTopicService` works on the metadata store (`--zookeeper`) and
`AdminClientTopicService` through a broker's admin APIs (`--bootstrap-server`). Each
backend implements only the primitive reads and writes of `TopicService`.

The operations are coroutines writing their output through `out` (one call per line), so
the CLI prints them and tests collect them. Failures raise exceptions whose message is
the one line the CLI shows.
"""

from __future__ import annotations

import abc
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.replica_assignment import (
    Assignment,
    RackAwareMode,
    parse_added_replica_assignment,
    parse_replica_assignment,
)
from kafpy.client.admin_client import AdminClient, ConfigResource, NewTopic
from kafpy.client.kafka_client import parse_bootstrap_servers
from kafpy.common import topic as topic_rules
from kafpy.common.errors import (
    AdminOperationError,
    InvalidTopicError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
)
from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store_factory import create_store
from kafpy.metadata.zk_data import ConfigType
from kafpy.storage.log_config import MIN_IN_SYNC_REPLICAS, validate_names, validate_topic_config

Out = Callable[[str], None]

ACTIONS = ("list", "describe", "create", "alter", "delete")

CONNECTION_TIMEOUT_MS = 30000
REQUEST_TIMEOUT_MS = 30000
MAX_REPLICATION_FACTOR = 32767  # an INT16 on the wire
NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1


class TopicCommandError(Exception):
    """A command line that Kafka's TopicCommand would refuse; the message says why."""


@dataclass
class TopicCommandOptions:
    """The parsed options of `kafpy topics` (kafka-topics.sh 2.8's); `command_config` is
    the path of the --command-config file (read by the CLI)."""

    zookeeper: str | None = None
    bootstrap_server: str | None = None
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
    under_min_isr_partitions: bool = False
    at_min_isr_partitions: bool = False
    exclude_internal: bool = False
    command_config: str | None = None

    @property
    def action(self) -> str:
        return self.actions[0]

    @property
    def rack_aware_mode(self) -> RackAwareMode:
        return RackAwareMode.DISABLED if self.disable_rack_aware else RackAwareMode.ENFORCED

    def check_args(self) -> None:
        """Kafka's option checks: exactly one action, required and incompatible options."""
        if len(self.actions) != 1:
            raise TopicCommandError(
                "Command must include exactly one action: "
                "--list, --describe, --create, --alter or --delete"
            )
        action = self.action
        if bool(self.zookeeper) == bool(self.bootstrap_server):
            raise TopicCommandError(
                "Only one of --bootstrap-server or --zookeeper must be specified"
            )
        if (action not in ("list", "describe") or self.if_exists) and not self.topic:
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
            "under-min-isr-partitions": self.under_min_isr_partitions,
            "at-min-isr-partitions": self.at_min_isr_partitions,
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
            "under-min-isr-partitions": {"describe"},
            "at-min-isr-partitions": {"describe"},
            "if-exists": {"alter", "delete", "describe"},
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
        filters = [o for o in _DESCRIBE_FILTERS if used[o]]
        if len(filters) > 1:
            raise TopicCommandError(
                f'Option "[{filters[0]}]" can\'t be used with option "[{filters[1]}]"'
            )
        if self.zookeeper:
            # the metadata store does not hold a topic's effective min.insync.replicas
            for option in ("under-min-isr-partitions", "at-min-isr-partitions"):
                if used[option]:
                    raise TopicCommandError(
                        f'Option "[{option}]" can\'t be used with option "[zookeeper]"'
                    )
            if self.command_config is not None:
                raise TopicCommandError(
                    'Option "[command-config]" can\'t be used with option "[zookeeper]"'
                )
        if (
            action == "alter"
            and self.bootstrap_server
            and self.partitions is None
            and not self.configs
            and not self.delete_configs
        ):
            raise TopicCommandError('Missing required argument "[partitions]"')
        if action == "create" and self.replica_assignment is None and self.zookeeper:
            for required, value in (
                ("partitions", self.partitions),
                ("replication-factor", self.replication_factor),
            ):
                if value is None:
                    raise TopicCommandError(f'Missing required argument "[{required}]"')
        if self.bootstrap_server:
            try:
                parse_bootstrap_servers(self.bootstrap_server)
            except ValueError as e:
                raise TopicCommandError(str(e)) from None


_DESCRIBE_FILTERS = (
    "under-replicated-partitions",
    "unavailable-partitions",
    "under-min-isr-partitions",
    "at-min-isr-partitions",
    "topics-with-overrides",
)


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


@dataclass(frozen=True)
class CommandTopicPartition:
    """The topic --create asks for: an explicit replica assignment, or a partition count
    and a replication factor (either None: the cluster's default, KIP-464)."""

    name: str
    partitions: int | None
    replication_factor: int | None
    replica_assignment: Assignment | None
    configs: Mapping[str, str]
    rack_aware_mode: RackAwareMode


@dataclass(frozen=True)
class NewPartitions:
    """What --alter --partitions asks for: `count` partitions in all; `replica_assignment`
    is --replica-assignment, whose entries past the existing partitions place the new ones."""

    count: int
    replica_assignment: str | None
    rack_aware_mode: RackAwareMode


# -- what describe prints ------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionDescription:
    """One partition as describe shows it: placement, and whether the topic is being deleted."""

    topic: str
    partition: int
    leader: int | None
    replicas: Sequence[int]
    isr: Sequence[int]
    min_isr: int | None = None
    marked_for_deletion: bool = False

    def is_under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    def is_unavailable(self, live_brokers: set[int]) -> bool:
        return self.leader is None or self.leader not in live_brokers

    def is_under_min_isr(self) -> bool:
        return self.leader is None or (self.min_isr is not None and len(self.isr) < self.min_isr)

    def is_at_min_isr(self) -> bool:
        return self.min_isr is not None and len(self.isr) == self.min_isr

    def line(self) -> str:
        """Kafka 2.8's partition line."""
        marked = "\tMarkedForDeletion: true" if self.marked_for_deletion else ""
        return (
            f"\tTopic: {self.topic}\tPartition: {self.partition}"
            f"\tLeader: {self.leader if self.leader is not None else 'none'}"
            f"\tReplicas: {','.join(map(str, self.replicas))}"
            f"\tIsr: {','.join(map(str, self.isr))}{marked}"
        )


@dataclass(frozen=True)
class TopicDescription:
    """A topic as describe shows it: its partitions (by id) and the configs it does not
    take from the defaults."""

    topic: str
    partitions: Sequence[PartitionDescription]
    configs: Mapping[str, str | None]
    marked_for_deletion: bool = False
    topic_id: uuid.UUID | None = None

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas)

    def line(self) -> str:
        """Kafka 2.8's topic line (`TopicId:` only for a topic that has one)."""
        configs = ",".join(f"{k}={v}" for k, v in self.configs.items())
        marked = "\tMarkedForDeletion: true" if self.marked_for_deletion else ""
        topic_id = f"\tTopicId: {uuid_to_string(self.topic_id)}" if self.topic_id else ""
        return (
            f"Topic: {self.topic}{topic_id}\tPartitionCount: {len(self.partitions)}"
            f"\tReplicationFactor: {self.replication_factor}\tConfigs: {configs}{marked}"
        )


# -- the backends ---------------------------------------------------------------------------------


class TopicService(abc.ABC):
    """The primitive reads and writes of the topic command, one implementation per backend."""

    @abc.abstractmethod
    async def list_topics(self) -> list[str]:
        """Every topic name, internal ones included, sorted."""

    @abc.abstractmethod
    async def is_marked_for_deletion(self, topic: str) -> bool: ...

    @abc.abstractmethod
    async def live_brokers(self) -> set[int]: ...

    @abc.abstractmethod
    async def create_topic(self, topic: CommandTopicPartition) -> None:
        """Create the topic; TopicExistsError if it exists."""

    @abc.abstractmethod
    async def alter_topic_configs(
        self, topic: str, added: Mapping[str, str], deleted: Sequence[str]
    ) -> None: ...

    @abc.abstractmethod
    async def create_partitions(self, topic: str, wanted: NewPartitions) -> None:
        """Grow `topic` as `wanted` says."""

    @abc.abstractmethod
    async def delete_topic(self, topic: str) -> None:
        """Mark `topic` for deletion; TopicAlreadyMarkedForDeletionError if it is."""

    @abc.abstractmethod
    async def describe_topics(self, topics: Sequence[str]) -> dict[str, TopicDescription]:
        """The description of each of `topics` that exists."""


class ZookeeperTopicService(TopicService):
    """The topic command on the metadata store (`--zookeeper`), as Kafka's
    ZookeeperTopicService: writes go to the store and the controller acts on them."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk
        self.admin = AdminZkClient(zk)

    async def list_topics(self) -> list[str]:
        return sorted(await self.zk.get_all_topics_in_cluster())

    async def is_marked_for_deletion(self, topic: str) -> bool:
        return await self.zk.is_topic_marked_for_deletion(topic)

    async def live_brokers(self) -> set[int]:
        return set(await self.zk.get_all_broker_ids())

    async def create_topic(self, topic: CommandTopicPartition) -> None:
        if topic.replica_assignment is not None:
            await self.admin.create_or_update_topic_partition_assignment_path_in_zk(
                topic.name, topic.replica_assignment, topic.configs, update=False
            )
        else:
            assert topic.partitions is not None and topic.replication_factor is not None
            await self.admin.create_topic(
                topic.name,
                topic.partitions,
                topic.replication_factor,
                topic.configs,
                topic.rack_aware_mode,
            )

    async def alter_topic_configs(
        self, topic: str, added: Mapping[str, str], deleted: Sequence[str]
    ) -> None:
        configs = await self.admin.fetch_entity_config(ConfigType.TOPIC, topic)
        configs.update(added)
        for name in deleted:
            configs.pop(name, None)
        await self.admin.change_topic_config(topic, configs)

    async def create_partitions(self, topic: str, wanted: NewPartitions) -> None:
        existing, _ = await self.zk.get_topic_assignment_and_version(topic)
        if not existing:
            raise InvalidTopicError(f"The topic {topic} does not exist")
        added = None
        if wanted.replica_assignment:
            added = parse_added_replica_assignment(wanted.replica_assignment, len(existing))
        brokers = await self.admin.get_broker_metadatas(wanted.rack_aware_mode)
        await self.admin.add_partitions(topic, existing, brokers, wanted.count, added)

    async def delete_topic(self, topic: str) -> None:
        await self.admin.delete_topic(topic)

    async def describe_topics(self, topics: Sequence[str]) -> dict[str, TopicDescription]:
        result = {}
        for topic in topics:
            # one read of the topic's node: its replicas and its id
            full, topic_id = await self.zk.get_full_topic_assignment_and_id(topic)
            if not full:
                continue
            marked = await self.zk.is_topic_marked_for_deletion(topic)
            partitions = []
            for partition in sorted(full):
                state = await self.zk.get_topic_partition_state(TopicPartition(topic, partition))
                leader_and_isr = state.leader_and_isr if state is not None else None
                partitions.append(
                    PartitionDescription(
                        topic,
                        partition,
                        leader_and_isr.leader if leader_and_isr is not None else None,
                        list(full[partition].replicas),
                        list(leader_and_isr.isr) if leader_and_isr is not None else [],
                        marked_for_deletion=marked,
                    )
                )
            configs = await self.zk.get_entity_configs(ConfigType.TOPIC, topic)
            result[topic] = TopicDescription(topic, partitions, dict(configs), marked, topic_id)
        return result


class AdminClientTopicService(TopicService):
    """The topic command through a broker's admin APIs (`--bootstrap-server`), as Kafka's
    AdminClientTopicService: Metadata, CreateTopics, DeleteTopics, CreatePartitions,
    DescribeConfigs and IncrementalAlterConfigs. The admin APIs do not tell whether a
    topic is marked for deletion: such a topic is shown as any other."""

    def __init__(self, admin: AdminClient) -> None:
        self.admin = admin

    async def list_topics(self) -> list[str]:
        return await self.admin.list_topics()

    async def is_marked_for_deletion(self, topic: str) -> bool:
        return False

    async def live_brokers(self) -> set[int]:
        return set(self.admin.client.cluster.brokers)

    async def create_topic(self, topic: CommandTopicPartition) -> None:
        rf = topic.replication_factor
        if rf is not None and not 1 <= rf <= MAX_REPLICATION_FACTOR:
            raise TopicCommandError(
                f"The replication factor must be between 1 and {MAX_REPLICATION_FACTOR} inclusive"
            )
        if topic.partitions is not None and topic.partitions < 1:
            raise TopicCommandError("The partitions must be greater than 0")
        if topic.replica_assignment is not None:
            new_topic = NewTopic(
                topic.name, replica_assignment=topic.replica_assignment, configs=topic.configs
            )
        else:
            # KIP-464: what is not given is -1, the broker's num.partitions and
            # default.replication.factor
            new_topic = NewTopic(
                topic.name,
                NO_NUM_PARTITIONS if topic.partitions is None else topic.partitions,
                NO_REPLICATION_FACTOR if rf is None else rf,
                configs=topic.configs,
            )
        await self.admin.create_topics([new_topic])

    async def alter_topic_configs(
        self, topic: str, added: Mapping[str, str], deleted: Sequence[str]
    ) -> None:
        await self.admin.alter_configs(ConfigResource.topic(topic), added, deleted)

    async def create_partitions(self, topic: str, wanted: NewPartitions) -> None:
        existing = len((await self.admin.describe_topics([topic]))[topic].partitions)
        added_assignment = None
        if wanted.replica_assignment:
            parsed = parse_added_replica_assignment(wanted.replica_assignment, existing)
            added_assignment = {topic: [parsed[p] for p in sorted(parsed)]}
        await self.admin.create_partitions({topic: wanted.count}, added_assignment)

    async def delete_topic(self, topic: str) -> None:
        await self.admin.delete_topics([topic])

    async def describe_topics(self, topics: Sequence[str]) -> dict[str, TopicDescription]:
        if not topics:
            return {}
        described = await self.admin.describe_topics(topics)
        all_configs = await self.admin.describe_configs([ConfigResource.topic(t) for t in topics])
        result = {}
        for topic in topics:
            info = described[topic].partitions
            if not info:
                continue
            entries = all_configs.get(ConfigResource.topic(topic), [])
            min_isr = next(
                (int(e.value) for e in entries if e.name == MIN_IN_SYNC_REPLICAS and e.value),
                None,
            )
            partitions = [
                PartitionDescription(
                    topic,
                    p,
                    info[p].leader if info[p].leader >= 0 else None,
                    info[p].replicas,
                    info[p].isr,
                    min_isr,
                )
                for p in sorted(info)
            ]
            # as Kafka's: every value not from the defaults, the broker's static ones too
            configs = {e.name: e.value for e in entries if not e.is_default}
            result[topic] = TopicDescription(
                topic, partitions, configs, topic_id=described[topic].topic_id
            )
        return result


@asynccontextmanager
async def topic_service(
    opts: TopicCommandOptions, client_options: Mapping[str, Any] | None = None
) -> AsyncIterator[TopicService]:
    """The backend the options name, connected, and closed again on leaving;
    `client_options` (KafkaClient's keyword arguments, from --command-config) override
    the admin client's defaults."""
    if opts.bootstrap_server:
        options: dict[str, Any] = {
            "client_id": "kafpy-topics",
            "request_timeout_ms": REQUEST_TIMEOUT_MS,
            "retries": 3,
            **(client_options or {}),
        }
        admin = AdminClient.connect(opts.bootstrap_server, **options)
        try:
            await admin.client.start()
            yield AdminClientTopicService(admin)
        finally:
            await admin.close()
    else:
        assert opts.zookeeper is not None
        store = create_store(opts.zookeeper, None, connection_timeout_ms=CONNECTION_TIMEOUT_MS)
        await store.start()
        try:
            yield ZookeeperTopicService(KafkaZkClient(store))
        finally:
            await store.close()


# -- the operations ------------------------------------------------------------------------------


def topic_not_found(topic: str | None) -> TopicCommandError:
    """The error for a --topic that matches no topic (Kafka's ensureTopicExists)."""
    return TopicCommandError(f"Topic '{topic}' does not exist as expected")


async def get_topics(service: TopicService, opts: TopicCommandOptions) -> list[str]:
    """The topics the command applies to: all, or those matching --topic; internal topics
    left out with --exclude-internal."""
    all_topics = await service.list_topics()
    if opts.topic is not None:
        pattern = topic_filter(opts.topic)
        matched = [t for t in all_topics if pattern.fullmatch(t)]
    else:
        matched = all_topics
    return [t for t in matched if not (opts.exclude_internal and topic_rules.is_internal(t))]


async def create_topic(service: TopicService, opts: TopicCommandOptions, out: Out) -> None:
    topic = opts.topic or ""
    configs = parse_topic_configs_to_be_added(opts, out)
    if topic_rules.has_collision_chars(topic):
        out(topic_rules.COLLISION_WARNING)
    assignment = None
    if opts.replica_assignment is not None:
        assignment = parse_replica_assignment(opts.replica_assignment)
    try:
        await service.create_topic(
            CommandTopicPartition(
                topic,
                opts.partitions,
                opts.replication_factor,
                assignment,
                configs,
                opts.rack_aware_mode,
            )
        )
        out(f"Created topic {topic}.")
    except TopicExistsError:
        if not opts.if_not_exists:
            raise


async def alter_topic(service: TopicService, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(service, opts)
    if not topics and not opts.if_exists:
        raise topic_not_found(opts.topic)
    for topic in topics:
        if opts.configs or opts.delete_configs:
            out(
                "WARNING: Altering topic configuration from this script has been deprecated "
                "and may be removed in future releases."
            )
            out("         Going forward, please use kafpy configs for this functionality")
            added = parse_topic_configs_to_be_added(opts, out)
            deleted = parse_topic_configs_to_be_deleted(opts)
            await service.alter_topic_configs(topic, added, deleted)
            out(f"Updated config for topic {topic}.")
        if opts.partitions is not None:
            if topic_rules.is_internal(topic):
                raise TopicCommandError(
                    f"The number of partitions for the internal topic {topic} cannot be changed."
                )
            out(
                "WARNING: If partitions are increased for a topic that has a key, the partition "
                "logic or ordering of the messages will be affected"
            )
            await service.create_partitions(
                topic, NewPartitions(opts.partitions, opts.replica_assignment, opts.rack_aware_mode)
            )
            out("Adding partitions succeeded!")


async def list_topics(service: TopicService, opts: TopicCommandOptions, out: Out) -> None:
    for topic in await get_topics(service, opts):
        if await service.is_marked_for_deletion(topic):
            out(f"{topic} - marked for deletion")
        else:
            out(topic)


async def delete_topic(service: TopicService, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(service, opts)
    if not topics and not opts.if_exists:
        raise topic_not_found(opts.topic)
    for topic in topics:
        if topic_rules.is_internal(topic):
            raise AdminOperationError(
                f"Topic {topic} is a kafka internal topic and is not allowed to be marked for "
                "deletion."
            )
        try:
            await service.delete_topic(topic)
        except TopicAlreadyMarkedForDeletionError as e:
            out(str(e))
            continue
        out(f"Topic {topic} is marked for deletion.")
        out("Note: This will have no impact if delete.topic.enable is not set to true.")


async def describe_topic(service: TopicService, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(service, opts)
    if not topics and opts.topic is not None and not opts.if_exists:
        raise topic_not_found(opts.topic)
    describe_configs = not (
        opts.under_replicated_partitions
        or opts.unavailable_partitions
        or opts.under_min_isr_partitions
        or opts.at_min_isr_partitions
    )
    describe_partitions = not opts.topics_with_overrides
    live_brokers = await service.live_brokers()
    described = await service.describe_topics(topics)
    for topic in topics:
        description = described.get(topic)
        if description is None:
            out(f"Topic {topic} doesn't exist!")
            continue
        if describe_configs and (not opts.topics_with_overrides or description.configs):
            out(description.line())
        if not describe_partitions:
            continue
        for partition in description.partitions:
            if (
                describe_configs
                or (opts.under_replicated_partitions and partition.is_under_replicated())
                or (opts.unavailable_partitions and partition.is_unavailable(live_brokers))
                or (opts.under_min_isr_partitions and partition.is_under_min_isr())
                or (opts.at_min_isr_partitions and partition.is_at_min_isr())
            ):
                out(partition.line())


_OPERATIONS: dict[str, Callable[[TopicService, TopicCommandOptions, Out], Awaitable[None]]] = {
    "create": create_topic,
    "alter": alter_topic,
    "list": list_topics,
    "describe": describe_topic,
    "delete": delete_topic,
}


async def run_topic_command(service: TopicService, opts: TopicCommandOptions, out: Out) -> None:
    """Run the one action of `opts` on `service` (check_args() first)."""
    await _OPERATIONS[opts.action](service, opts, out)
