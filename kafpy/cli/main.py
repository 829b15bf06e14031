"""The `kafpy` command: a group whose subcommands live one per module in `kafpy.cli`.

Subcommands are imported only when used, so `kafpy topics` does not pay for the broker.
Each module named in COMMANDS defines a click command called `command`.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

COMMANDS: dict[str, str] = {
    "server": "kafpy.cli.server",
    "topics": "kafpy.cli.topics",
    "configs": "kafpy.cli.configs",
    "dump-log": "kafpy.cli.dump_log",
    "zookeeper": "kafpy.cli.zookeeper",
    "console-producer": "kafpy.cli.console_producer",
    "console-consumer": "kafpy.cli.console_consumer",
    "cluster": "kafpy.cli.cluster",
    "leader-election": "kafpy.cli.leader_election",
    "consumer-groups": "kafpy.cli.consumer_groups",
    "broker-api-versions": "kafpy.cli.broker_api_versions",
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n, m in COMMANDS.items() if importlib.util.find_spec(m) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None or importlib.util.find_spec(module) is None:
            return None
        cmd: click.Command = importlib.import_module(module).command
        return cmd


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafpy")
def main() -> None:
    """kafpy: a Kafka-compatible distributed commit log."""
