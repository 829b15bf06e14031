"""`kafpy topics`: create, alter, delete, list and describe topics, like kafka-topics.sh.

Works on the metadata store directly (`--zookeeper HOST:PORT[/chroot]`), as Kafka 2.x's
kafka-topics.sh does with --zookeeper; the controller of the cluster acts on the writes.
The command is synchronous: it runs the async admin operations with asyncio.run.
Errors are printed to stderr as one line and exit with status 1.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import click

from kafpy.admin.topic_command import (
    TopicCommandError,
    TopicCommandOptions,
    run_topic_command,
)
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store_factory import create_store

CONNECTION_TIMEOUT_MS = 30000


class OneLineError(click.ClickException):
    """A failure shown to the user as one line on stderr, exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


class AdminCommand(click.Command):
    """A click command whose usage errors are one line (with a pointer to --help)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise OneLineError(f"{e.format_message()} (see 'kafpy {self.name} --help')") from None


def quiet_logging() -> None:
    """Keep library log lines (kazoo's reconnection warnings) off the terminal: the command's
    own output and its one-line error are what the user reads."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def run_on_store(
    zookeeper: str, body: Callable[[KafkaZkClient], Awaitable[None]], error_prefix: str
) -> None:
    """Open the store at `zookeeper`, run `body`, close; any failure becomes a OneLineError."""

    async def main() -> None:
        store = create_store(zookeeper, None, connection_timeout_ms=CONNECTION_TIMEOUT_MS)
        await store.start()
        try:
            await body(KafkaZkClient(store))
        finally:
            await store.close()

    quiet_logging()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        raise OneLineError(f"{error_prefix}interrupted") from None
    except Exception as e:  # every failure is reported as one line, never a traceback
        message = str(e) or type(e).__name__
        raise OneLineError(f"{error_prefix}{message}") from None


@click.command(
    "topics",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--zookeeper",
    metavar="HOSTS",
    help="REQUIRED: The connection string for the zookeeper connection in the form "
    "host:port[/chroot]. Multiple hosts can be given to allow fail-over.",
)
@click.option(
    "--bootstrap-server",
    metavar="HOST:PORT[,HOST:PORT]",
    help="The broker(s) to connect to, instead of --zookeeper: the command then works "
    "through the brokers' admin APIs.",
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
    help="The topic to create, alter, delete or describe. Can also accept a regular "
    "expression except for --create.",
)
@click.option(
    "--partitions",
    type=int,
    metavar="N",
    help="The number of partitions for the topic being created or altered (WARNING: if "
    "partitions are increased for a topic that has a key, the partition logic or ordering "
    "of the messages will be affected).",
)
@click.option(
    "--replication-factor",
    type=int,
    metavar="N",
    help="The replication factor for each partition in the topic being created.",
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
    "--if-exists",
    is_flag=True,
    help="When altering or deleting topics, act only if the topic exists.",
)
@click.option(
    "--if-not-exists",
    is_flag=True,
    help="When creating a topic, act only if it does not already exist.",
)
@click.option("--disable-rack-aware", is_flag=True, help="Disable rack aware replica assignment.")
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
    "--topics-with-overrides",
    is_flag=True,
    help="When describing topics, only show topics that have overridden configs.",
)
@click.option(
    "--exclude-internal",
    is_flag=True,
    help="Exclude internal topics (__consumer_offsets, __transaction_state) when listing or "
    "describing; they are listed by default.",
)
@click.option(
    "--force", is_flag=True, help="Suppress console prompts (accepted for compatibility)."
)
def command(
    zookeeper: str | None,
    bootstrap_server: str | None,
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
    if_exists: bool,
    if_not_exists: bool,
    disable_rack_aware: bool,
    under_replicated_partitions: bool,
    unavailable_partitions: bool,
    topics_with_overrides: bool,
    exclude_internal: bool,
    force: bool,
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
        exclude_internal=exclude_internal,
    )
    if bootstrap_server is not None:
        if zookeeper is not None:
            raise OneLineError(
                "Only one of --bootstrap-server or --zookeeper must be specified "
                "(see 'kafpy topics --help')"
            )
        from kafpy.cli.topics_bootstrap import run_with_bootstrap_server

        run_with_bootstrap_server(bootstrap_server, opts)
        return
    try:
        opts.check_args()
    except TopicCommandError as e:
        raise OneLineError(f"{e} (see 'kafpy topics --help')") from None
    assert opts.zookeeper is not None

    async def body(zk: KafkaZkClient) -> None:
        await run_topic_command(zk, opts, click.echo)

    run_on_store(opts.zookeeper, body, "Error while executing topic command : ")
