"""`kafpy topics`: create, alter, delete, list and describe topics, like kafka-topics.sh.

The options, as Kafka's; the work is kafpy.admin.topic_command's, through the brokers'
admin APIs (`--bootstrap-server HOST:PORT`) or on the metadata store directly
(`--zookeeper HOST:PORT[/chroot]`, where the cluster's controller acts on the writes).
Errors are printed to stderr as one line and exit with status 1.
"""

from __future__ import annotations

import click

from kafpy.admin.topic_command import (
    TopicCommandError,
    TopicCommandOptions,
    run_topic_command,
    topic_service,
)
from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
)


@click.command(
    "topics",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--bootstrap-server",
    metavar="HOST:PORT[,HOST:PORT]",
    help="REQUIRED (or --zookeeper): the broker(s) to connect to. The command then works "
    "through the brokers' admin APIs and needs no ZooKeeper connection.",
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="A properties file of configs for the admin client (client.id, request.timeout.ms, "
    "retries, ...); used only with --bootstrap-server.",
)
@click.option(
    "--zookeeper",
    metavar="HOSTS",
    help="DEPRECATED: the ZooKeeper connection string, host:port[/chroot]; several hosts "
    "may be given for fail-over. Use --bootstrap-server instead.",
)
@click.option("--list", "list_", is_flag=True, help="List all available topics.")
@click.option("--create", is_flag=True, help="Create a new topic.")
@click.option("--delete", is_flag=True, help="Delete a topic (mark it for deletion).")
@click.option(
    "--alter",
    is_flag=True,
    help="Alter the number of partitions, replica assignment, and/or configuration for the topic.",
)
@click.option("--describe", is_flag=True, help="List details for the given topics.")
@click.option(
    "--topic",
    metavar="TOPIC",
    help="The topic to create, alter, describe or delete. A regular expression except with "
    "--create: quote it and escape regular expression symbols with '\\', e.g. \"test\\.topic\".",
)
@click.option(
    "--partitions",
    type=int,
    metavar="N",
    help="The number of partitions for the topic being created or altered (WARNING: if "
    "partitions are increased for a topic that has a key, the partition logic or ordering "
    "of the messages will be affected). Optional for --create with --bootstrap-server: "
    "the cluster's default (num.partitions).",
)
@click.option(
    "--replication-factor",
    type=int,
    metavar="N",
    help="The replication factor for each partition in the topic being created. Optional "
    "with --bootstrap-server: the cluster's default (default.replication.factor).",
)
@click.option(
    "--replica-assignment",
    metavar="B1:B2,B1:B2,...",
    help="A list of manual partition-to-broker assignments for the topic being created or "
    "altered: partitions separated by ',', a partition's replicas by ':', the first being "
    "the preferred leader (e.g. 1:2:0,2:0:1,0:1:2).",
)
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A topic configuration override for the topic being created or altered "
    "(repeatable), e.g. --config retention.ms=86400000.",
)
@click.option(
    "--delete-config",
    "delete_configs",
    multiple=True,
    metavar="NAME",
    help="A topic configuration override to remove from an existing topic (repeatable).",
)
@click.option(
    "--under-replicated-partitions",
    is_flag=True,
    help="When describing topics, only show under replicated partitions.",
)
@click.option(
    "--unavailable-partitions",
    is_flag=True,
    help="When describing topics, only show partitions whose leader is not available.",
)
@click.option(
    "--under-min-isr-partitions",
    is_flag=True,
    help="When describing topics, only show partitions whose ISR is smaller than the "
    "topic's min.insync.replicas. Not with --zookeeper.",
)
@click.option(
    "--at-min-isr-partitions",
    is_flag=True,
    help="When describing topics, only show partitions whose ISR is as large as the topic's "
    "min.insync.replicas. Not with --zookeeper.",
)
@click.option(
    "--topics-with-overrides",
    is_flag=True,
    help="When describing topics, only show topics that have overridden configs.",
)
@click.option(
    "--if-exists",
    is_flag=True,
    help="When altering, deleting or describing topics, act only if the topic exists.",
)
@click.option(
    "--if-not-exists",
    is_flag=True,
    help="When creating a topic, act only if it does not already exist.",
)
@click.option("--disable-rack-aware", is_flag=True, help="Disable rack aware replica assignment.")
@click.option(
    "--force", is_flag=True, help="Suppress console prompts (accepted for compatibility)."
)
@click.option(
    "--exclude-internal",
    is_flag=True,
    help="Exclude internal topics (__consumer_offsets, __transaction_state) when listing or "
    "describing; they are listed by default.",
)
def command(
    bootstrap_server: str | None,
    command_config: str | None,
    zookeeper: str | None,
    list_: bool,
    create: bool,
    delete: bool,
    alter: bool,
    describe: bool,
    topic: str | None,
    partitions: int | None,
    replication_factor: int | None,
    replica_assignment: str | None,
    configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
    under_replicated_partitions: bool,
    unavailable_partitions: bool,
    under_min_isr_partitions: bool,
    at_min_isr_partitions: bool,
    topics_with_overrides: bool,
    if_exists: bool,
    if_not_exists: bool,
    disable_rack_aware: bool,
    force: bool,
    exclude_internal: bool,
) -> None:
    """Create, delete, describe, or change a topic.

    Exactly one action: --list, --describe, --create, --alter or --delete.
    """
    chosen = {
        "list": list_,
        "describe": describe,
        "create": create,
        "alter": alter,
        "delete": delete,
    }
    opts = TopicCommandOptions(
        zookeeper=zookeeper,
        bootstrap_server=bootstrap_server,
        actions=[name for name, on in chosen.items() if on],
        topic=topic,
        partitions=partitions,
        replication_factor=replication_factor,
        replica_assignment=replica_assignment,
        configs=list(configs),
        delete_configs=list(delete_configs),
        if_exists=if_exists,
        if_not_exists=if_not_exists,
        disable_rack_aware=disable_rack_aware,
        under_replicated_partitions=under_replicated_partitions,
        unavailable_partitions=unavailable_partitions,
        topics_with_overrides=topics_with_overrides,
        under_min_isr_partitions=under_min_isr_partitions,
        at_min_isr_partitions=at_min_isr_partitions,
        exclude_internal=exclude_internal,
        command_config=command_config,
    )
    try:
        opts.check_args()
    except TopicCommandError as e:
        raise OneLineError(f"{e} (see 'kafpy topics --help')") from None
    client_options = load_command_config(command_config, lambda line: click.echo(line, err=True))

    async def main() -> None:
        async with topic_service(opts, client_options) as service:
            await run_topic_command(service, opts, click.echo)

    run_command(main, "Error while executing topic command : ")
