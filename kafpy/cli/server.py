"""`kafpy server [server.properties] [--override key=value ...]`: run one broker.

With no properties file: broker 0 on 127.0.0.1:9092, `log.dirs=./kafpy-data`, on the
embedded metadata store. SIGTERM and SIGINT shut the broker down cleanly.

Logging as Kafka's scripts set it up: the log4j-style file named by `KAFPY_LOG_CONFIG`
(Kafka's KAFKA_LOG4J_OPTS), else `log4j.properties` next to the properties file, else
Kafka's layout (`kafpy.common.logger.DEFAULT_LOG4J_PROPERTIES`). With `LOG_DIR` set,
server.log, controller.log, state-change.log and log-cleaner.log are written there, rolled
every hour; without it, logs go to stderr only.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import click

from kafpy.cli.command_line_utils import parse_overrides
from kafpy.common.errors import KafkaError
from kafpy.common.event_loop import run_event_loop, settle_garbage_collector
from kafpy.common.logger import LoggingConfigError, configure_logging, load_logging_config
from kafpy.common.properties import PropertiesError
from kafpy.metadata.errors import MetadataStoreError
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.kafka_server import KafkaServer

DEFAULTS = {
    "broker.id": "0",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "log.dirs": "./kafpy-data",
}


LOG_CONFIG_ENV = "KAFPY_LOG_CONFIG"
LOG_CONFIG_FILE = "log4j.properties"


def _logging_config_path(properties: Path | None) -> Path | None:
    """KAFPY_LOG_CONFIG, else log4j.properties beside the properties file, else None."""
    named = os.environ.get(LOG_CONFIG_ENV)
    if named:
        return Path(named)
    if properties is not None and (properties.parent / LOG_CONFIG_FILE).is_file():
        return properties.parent / LOG_CONFIG_FILE
    return None


async def _run(config: KafkaConfig, bound_ports_file: Path | None = None) -> None:
    server = KafkaServer(config, bound_ports_file=bound_ports_file)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    await server.startup()
    settle_garbage_collector()
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
@click.option(
    "--bound-ports-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Once the listeners are bound, write the port each got there as JSON "
    '({"PLAINTEXT": 40123}); for listeners on port 0.',
)
def command(
    properties: Path | None, overrides: tuple[str, ...], bound_ports_file: Path | None
) -> None:
    """Start a broker from PROPERTIES (Kafka's server.properties keys).

    Without PROPERTIES: broker.id=0, listeners=PLAINTEXT://127.0.0.1:9092,
    log.dirs=./kafpy-data and the embedded metadata store (no zookeeper.connect).
    A listener on port 0 binds a free port, which the broker registers and advertises;
    --bound-ports-file tells the process that started it (kafpy.network.bound_ports).
    """
    # LOG_DIR is the environment variable Kafka's scripts use for the log files' directory
    logs_dir = os.environ.get("LOG_DIR") or None
    log_config_path = _logging_config_path(properties)
    try:
        log_config = None if log_config_path is None else load_logging_config(log_config_path)
        configure_logging(logs_dir=logs_dir, config=log_config)
    except (LoggingConfigError, PropertiesError, OSError) as e:
        click.echo(f"Invalid logging configuration {log_config_path}: {e}", err=True)
        sys.exit(1)
    extra = parse_overrides(overrides)
    try:
        if properties is None:
            config = KafkaConfig({**DEFAULTS, **extra})
        else:
            config = KafkaConfig.from_file(properties, extra)
    except (KafkaError, PropertiesError) as e:
        click.echo(f"Invalid broker configuration: {e}", err=True)
        sys.exit(1)
    try:
        run_event_loop(_run(config, bound_ports_file))
    except (KafkaError, MetadataStoreError, OSError) as e:
        # an OSError's own sentence without its "[Errno 99]" prefix (kept when it names a file)
        message = str(e)
        if isinstance(e, OSError) and e.strerror and e.filename is None:
            message = e.strerror
        click.echo(f"kafpy server: {message}", err=True)
        sys.exit(1)
