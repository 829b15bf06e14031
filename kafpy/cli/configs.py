"""`kafpy configs`: describe and alter topic config overrides, like kafka-configs.sh --zookeeper.

An alter rewrites /config/topics/<topic> and records a change notification under
/config/changes, which the brokers apply. Errors are one line on stderr, exit status 1.
"""

from __future__ import annotations

import click

from kafpy.admin.config_command import (
    ConfigCommandError,
    ConfigCommandOptions,
    run_config_command,
)
from kafpy.cli.command_line_utils import AdminCommand, OneLineError, run_on_store
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
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option(
    "--entity-type",
    metavar="TYPE",
    help="Type of entity; kafpy supports 'topics'.",
)
@click.option(
    "--entity-name",
    metavar="NAME",
    help="Name of the entity (the topic name). Without it, --describe lists every topic "
    "that has overrides.",
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
    alter: bool,
    describe: bool,
    entity_type: str | None,
    entity_name: str | None,
    add_config: str | None,
    delete_config: tuple[str, ...],
    force: bool,
) -> None:
    """Add/Remove entity config for a topic.

    Exactly one action: --describe or --alter.
    """
    opts = ConfigCommandOptions(
        zookeeper=zookeeper,
        actions=[name for name, on in (("alter", alter), ("describe", describe)) if on],
        entity_type=entity_type,
        entity_name=entity_name,
        add_config=add_config,
        delete_config=list(delete_config),
    )
    try:
        opts.check_args()
    except ConfigCommandError as e:
        raise OneLineError(f"{e} (see 'kafpy configs --help')") from None
    assert opts.zookeeper is not None

    async def body(zk: KafkaZkClient) -> None:
        await run_config_command(zk, opts, click.echo)

    run_on_store(opts.zookeeper, body, "Error while executing config command : ")
