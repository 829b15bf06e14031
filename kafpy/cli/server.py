"""`kafpy server [server.properties] [--override key=value ...]`: run one broker.

With no properties file: broker 0 on 127.0.0.1:9092, `log.dirs=./kafpy-data`, on the
embedded metadata store. SIGTERM and SIGINT shut the broker down cleanly. With `LOG_DIR` set, server.log,
controller.log and state-change.log are written there too, as Kafka's scripts do.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import click

from kafpy.common.errors import KafkaError
from kafpy.common.logger import configure_logging
from kafpy.common.properties import PropertiesError
from kafpy.controller.controller_log_files import add_controller_log_files
from kafpy.metadata.errors import MetadataStoreError
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.kafka_server import KafkaServer, run_event_loop

DEFAULTS = {
    "broker.id": "0",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "log.dirs": "./kafpy-data",
}


def _parse_overrides(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"'{v}' is not of the form key=value", param_hint="--override")
        out[key.strip()] = value.strip()
    return out


async def _run(config: KafkaConfig) -> None:
    server = KafkaServer(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    await server.startup()
    try:
        await server.serve_forever()
    finally:
        await server.shutdown()


@click.command("server", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("properties", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a property of the file (or of the defaults); may be repeated.",
)
def command(properties: Path | None, overrides: tuple[str, ...]) -> None:
    """Start a broker from PROPERTIES (Kafka's server.properties keys).

    Without PROPERTIES: broker.id=0, listeners=PLAINTEXT://127.0.0.1:9092,
    log.dirs=./kafpy-data and the embedded metadata store (no zookeeper.connect).
    """
    # LOG_DIR is the environment variable Kafka's scripts use for server.log, controller.log
    # and state-change.log; without it, logs go to stderr only.
    logs_dir = os.environ.get("LOG_DIR") or None
    configure_logging(logs_dir=logs_dir)
    if logs_dir is not None:
        add_controller_log_files(logs_dir)
    extra = _parse_overrides(overrides)
    try:
        if properties is None:
            config = KafkaConfig({**DEFAULTS, **extra})
        else:
            config = KafkaConfig.from_file(properties, extra)
    except (KafkaError, PropertiesError) as e:
        click.echo(f"Invalid broker configuration: {e}", err=True)
        sys.exit(1)
    try:
        run_event_loop(_run(config))
    except (KafkaError, MetadataStoreError, OSError) as e:
        click.echo(f"kafpy server: {e}", err=True)
        sys.exit(1)
