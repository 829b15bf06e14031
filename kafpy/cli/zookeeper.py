"""`kafpy zookeeper`: run a standalone Apache ZooKeeper in the foreground until Ctrl-C.

For trying a multi-broker cluster on one machine (`zookeeper.connect=127.0.0.1:2181`)
with Debian's `zookeeper` package, without configuring its system service.
"""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import click

from kafpy.common.logger import configure_logging
from kafpy.metadata.zookeeper_server import ZooKeeperServer, ZooKeeperServerError


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@click.command(name="zookeeper")
@click.option(
    "--data-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for zoo.cfg, the snapshots, transaction logs and the server's output.",
)
@click.option("--port", type=int, default=2181, show_default=True, help="Client port on 127.0.0.1.")
@click.option(
    "--tick-time-ms",
    type=int,
    default=2000,
    show_default=True,
    help="ZooKeeper's tick; sessions may time out after 2 ticks at the earliest.",
)
def command(data_dir: Path, port: int, tick_time_ms: int) -> None:
    """Run a standalone ZooKeeper on 127.0.0.1 until Ctrl-C."""
    configure_logging()
    server = ZooKeeperServer(data_dir, port, tick_time_ms=tick_time_ms)
    # SIGTERM must also stop the JVM, which runs in its own process group
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        try:
            server.start()
        except ZooKeeperServerError as e:
            raise click.ClickException(str(e)) from e
        click.echo(
            f"ZooKeeper serving on {server.connect_string} (data in {data_dir}); Ctrl-C to stop.",
            err=True,
        )
        code = server.wait()
        raise click.ClickException(
            f"ZooKeeper exited by itself with code {code}. Its output:\n{server.output()}"
        )
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
