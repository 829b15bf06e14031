"""`kafpy acls`: kafka-acls.sh. Add, remove and list ACLs through a broker
(`--bootstrap-server`, with `--command-config`) or directly in the metadata store
(`--authorizer-properties zookeeper.connect=host:port`), with Kafka's options and output."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kafpy.admin.acl_command import (
    AclCommandError,
    AclCommandOptions,
    AclService,
    AuthorizerAclService,
    BrokerAclService,
    run_acl_command,
)
from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    parse_key_value_args,
    run_command,
)
from kafpy.security.authorizer.acl_authorizer import AUTHORIZER_CLASS_NAMES

_F = TypeVar("_F", bound=Callable[..., Any])
_ERROR_PREFIX = "Error while executing ACL command: "


def _many(*names: str, help: str, metavar: str) -> Callable[[_F], _F]:  # noqa: A002
    return click.option(*names, multiple=True, metavar=metavar, help=help)


@click.command("acls", cls=AdminCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server",
    metavar="HOST:PORT",
    help="The broker(s) to manage ACLs through (CreateAcls, DescribeAcls, DeleteAcls).",
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="A property file of admin client configs (only with --bootstrap-server).",
)
@click.option(
    "--authorizer",
    metavar="CLASS",
    help="The authorizer writing ACLs to the metadata store: kafka.security.authorizer.AclAuthorizer.",
)
@_many(
    "--authorizer-properties",
    metavar="KEY=VALUE",
    help="The authorizer's properties, e.g. zookeeper.connect=localhost:2181.",
)
@click.option("--add", is_flag=True, help="Add ACLs.")
@click.option("--remove", is_flag=True, help="Remove ACLs.")
@click.option(
    "--list", "list_acls", is_flag=True, help="List ACLs for the resources given (all without)."
)
@_many("--topic", metavar="TOPIC", help="A topic ('*' for all).")
@_many("--group", metavar="GROUP", help="A consumer group ('*' for all).")
@_many("--transactional-id", metavar="ID", help="A transactional id ('*' for all).")
@click.option("--cluster", is_flag=True, help="The cluster resource.")
@click.option(
    "--resource-pattern-type",
    default="literal",
    show_default=True,
    metavar="literal|prefixed|any|match",
    help="The pattern type of the resources.",
)
@_many("--allow-principal", metavar="PRINCIPAL", help="A principal to allow (User:alice).")
@_many("--deny-principal", metavar="PRINCIPAL", help="A principal to deny (User:mallory).")
@_many("--allow-host", metavar="HOST", help="A host the allowed principals may connect from ('*').")
@_many("--deny-host", metavar="HOST", help="A host the denied principals are denied from ('*').")
@_many(
    "--operation",
    metavar="OP",
    help="An operation: Read, Write, Create, Delete, Alter, Describe, "
    "ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, TwoPhaseCommit (KIP-939, "
    "on a transactional id), All (default All).",
)
@_many("--principal", metavar="PRINCIPAL", help="With --list: only this principal's ACLs.")
@click.option(
    "--producer",
    is_flag=True,
    help="The ACLs of a producer of the --topic (and --transactional-id).",
)
@click.option(
    "--consumer", is_flag=True, help="The ACLs of a consumer of the --topic in the --group."
)
@click.option(
    "--idempotent", is_flag=True, help="With --producer: IdempotentWrite on the cluster too."
)
@click.option("--force", is_flag=True, help="Do not ask for confirmation.")
def command(
    bootstrap_server: str | None, command_config: str | None, authorizer: str | None,
    authorizer_properties: tuple[str, ...], add: bool, remove: bool, list_acls: bool,
    topic: tuple[str, ...], group: tuple[str, ...], transactional_id: tuple[str, ...], cluster: bool,
    resource_pattern_type: str, allow_principal: tuple[str, ...], deny_principal: tuple[str, ...],
    allow_host: tuple[str, ...], deny_host: tuple[str, ...], operation: tuple[str, ...],
    principal: tuple[str, ...], producer: bool, consumer: bool, idempotent: bool, force: bool,
) -> None:  # fmt: skip
    """Manage ACLs as kafka-acls.sh does."""
    opts = AclCommandOptions(
        add=add, remove=remove, list_acls=list_acls, topics=list(topic), groups=list(group),
        transactional_ids=list(transactional_id), cluster=cluster,
        resource_pattern_type=resource_pattern_type, allow_principals=list(allow_principal),
        deny_principals=list(deny_principal), allow_hosts=list(allow_host),
        deny_hosts=list(deny_host), operations=list(operation), principals=list(principal),
        producer=producer, consumer=consumer, idempotent=idempotent, force=force,
    )  # fmt: skip
    if bootstrap_server is not None and authorizer is not None:
        _usage("Only one of --bootstrap-server or --authorizer must be specified")
    if bootstrap_server is None and command_config is not None:
        _usage("The --command-config option can only be used with --bootstrap-server option")
    if bootstrap_server is not None and authorizer_properties:
        _usage("The --authorizer-properties option can only be used with --authorizer option")
    if authorizer is not None and authorizer not in AUTHORIZER_CLASS_NAMES:
        _usage(
            f"Unknown --authorizer {authorizer}: kafpy provides kafka.security.authorizer.AclAuthorizer"
        )
    props = parse_key_value_args(authorizer_properties, "--authorizer-properties", "acls")
    if bootstrap_server is None and not props.get("zookeeper.connect"):
        _usage('Missing required argument "[authorizer-properties]" with zookeeper.connect=HOST:PORT '
               "(or use --bootstrap-server)")  # fmt: skip
    try:
        opts.check_args()
    except AclCommandError as e:
        _usage(str(e))

    def confirm(question: str) -> bool:
        click.echo(question)
        answer = sys.stdin.readline()
        return answer.strip().lower() == "y"

    async def run(service: AclService) -> None:
        try:
            await run_acl_command(service, opts, click.echo, confirm)
        except AclCommandError as e:
            raise OneLineError(f"{_ERROR_PREFIX}{e}") from None

    if bootstrap_server is not None:
        client_options = load_command_config(
            command_config, lambda line: click.echo(line, err=True)
        )

        async def via_broker() -> None:
            from kafpy.client.kafka_client import KafkaClient

            client = KafkaClient(bootstrap_server, client_id="kafpy-acls", **client_options)
            await client.start()
            try:
                await run(BrokerAclService(client))
            finally:
                await client.close()

        run_command(via_broker, _ERROR_PREFIX)
        return

    async def via_store() -> None:
        from kafpy.cli.command_line_utils import CONNECTION_TIMEOUT_MS
        from kafpy.metadata.store_factory import create_store
        from kafpy.security.authorizer.acl_authorizer import AclAuthorizer

        store = create_store(
            props["zookeeper.connect"], None, connection_timeout_ms=CONNECTION_TIMEOUT_MS
        )
        await store.start()
        acl_authorizer = AclAuthorizer(store)
        try:
            await acl_authorizer.start()
            await run(AuthorizerAclService(acl_authorizer))
        finally:
            await acl_authorizer.close()
            await store.close()

    run_command(via_store, _ERROR_PREFIX)


def _usage(message: str) -> None:
    raise OneLineError(f"{message} (see 'kafpy acls --help')")
