"""`kafpy topics --bootstrap-server`: the topic command through a broker's admin APIs.

Kafka's AdminClientTopicService: the same options, checks and printed lines as the
`--zookeeper` form (kafpy.admin.topic_command), but every read and write goes through a
broker (Metadata, CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
IncrementalAlterConfigs) instead of the metadata store. What the admin APIs do not
expose is left out: a topic marked for deletion is not shown as such.
"""

from __future__ import annotations

import asyncio
import dataclasses

import click

from kafpy.admin.replica_assignment import (
    parse_added_replica_assignment,
    parse_replica_assignment,
)
from kafpy.admin.topic_command import (
    Out,
    TopicCommandError,
    TopicCommandOptions,
    parse_topic_configs_to_be_added,
    parse_topic_configs_to_be_deleted,
    topic_filter,
)
from kafpy.cli.topics import OneLineError, quiet_logging
from kafpy.client.admin_client import AdminClient, ConfigResource, NewTopic
from kafpy.client.kafka_client import parse_bootstrap_servers
from kafpy.common import topic as topic_rules
from kafpy.common.errors import AdminOperationError, TopicExistsError

REQUEST_TIMEOUT_MS = 30000


def _not_found(opts: TopicCommandOptions) -> TopicCommandError:
    return TopicCommandError(f"Topic '{opts.topic}' does not exist as expected")


async def get_topics(admin: AdminClient, opts: TopicCommandOptions) -> list[str]:
    """The topics the command applies to: all, or those matching --topic; internal topics
    left out with --exclude-internal."""
    all_topics = await admin.list_topics()
    if opts.topic is not None:
        pattern = topic_filter(opts.topic)
        matched = [t for t in all_topics if pattern.fullmatch(t)]
    else:
        matched = all_topics
    return [t for t in matched if not (opts.exclude_internal and topic_rules.is_internal(t))]


async def create_topic(admin: AdminClient, opts: TopicCommandOptions, out: Out) -> None:
    topic = opts.topic or ""
    configs = parse_topic_configs_to_be_added(opts, out)
    if topic_rules.has_collision_chars(topic):
        out(topic_rules.COLLISION_WARNING)
    if opts.replica_assignment is not None:
        assignment = parse_replica_assignment(opts.replica_assignment)
        new_topic = NewTopic(topic, replica_assignment=assignment, configs=configs)
    else:
        assert opts.partitions is not None and opts.replication_factor is not None
        new_topic = NewTopic(topic, opts.partitions, opts.replication_factor, configs=configs)
    try:
        await admin.create_topics([new_topic])
        out(f'Created topic "{topic}".')
    except TopicExistsError:
        if not opts.if_not_exists:
            raise


async def alter_topic(admin: AdminClient, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(admin, opts)
    if not topics and not opts.if_exists:
        raise _not_found(opts)
    for topic in topics:
        if opts.configs or opts.delete_configs:
            out(
                "WARNING: Altering topic configuration from this script has been deprecated "
                "and may be removed in future releases."
            )
            out("         Going forward, please use kafpy configs for this functionality")
            added = parse_topic_configs_to_be_added(opts, out)
            deleted = parse_topic_configs_to_be_deleted(opts)
            await admin.alter_configs(ConfigResource.topic(topic), added, deleted)
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
            existing = len((await admin.describe_topics([topic]))[topic].partitions)
            added_assignment = None
            if opts.replica_assignment:
                parsed = parse_added_replica_assignment(opts.replica_assignment, existing)
                added_assignment = {topic: [parsed[p] for p in sorted(parsed)]}
            await admin.create_partitions({topic: opts.partitions}, added_assignment)
            out("Adding partitions succeeded!")


async def list_topics(admin: AdminClient, opts: TopicCommandOptions, out: Out) -> None:
    for topic in await get_topics(admin, opts):
        out(topic)


async def delete_topic(admin: AdminClient, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(admin, opts)
    if not topics and not opts.if_exists:
        raise _not_found(opts)
    for topic in topics:
        if topic_rules.is_internal(topic):
            raise AdminOperationError(
                f"Topic {topic} is a kafka internal topic and is not allowed to be marked for "
                "deletion."
            )
        await admin.delete_topics([topic])
        out(f"Topic {topic} is marked for deletion.")
        out("Note: This will have no impact if delete.topic.enable is not set to true.")


async def describe_topic(admin: AdminClient, opts: TopicCommandOptions, out: Out) -> None:
    topics = await get_topics(admin, opts)
    if not topics and opts.topic is not None and not opts.if_exists:
        raise _not_found(opts)
    under_replicated = opts.under_replicated_partitions
    unavailable = opts.unavailable_partitions
    with_overrides = opts.topics_with_overrides
    described = await admin.describe_topics(topics) if topics else {}
    live_brokers = set(admin.client.cluster.brokers)
    for topic in topics:
        partitions = described[topic].partitions
        if not partitions:
            out(f"Topic {topic} doesn't exist!")
            continue
        describe_configs = not unavailable and not under_replicated
        if describe_configs:
            configs = await admin.describe_topic_overrides(topic)
            if not with_overrides or configs:
                replication_factor = len(partitions[min(partitions)].replicas)
                configs_text = ",".join(f"{k}={v}" for k, v in configs.items())
                out(
                    f"Topic:{topic}\tPartitionCount:{len(partitions)}\t"
                    f"ReplicationFactor:{replication_factor}\tConfigs:{configs_text}"
                )
        if with_overrides:
            continue
        for partition in sorted(partitions):
            info = partitions[partition]
            leader = info.leader if info.leader >= 0 else None
            if (
                (not under_replicated and not unavailable)
                or (under_replicated and len(info.isr) < len(info.replicas))
                or (unavailable and (leader is None or leader not in live_brokers))
            ):
                out(
                    f"\tTopic: {topic}\tPartition: {partition}"
                    f"\tLeader: {leader if leader is not None else 'none'}"
                    f"\tReplicas: {','.join(map(str, info.replicas))}"
                    f"\tIsr: {','.join(map(str, info.isr))}"
                )


_OPERATIONS = {
    "create": create_topic,
    "alter": alter_topic,
    "list": list_topics,
    "describe": describe_topic,
    "delete": delete_topic,
}


async def run_topic_command(admin: AdminClient, opts: TopicCommandOptions, out: Out) -> None:
    """Run the one action of `opts` through `admin`."""
    await _OPERATIONS[opts.action](admin, opts, out)


def check_args(bootstrap_server: str, opts: TopicCommandOptions) -> None:
    """The --zookeeper form's option checks, with the bootstrap server in its place."""
    try:
        dataclasses.replace(opts, zookeeper=bootstrap_server).check_args()
    except TopicCommandError as e:
        raise OneLineError(f"{e} (see 'kafpy topics --help')") from None
    try:
        parse_bootstrap_servers(bootstrap_server)
    except ValueError as e:
        raise OneLineError(f"{e} (see 'kafpy topics --help')") from None


def run_with_bootstrap_server(bootstrap_server: str, opts: TopicCommandOptions) -> None:
    """Check the options, run the action against the cluster, print its lines; any failure
    becomes one line on stderr and exit status 1."""
    check_args(bootstrap_server, opts)

    async def main() -> None:
        admin = AdminClient.connect(
            bootstrap_server,
            client_id="kafpy-topics",
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            retries=3,
        )
        try:
            await admin.client.start()
            await run_topic_command(admin, opts, click.echo)
        finally:
            await admin.close()

    quiet_logging()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        raise OneLineError("Error while executing topic command : interrupted") from None
    except Exception as e:  # every failure is reported as one line, never a traceback
        message = str(e) or type(e).__name__
        raise OneLineError(f"Error while executing topic command : {message}") from None
