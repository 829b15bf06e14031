"""The `kafpy` command: a group whose subcommands live one per module in `kafpy.cli`.

Subcommands are imported only when used, so `kafpy topics` does not pay for the broker.
Each module named in COMMANDS defines a click command called `command`.

Every command ends quietly when its output is closed (`kafpy dump-log ... | head`): as
Python's documentation advises for SIGPIPE, the entry point turns a write to a closed
stdout into an exit with status 141 (128 + SIGPIPE, what a shell shows for a command
SIGPIPE ended) and points stdout at /dev/null so nothing more is written or reported.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import signal
import sys
from typing import Any

import click

from kafpy.common.extras import MissingExtraError, missing_modules, require_extra

COMMANDS: dict[str, str] = {
    "server": "kafpy.cli.server",
    "server-stop": "kafpy.cli.server_stop",
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
    "delete-records": "kafpy.cli.delete_records",
    "log-dirs": "kafpy.cli.log_dirs",
    "reassign-partitions": "kafpy.cli.reassign_partitions",
    "producer-perf-test": "kafpy.cli.producer_perf_test",
    "consumer-perf-test": "kafpy.cli.consumer_perf_test",
    "console": "kafpy.cli.console",
    "transactions": "kafpy.cli.transactions",
    "acls": "kafpy.cli.acls",
    "features": "kafpy.cli.features",
    "delegation-tokens": "kafpy.cli.delegation_tokens",
    "schema-registry": "kafpy.cli.schema_registry",
}

# the commands that need an extra beyond the core install (kafpy/common/extras.py)
COMMAND_EXTRAS: dict[str, str] = {"console": "console", "schema-registry": "schema-registry"}

OUTPUT_CLOSED_EXIT_STATUS = 128 + signal.SIGPIPE


class OutputClosed(SystemExit):
    """The reader of stdout went away. A SystemExit, so that the commands' own
    `except Exception` / `except OSError` handlers do not report it as a failure."""


class _StdoutFile(io.FileIO):
    """stdout's file descriptor, raising OutputClosed instead of BrokenPipeError."""

    def write(self, data: Any) -> int:
        try:
            written: int = super().write(data)
        except BrokenPipeError:
            raise OutputClosed(OUTPUT_CLOSED_EXIT_STATUS) from None
        return written


def _guard_stdout() -> int | None:
    """Route sys.stdout through _StdoutFile; returns stdout's fd (None when stdout is not
    a file descriptor, e.g. under click's CliRunner)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    old = sys.stdout
    old.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_StdoutFile(fd, "w", closefd=False)),
        encoding=old.encoding,
        errors=old.errors,
        line_buffering=bool(old.line_buffering),
    )
    return fd


def _needs_extra(cmd_name: str, extra: str) -> click.Command:
    """A stand-in for a command whose extra is not installed: it says which, and exits 1."""

    def refuse() -> None:
        try:
            require_extra(extra, f"kafpy {cmd_name}")
        except MissingExtraError as e:
            raise click.ClickException(str(e)) from None

    return click.Command(
        cmd_name,
        callback=refuse,
        help=f"(needs `pip install 'kafpy[{extra}]'`)",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n, m in COMMANDS.items() if importlib.util.find_spec(m) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None or importlib.util.find_spec(module) is None:
            return None
        extra = COMMAND_EXTRAS.get(cmd_name)
        if extra is not None and missing_modules(extra):
            return _needs_extra(cmd_name, extra)
        cmd: click.Command = importlib.import_module(module).command
        return cmd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The entry point (`kafpy ...`, `python -m kafpy ...`)."""
        fd = _guard_stdout()
        try:
            return super().__call__(*args, **kwargs)
        except OutputClosed:
            if fd is not None:  # the final flush at exit must not fail again
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, fd)
                os.close(devnull)
            raise


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafpy")
def main() -> None:
    """kafpy: a Kafka-compatible distributed commit log."""
