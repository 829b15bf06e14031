"""`kafpy configs`: describe and alter configs, like kafka-configs.sh.

With --zookeeper (topics): an alter rewrites /config/topics/<topic> and records a change
notification under /config/changes, which the brokers apply. With --bootstrap-server
(topics and brokers, --entity-default for the cluster-wide broker defaults): through
DescribeConfigs and IncrementalAlterConfigs. Errors are one line on stderr, exit status 1.
"""

from __future__ import annotations

from typing import Any

import click

from kafpy.admin.config_command import (
    ConfigCommandError,
    ConfigCommandOptions,
    run_config_command,
    run_config_command_via_admin,
)
from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
    run_on_store,
)
from kafpy.client.admin_client import AdminClient
from kafpy.common.client_quota_config import DEFAULT
from kafpy.metadata.kafka_zk_client import KafkaZkClient


@click.command(
    "configs",
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
    metavar="HOST:PORT",
    help="The Kafka server to connect to (instead of --zookeeper); needed for broker configs.",
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="A properties file of admin client configs (e.g. security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config), "
    "used with --bootstrap-server.",
)
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option(
    "--entity-type",
    "entity_types",
    multiple=True,
    metavar="TYPE",
    help="Type of entity: 'topics', 'clients' (quotas), 'users' (quotas and SCRAM "
    "credentials), 'ips' (connection_creation_rate), or 'brokers' with --bootstrap-server. "
    "Give it twice, users then clients, for a user's client id.",
)
@click.option(
    "--entity-name",
    "entity_names",
    multiple=True,
    metavar="NAME",
    help="Name of the entity (a topic name, a broker id, a client id, a user, an IP). Without it, "
    "--describe lists every entity.",
)
@click.option(
    "--entity-default",
    count=True,
    help="The default of the entity type (brokers, users, clients, ips).",
)
@click.option(
    "--all",
    "describe_all",
    is_flag=True,
    help="With --describe: every config, not only those set on the entity.",
)
@click.option(
    "--add-config",
    metavar="K=V,K2=V2",
    help="Key=value pairs of configs to add or change. Square brackets group values that "
    "contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.",
)
@click.option(
    "--delete-config",
    multiple=True,
    metavar="K1,K2",
    help="Config keys to remove: 'k1,k2' (repeatable).",
)
@click.option(
    "--force", is_flag=True, help="Suppress console prompts (accepted for compatibility)."
)
def command(
    zookeeper: str | None,
    bootstrap_server: str | None,
    command_config: str | None,
    alter: bool,
    describe: bool,
    entity_types: tuple[str, ...],
    entity_names: tuple[str, ...],
    entity_default: int,
    describe_all: bool,
    add_config: str | None,
    delete_config: tuple[str, ...],
    force: bool,
) -> None:
    """Add/Remove entity config for a topic, a user (SCRAM credentials) or a broker.

    Exactly one action: --describe or --alter.
    """
    entity_type, entity_name, entity_default = _entity(entity_types, entity_names, entity_default)
    opts = ConfigCommandOptions(
        zookeeper=zookeeper,
        actions=[name for name, on in (("alter", alter), ("describe", describe)) if on],
        entity_type=entity_type,
        entity_name=entity_name,
        add_config=add_config,
        delete_config=list(delete_config),
        bootstrap_server=bootstrap_server,
        entity_default=entity_default and entity_name is None,
        describe_all=describe_all,
    )
    try:
        opts.check_args()
    except ConfigCommandError as e:
        raise OneLineError(f"{e} (see 'kafpy configs --help')") from None
    if bootstrap_server is not None:
        options = load_command_config(command_config, lambda line: click.echo(line, err=True))
        _run_via_admin(bootstrap_server, opts, options)
        return
    assert opts.zookeeper is not None

    async def body(zk: KafkaZkClient) -> None:
        await run_config_command(zk, opts, click.echo)

    run_on_store(opts.zookeeper, body, "Error while executing config command : ")


def _entity(
    types: tuple[str, ...], names: tuple[str, ...], defaults: int
) -> tuple[str | None, str | None, bool]:
    """One entity from the --entity-type/--entity-name/--entity-default options: a single
    type, or users then clients for a user's client id (`alice/clients/c1`), as Kafka's
    ConfigCommand reads them; <default> stands for --entity-default."""
    if len(types) <= 1:
        if len(names) > 1 or (names and defaults):
            raise OneLineError(
                "Give one --entity-name or --entity-default per --entity-type "
                "(see 'kafpy configs --help')"
            )
        entity_type = types[0] if types else None
        if defaults and entity_type in ("users", "clients", "ips"):
            return entity_type, DEFAULT, False
        return entity_type, (names[0] if names else None), defaults > 0
    if types != ("users", "clients") or len(types) != len(names) + defaults or (names and defaults):
        raise OneLineError(
            "Two --entity-type options must be 'users' then 'clients', each with an "
            "--entity-name, or both with --entity-default (see 'kafpy configs --help')"
        )
    user, client = names if names else (DEFAULT, DEFAULT)
    return "users", f"{user}/clients/{client}", False


def _run_via_admin(
    bootstrap_server: str, opts: ConfigCommandOptions, options: dict[str, Any]
) -> None:
    async def main() -> None:
        admin = AdminClient.connect(bootstrap_server, **{"client_id": "kafpy-configs", **options})
        try:
            await run_config_command_via_admin(admin, opts, click.echo)
        except ConfigCommandError as e:
            raise OneLineError(f"{e} (see 'kafpy configs --help')") from None
        finally:
            await admin.close()

    run_command(main, "Error while executing config command : ")
