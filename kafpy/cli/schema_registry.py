"""`kafpy schema-registry schema-registry.properties [--override key=value ...]`: serve
Confluent Schema Registry's REST API v1 over a Kafka cluster (kafpy.schema_registry,
extra `schema-registry`).

The properties are Confluent's (`listeners`, `kafkastore.bootstrap.servers`,
`kafkastore.topic`, `schema.compatibility.level`, `kafkastore.security.protocol`, ...).
The registry reads its topic to the end before it listens; once listening it prints one
line per listener with the address (port 0 picks a free port, and the line says which),
and runs until SIGINT or SIGTERM. Logs go to stderr in Kafka's layout.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path

import click
from aiohttp import web

from kafpy.cli.command_line_utils import OneLineError, parse_overrides
from kafpy.common.errors import KafkaError
from kafpy.common.event_loop import run_event_loop, settle_garbage_collector
from kafpy.common.logger import configure_logging
from kafpy.common.properties import PropertiesError, load_properties
from kafpy.schema_registry.kafka_schema_registry import KafkaSchemaRegistry
from kafpy.schema_registry.kafka_store import StoreInitError
from kafpy.schema_registry.leader_elector import SchemaRegistryIdentity
from kafpy.schema_registry.schema_registry_config import SchemaRegistryConfig
from kafpy.schema_registry.schema_registry_rest_application import create_app

_log = logging.getLogger("kafpy.schema_registry")


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to the listener's address, not yet listening (connections are refused
    until the registry serves)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as e:
        raise OneLineError(
            f"Cannot listen on {host}:{port}: {e.strerror or e}. Change listeners."
        ) from None
    sock.setblocking(False)
    return sock


async def _start(
    registry: KafkaSchemaRegistry, runner: web.AppRunner, config: SchemaRegistryConfig
) -> list[str]:
    """Read the store, join the group under the first listener's bound port, then listen;
    the URLs served."""
    await registry.init()
    # what was read (every schema, parsed) lives as long as the process: out of the
    # collector's walks, as the broker does after start-up
    settle_garbage_collector()
    sockets = [_bind(host, port) for host, port in config.listeners]
    try:
        port = sockets[0].getsockname()[1]
        await registry.elect(
            SchemaRegistryIdentity(config.host_name, port, config.leader_eligibility)
        )
        await runner.setup()
        for sock in sockets:
            await web.SockSite(runner, sock).start()
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return [
        f"http://{host}:{sock.getsockname()[1]}"
        for (host, _), sock in zip(config.listeners, sockets, strict=True)
    ]


async def serve(config: SchemaRegistryConfig) -> None:
    """Read the store, be elected, listen, then serve until SIGINT or SIGTERM (which also
    ends a start-up under way)."""
    registry = KafkaSchemaRegistry(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = web.AppRunner(create_app(registry), access_log=None)
    try:
        starting = asyncio.create_task(_start(registry, runner, config))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([starting, stopped], return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            return
        stopped.cancel()
        bound = starting.result()
        _log.info("Server started, listening for requests...")
        click.echo(
            f"kafpy schema-registry serving {', '.join(bound)} with the schemas of topic "
            f"{config.topic} on cluster {config.bootstrap_servers}"
        )
        sys.stdout.flush()
        await stop.wait()
    finally:
        await runner.cleanup()
        await registry.close()


@click.command("schema-registry", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("properties", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a property of the file; may be repeated.",
)
def command(properties: Path | None, overrides: tuple[str, ...]) -> None:
    """Serve Confluent Schema Registry's REST API from PROPERTIES (Confluent's keys:
    listeners, kafkastore.bootstrap.servers, kafkastore.topic, schema.compatibility.level,
    kafkastore.security.protocol, kafkastore.ssl.*, kafkastore.sasl.*)."""
    configure_logging()
    extra = parse_overrides(overrides)
    try:
        props = {} if properties is None else load_properties(properties)
        source = "the overrides" if properties is None else str(properties)
        config = SchemaRegistryConfig.from_props(
            {**props, **extra}, source=source, warn=_log.warning
        )
    except (KafkaError, PropertiesError) as e:
        click.echo(f"Invalid schema registry configuration: {e}", err=True)
        sys.exit(1)
    try:
        run_event_loop(serve(config))
    except StoreInitError as e:
        click.echo(f"kafpy schema-registry: {e}", err=True)
        sys.exit(1)
