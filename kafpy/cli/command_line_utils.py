"""What every `kafpy` admin command shares, after Kafka's `kafka.utils.CommandLineUtils`.

A usage or runtime failure is one line on stderr and exit status 1 (`OneLineError`,
`AdminCommand`); library log lines stay off the terminal (`quiet_logging`); an async
command body runs with every failure turned into that one line (`run_command`), on a
metadata store opened for it if the command works through `--zookeeper` (`run_on_store`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import click

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


def run_command(main: Callable[[], Awaitable[None]], error_prefix: str) -> None:
    """Run the coroutine function `main` to completion; any failure (an interrupt too)
    becomes a OneLineError starting with `error_prefix`."""

    async def body() -> None:
        await main()

    quiet_logging()
    try:
        asyncio.run(body())
    except KeyboardInterrupt:
        raise OneLineError(f"{error_prefix}interrupted") from None
    except Exception as e:  # every failure is reported as one line, never a traceback
        message = str(e) or type(e).__name__
        raise OneLineError(f"{error_prefix}{message}") from None


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

    run_command(main, error_prefix)
