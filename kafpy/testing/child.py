"""A kafpy.testing broker as a child process, with its faults controlled by the parent.

`python -m kafpy.testing.child --control-fd N --bound-ports-file F --override key=value ...`
runs a broker as `kafpy server --bound-ports-file F` does, with a FaultInjector in front
of its request handler, and serves the parent's fault commands on the socket `N`: one JSON
object a line, `{"op": "fail_next", "kwargs": {...}}`, each answered by `{"ok": result}`
or `{"error": "message"}`. The parent's FaultInjector forwards its calls here when its
brokers run as child processes (kafpy.testing.broker, mode="subprocess"), so the same
faults work in both modes. The child stops on SIGTERM or when the control socket closes
(its parent is gone).
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import click

from kafpy.common.event_loop import run_event_loop
from kafpy.common.logger import configure_logging
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.kafka_server import KafkaServer
from kafpy.testing.faults import FaultInjector

# what the parent may ask; stop_broker / start_broker are done by the parent itself
REMOTE_OPS = frozenset({"fail_next", "delay", "throttle", "clear", "fired", "drop_connections"})


class _ChildCluster:
    """What a FaultInjector needs of its cluster, for the one broker of this process."""

    mode = "inprocess"

    def __init__(self, server: KafkaServer) -> None:
        self.server = server

    def drop_connections(self, broker_id: int | None = None) -> None:
        if self.server.socket_server is not None:
            self.server.socket_server.close_connections(
                "connections dropped by kafpy.testing faults", abort=True
            )


async def _serve_control(sock: socket.socket, faults: FaultInjector, server: KafkaServer) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        while True:
            line = await reader.readline()
            if not line:
                break  # the parent went away
            try:
                command = json.loads(line)
                op = command["op"]
                if op not in REMOTE_OPS:
                    raise ValueError(f"Unknown fault operation {op!r}")
                result: Any = getattr(faults, op)(**command.get("kwargs", {}))
                answer = {"ok": result}
            except Exception as e:  # the parent raises it again as ValueError/RuntimeError
                answer = {"error": str(e), "type": type(e).__name__}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
    finally:
        server.request_shutdown()
        writer.close()


async def _run(config: KafkaConfig, control_fd: int, bound_ports_file: Path) -> None:
    server = KafkaServer(config, bound_ports_file=bound_ports_file)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    await server.startup()
    faults = FaultInjector(_ChildCluster(server))  # type: ignore[arg-type]
    assert server.socket_server is not None
    server.socket_server.request_interceptor = faults.interceptor(config.broker_id)
    sock = socket.socket(fileno=control_fd)
    control = asyncio.create_task(_serve_control(sock, faults, server))
    try:
        await server.serve_forever()
    finally:
        control.cancel()
        await server.shutdown()


@click.command()
@click.option("--control-fd", type=int, required=True)
@click.option("--override", "overrides", multiple=True)
@click.option("--bound-ports-file", type=click.Path(path_type=Path), required=True)
def main(control_fd: int, overrides: tuple[str, ...], bound_ports_file: Path) -> None:
    """Run one broker of a kafpy.testing cluster as a child process."""
    configure_logging()
    values = dict(o.split("=", 1) for o in overrides)
    try:
        config = KafkaConfig(values)
        run_event_loop(_run(config, control_fd, bound_ports_file))
    except Exception as e:
        click.echo(f"kafpy.testing child broker: {e}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
