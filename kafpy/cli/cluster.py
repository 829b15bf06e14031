"""`kafpy cluster up|down|status|restart`: a local development cluster on loopback.

`up` starts a ZooKeeper (unless `--zookeeper` names one) and N `kafpy server` processes,
each with its own ports and directories under `--dir`, detached so they outlive the
command; it returns once every broker is registered and serving, and prints the bootstrap
string. `down` stops the processes recorded in `<dir>/cluster.json`; `status` says which
run and who is controller; `restart BROKER_ID` stops one broker cleanly and starts it again.
A broker restarted by hand (`kafpy server <dir>/broker-<id>/server.properties`) is found
by the lock it holds on its log dir, so `status`, `down` and `restart` see it. The work is done by `kafpy.tools.local_cluster.LocalCluster`.
Errors are one line on stderr, exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafpy.cli.command_line_utils import OneLineError, quiet_logging
from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.tools.local_cluster import (
    CLUSTER_FILE,
    DEFAULT_ROLLING_WAIT_S,
    DEFAULT_STOP_TIMEOUT_S,
    ClusterStatus,
    LocalCluster,
    LocalClusterError,
)

DEFAULT_DIR = Path("kafpy-cluster")

_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="The cluster's directory: cluster.json, ZooKeeper's and each broker's files.",
)


def _parse_overrides(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise OneLineError(f"--override '{v}' is not of the form key=value.")
        out[key.strip()] = value.strip()
    return out


def _echo(line: str) -> None:
    click.echo(line)


@click.group("cluster", context_settings={"help_option_names": ["-h", "--help"]})
def command() -> None:
    """A local cluster: ZooKeeper and several brokers on 127.0.0.1."""
    quiet_logging()


@command.command("up")
@click.option("--brokers", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many brokers (ids 0..N-1).")  # fmt: skip
@click.option("--zookeeper", metavar="HOST:PORT[/CHROOT]", default=None,
              help="Use this ZooKeeper instead of starting one.")  # fmt: skip
@_dir_option
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="A broker property for every broker's server.properties; may be repeated.")  # fmt: skip
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=60.0,
              show_default=True, help="Seconds to wait for ZooKeeper and the brokers.")  # fmt: skip
@click.option("--secure", is_flag=True,
              help="Lock the cluster down: SASL_SSL listeners (TLS with a CA made for the cluster, "
                   "SCRAM-SHA-512), ACLs with the super user admin; its client config is written "
                   "to <dir>/client.properties.")  # fmt: skip
def up(
    brokers: int,
    zookeeper: str | None,
    directory: Path,
    overrides: tuple[str, ...],
    timeout_s: float,
    secure: bool,
) -> None:
    """Start ZooKeeper and the brokers, detached; print the bootstrap string.

    A directory holding a stopped cluster of the same size is started again, with its
    ports and data.
    """
    extra = _parse_overrides(overrides)
    if secure:
        try:
            require_extra("crypto", "kafpy cluster up --secure")
        except MissingExtraError as e:
            raise OneLineError(str(e)) from None
    fresh = not (directory / CLUSTER_FILE).exists()
    cluster = _cluster_for_up(directory, brokers, zookeeper, extra, secure)
    cluster.start_timeout_s = timeout_s
    try:
        try:
            cluster.start(_echo)
        except BaseException:
            if fresh:
                # it never ran: the next `up` starts afresh, with other options if need be
                cluster.cluster_file.unlink(missing_ok=True)
            raise
    except LocalClusterError as e:
        raise OneLineError(f"Cannot start the cluster: {e}") from None
    except KeyboardInterrupt:
        raise OneLineError("Interrupted; the processes started were stopped again.") from None
    for b in cluster.brokers.values():
        _echo(f"broker {b.broker_id} at {b.address} (pid {b.pid}, logs in {b.logs_dir})")
    _echo(f"zookeeper.connect={cluster.zookeeper.connect}")
    _echo(f"bootstrap.servers={cluster.bootstrap_servers}")
    if cluster.secure:
        _echo(
            f"SASL_SSL with SCRAM and ACLs; the super user's client config: "
            f"{cluster.client_properties_path} (e.g. kafpy topics --bootstrap-server "
            f"{cluster.bootstrap_servers} --command-config {cluster.client_properties_path} --list)"
        )
    _echo(f"Stop it with: kafpy cluster down --dir {directory}")


def _cluster_for_up(
    directory: Path,
    brokers: int,
    zookeeper: str | None,
    overrides: dict[str, str],
    secure: bool = False,
) -> LocalCluster:
    """A new cluster in `directory`, or the stopped one recorded there."""
    if not (directory / CLUSTER_FILE).exists():
        try:
            return LocalCluster(
                directory, brokers, zookeeper_connect=zookeeper, overrides=overrides, secure=secure
            )
        except LocalClusterError as e:
            raise OneLineError(str(e)) from None
    try:
        cluster = LocalCluster.load(directory)
    except LocalClusterError as e:
        raise OneLineError(str(e)) from None
    running = cluster.running_processes()
    if running:
        raise OneLineError(
            f"A cluster is already running in {directory} ({', '.join(running)}); "
            f"stop it with `kafpy cluster down --dir {directory}` or choose another --dir."
        )
    if len(cluster.brokers) != brokers:
        raise OneLineError(
            f"{directory} holds a stopped cluster of {len(cluster.brokers)} broker(s), not "
            f"{brokers}; start it with --brokers {len(cluster.brokers)}, choose another --dir, "
            "or delete the directory."
        )
    if zookeeper is not None and zookeeper != cluster.zookeeper.connect:
        raise OneLineError(
            f"{directory} holds a stopped cluster on ZooKeeper {cluster.zookeeper.connect}, "
            f"not {zookeeper}; choose another --dir or delete the directory."
        )
    if secure and not cluster.secure:
        raise OneLineError(
            f"{directory} holds a stopped cluster that is not secure; start it without "
            "--secure, choose another --dir, or delete the directory."
        )
    if overrides:
        cluster.overrides.update(overrides)
    return cluster


@command.command("down")
@_dir_option
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), default=DEFAULT_STOP_TIMEOUT_S,
              show_default=True, help="Seconds to wait after SIGTERM before SIGKILL.")  # fmt: skip
def down(directory: Path, timeout_s: float) -> None:
    """Stop the cluster's brokers and its ZooKeeper (SIGTERM, then SIGKILL)."""
    try:
        cluster = LocalCluster.load(directory)
    except LocalClusterError as e:
        raise OneLineError(str(e)) from None
    if not cluster.running_processes() and not (
        cluster.zookeeper.managed and cluster.zookeeper.jvm_pid and cluster.zookeeper.alive
    ):
        _echo(f"No process of the cluster in {directory} is running.")
        return
    cluster.stop(timeout_s, _echo)
    _echo(f"Cluster in {directory} stopped (its data stays there).")


@command.command("restart")
@click.argument("broker_id", type=int)
@_dir_option
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), default=DEFAULT_STOP_TIMEOUT_S,
              show_default=True, help="Seconds to wait after SIGTERM before SIGKILL.")  # fmt: skip
def restart(broker_id: int, directory: Path, timeout_s: float) -> None:
    """Restart one broker: stop it (SIGTERM, then SIGKILL) and start it again with its
    ports and data; return once it is registered and serving."""
    try:
        cluster = LocalCluster.load(directory)
        cluster.restart_broker(broker_id, timeout_s, _echo)
    except LocalClusterError as e:
        raise OneLineError(f"Cannot restart broker {broker_id}: {e}") from None
    except KeyboardInterrupt:
        raise OneLineError("Interrupted.") from None


@command.command("rolling-restart")
@_dir_option
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), default=DEFAULT_STOP_TIMEOUT_S,
              show_default=True, help="Seconds to wait after SIGTERM before SIGKILL.")  # fmt: skip
@click.option("--wait-timeout", "wait_timeout_s", type=click.FloatRange(min=1),
              default=DEFAULT_ROLLING_WAIT_S, show_default=True,
              help="Seconds to wait before each broker for every partition to be in sync.")  # fmt: skip
def rolling_restart(directory: Path, timeout_s: float, wait_timeout_s: float) -> None:
    """Restart every broker, one at a time, the controller last: before each, wait until
    no partition is under-replicated, so the controlled shutdown hands every leadership to
    an in-sync replica and clients see no unavailable partition."""
    try:
        cluster = LocalCluster.load(directory)
        order = cluster.rolling_restart(timeout_s, _echo, wait_timeout_s)
    except LocalClusterError as e:
        raise OneLineError(f"Rolling restart stopped: {e}") from None
    except KeyboardInterrupt:
        raise OneLineError("Interrupted.") from None
    _echo(
        f"Rolling restart complete: brokers {', '.join(map(str, order))} restarted, "
        "no under-replicated partition."
    )


@command.command("status")
@_dir_option
def status(directory: Path) -> None:
    """Which of the cluster's processes run, and which broker is controller.

    Exit status 0 when every process runs and every broker is registered, else 1.
    """
    try:
        cluster = LocalCluster.load(directory)
    except LocalClusterError as e:
        raise OneLineError(str(e)) from None
    state = cluster.status()
    for line in format_status(state):
        _echo(line)
    healthy = state.zookeeper_alive and all(b.alive and b.registered for b in state.brokers)
    sys.exit(0 if healthy else 1)


def format_status(state: ClusterStatus) -> list[str]:
    """The lines `kafpy cluster status` prints."""
    kind = "managed" if state.zookeeper_managed else "external"
    if state.zookeeper_error is not None:
        zk_state = f"unreachable ({state.zookeeper_error})"
    else:
        zk_state = "running" if state.zookeeper_alive else "not running"
    lines = [f"ZooKeeper {state.zookeeper_connect} ({kind}): {zk_state}"]
    for b in state.brokers:
        words = ["running" if b.alive else "not running"]
        if b.registered is not None:
            words.append("registered" if b.registered else "not registered")
        if b.broker_id == state.controller_id:
            words.append("controller")
        pid = f"pid {b.pid}" if b.pid is not None else "no pid"
        lines.append(f"broker {b.broker_id} {b.address} ({pid}): {', '.join(words)}")
    if state.controller_id is not None:
        lines.append(f"controller: broker {state.controller_id} (epoch {state.controller_epoch})")
    elif state.zookeeper_error is None and state.zookeeper_alive:
        lines.append("controller: none")
    return lines
