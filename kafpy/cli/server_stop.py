"""`kafpy server-stop`: stop the kafpy brokers running on this machine (kafka-server-stop.sh).

Finds every `kafpy server` process in /proc and sends it SIGTERM (or the signal named by
the `SIGNAL` environment variable, as Kafka's script reads it), so each shuts down cleanly.
With none running it prints "No kafka server to stop" and exits 1, as Kafka's does.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import click

NO_SERVER = "No kafka server to stop"


def is_broker_command_line(argv: list[str]) -> bool:
    """Whether a process's arguments are a `kafpy server` (`python -m kafpy server ...`, or the
    `kafpy` script run directly or by its interpreter), not another kafpy command."""
    for i in range(min(len(argv) - 1, 3)):
        if os.path.basename(argv[i]) != "kafpy" or argv[i + 1] != "server":
            continue
        launcher = argv[:i]
        if (
            not launcher
            or launcher[-1] == "-m"
            or (len(launcher) == 1 and os.path.basename(launcher[0]).startswith("python"))
        ):
            return True
    return False


def find_broker_pids(proc: Path = Path("/proc")) -> list[int]:
    """The pids of the `kafpy server` processes visible in `proc`, this process excluded."""
    pids: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        argv = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        if is_broker_command_line(argv):
            pids.append(int(entry.name))
    return sorted(pids)


def _signal_from_env() -> signal.Signals:
    name = os.environ.get("SIGNAL", "TERM").strip().upper().removeprefix("SIG")
    try:
        return signal.Signals[f"SIG{name}"]
    except KeyError:
        raise click.UsageError(
            f"SIGNAL={name} is not a signal name (such as TERM or KILL)"
        ) from None


@click.command("server-stop", context_settings={"help_option_names": ["-h", "--help"]})
def command() -> None:
    """Stop every kafpy broker on this machine (SIGTERM: a clean shutdown)."""
    sig = _signal_from_env()
    pids = find_broker_pids()
    if not pids:
        click.echo(NO_SERVER)
        sys.exit(1)
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass  # it stopped by itself meanwhile
