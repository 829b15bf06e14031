"""`kafpy console`: the web console (kafpy.console) over a cluster, on a local HTTP port.

    kafpy console --bootstrap-server localhost:9092 [--port 8080] [--host 127.0.0.1]
                  [--allow-writes] [--command-config client.properties]
                  [--schema-registry http://localhost:8081]

It is a client: any Kafka-protocol cluster will do. Once listening it prints one line
with its address (port 0 picks a free port, and the line says which); it runs until
interrupted or terminated. Client settings (request.timeout.ms, client.id, ...) come
from --command-config as for the other admin commands. With --schema-registry, keys and
values in Confluent's framing are shown decoded to JSON (kafpy.console.schema_decoder).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING

import click
from aiohttp import web

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, load_command_config
from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.common.logger import KafkaLogFormatter
from kafpy.console.app import create_app
from kafpy.console.cluster_service import DEFAULT_TIMEOUT_S, ClusterService

if TYPE_CHECKING:
    from kafpy.console.schema_decoder import SchemaDecoder


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KafkaLogFormatter())
    logger = logging.getLogger("kafpy.console")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


async def serve(
    bootstrap_server: str,
    host: str,
    port: int,
    allow_writes: bool,
    client_options: dict[str, object],
    schema_registry: str | None = None,
) -> None:
    """Serve the console until SIGINT or SIGTERM."""
    request_timeout_ms = client_options.get("request_timeout_ms")
    timeout_s = (
        max(DEFAULT_TIMEOUT_S, 1.5 * request_timeout_ms / 1000)
        if isinstance(request_timeout_ms, int)
        else DEFAULT_TIMEOUT_S
    )
    service = ClusterService(
        bootstrap_server,
        client_options,
        timeout_s=timeout_s,
        schema_decoder=schema_decoder(schema_registry),
    )
    runner = web.AppRunner(create_app(service, allow_writes=allow_writes), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as e:
            raise OneLineError(
                f"Cannot listen on {host}:{port}: {e.strerror or e}. Choose another --port."
            ) from None
        bound = runner.addresses[0][1] if runner.addresses else port
        mode = "writes allowed" if allow_writes else "read-only"
        click.echo(
            f"kafpy console serving http://{host}:{bound}/ for cluster {bootstrap_server} ({mode})",
        )
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


@click.command(
    "console", cls=AdminCommand, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--bootstrap-server", required=True, metavar="HOST:PORT[,...]", help="The cluster to show."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
    help="The HTTP port (0: any free port).",
)  # fmt: skip
@click.option(
    "--allow-writes", is_flag=True,
    help="Allow creating and deleting topics and resetting consumer group offsets.",
)  # fmt: skip
@click.option(
    "--command-config", metavar="FILE",
    help="A properties file of client settings (request.timeout.ms, client.id, ...).",
)  # fmt: skip
@click.option(
    "--schema-registry", metavar="URL",
    help="A schema registry (http://host:port): keys and values in Confluent's framing are "
    "shown decoded, as JSON (needs the extra schema-registry).",
)  # fmt: skip
def command(
    bootstrap_server: str,
    host: str,
    port: int,
    allow_writes: bool,
    command_config: str | None,
    schema_registry: str | None,
) -> None:
    """Serve a web console showing the cluster's brokers, topics, consumer groups and messages."""
    options = load_command_config(command_config, lambda line: click.echo(line, err=True))
    schema_decoder(schema_registry)  # refused before serving: the extra, the URL
    _log_to_stderr()
    asyncio.run(serve(bootstrap_server, host, port, allow_writes, options, schema_registry))


def schema_decoder(url: str | None) -> SchemaDecoder | None:
    """The decoder of Confluent-framed records at the registry `url`; a missing extra or a
    URL that is not one is a OneLineError."""
    if url is None:
        return None
    try:
        require_extra("schema-registry", "kafpy console --schema-registry")
    except MissingExtraError as e:
        raise OneLineError(str(e)) from None
    from kafpy.client.schema_registry_client import SchemaRegistryClientError
    from kafpy.console.schema_decoder import SchemaDecoder

    try:
        return SchemaDecoder(url)
    except SchemaRegistryClientError as e:
        raise OneLineError(f"--schema-registry: {e}") from None
