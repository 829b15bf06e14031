"""BrokerLauncher: the one way to start a `kafpy server` process and learn the ports it bound.

kafpy.testing's child process brokers, `kafpy cluster` (kafpy.tools.local_cluster), kafpy's
own test fixtures and its benchmarks start brokers through it. A launcher spawns the
process with its output (unbuffered) appended to a file, then waits for the bound-ports
file the broker writes once its listeners are bound (kafpy.network.bound_ports), failing
at once if the process exits meanwhile. A restart binds the ports of the last start again;
should another process hold one for now (the broker exits saying so), the launcher spawns
it again for BIND_RETRY_S and then gives up naming the port. It stops a process with
SIGTERM, and SIGKILL after a timeout.

The failures are exceptions of their own (BrokerExited, BrokerStartTimeout, PortHeld), so
that each user reports them in its own terms (a pytest failure, a LocalClusterError).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from kafpy.common.wait import wait_until
from kafpy.network.bound_ports import BIND_RETRY_S, address_in_use, read_bound_ports

__all__ = [
    "BrokerExited",
    "BrokerLauncher",
    "BrokerStartError",
    "BrokerStartTimeout",
    "PortHeld",
    "server_command",
]


def server_command(
    overrides: Mapping[str, str] = {},  # noqa: B006 - read only
    *,
    properties: Path | None = None,
    bound_ports_file: Path | None = None,
    python: str = sys.executable,
) -> list[str]:
    """`python -m kafpy server [properties] [--bound-ports-file F] --override k=v ...`."""
    args = [python, "-m", "kafpy", "server"]
    if properties is not None:
        args.append(str(properties))
    if bound_ports_file is not None:
        args += ["--bound-ports-file", str(bound_ports_file)]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    return args


class BrokerStartError(Exception):
    """A broker process did not start; `output` is what it printed (this start's tail)."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


class BrokerExited(BrokerStartError):
    """The process exited while starting, with status `code`."""

    def __init__(self, code: int, output: str) -> None:
        super().__init__(f"kafpy server exited with status {code} while starting", output)
        self.code = code


class BrokerStartTimeout(BrokerStartError):
    """The process did not bind its listeners in time (it is still running)."""


class PortHeld(BrokerStartError):
    """A restart could not bind its old ports within BIND_RETRY_S: another process holds one."""


class _PortInUse(Exception):
    """This try of a restart exited because a port it had is held by another process."""


class BrokerLauncher:
    """Starts, and stops, the processes of one broker, one after another.

    Parameters:
        output_path: the file the process's stdout and stderr are appended to.
        bound_ports_path: the file named by `--bound-ports-file` in its command.

    `start(spawn, ...)` calls `spawn`, which starts the process through `spawn_process`
    (building its command afresh, so a restart may bind the ports of the last start);
    `ports` are those the last start bound, and `process` is the running process.
    """

    def __init__(self, output_path: Path, bound_ports_path: Path) -> None:
        self.output_path = output_path
        self.bound_ports_path = bound_ports_path
        self.process: subprocess.Popen[bytes] | None = None
        self.ports: dict[str, int] = {}
        self._output_start = 0

    def spawn_process(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        pass_fds: Collection[int] = (),
        new_session: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start `args` with this broker's output file, after removing a stale ports file.

        `env` is added to this process's environment; `new_session` detaches the process
        from the caller's session (it outlives it and ignores the terminal's Ctrl-C)."""
        self.bound_ports_path.unlink(missing_ok=True)
        self.output_path.parent.mkdir(parents=True, exist_ok=True)
        with self.output_path.open("ab") as output:
            self._output_start = output.tell()
            self.process = subprocess.Popen(
                list(args),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                pass_fds=tuple(pass_fds),
                start_new_session=new_session,
            )
        return self.process

    def start(
        self,
        spawn: Callable[[], object],
        timeout_s: float,
        *,
        restart: bool | None = None,
        interval_s: float = 0.05,
        spawned: bool = False,
        bind_retry_s: float = BIND_RETRY_S,
    ) -> dict[str, int]:
        """Call `spawn` and wait until the process reports the ports it bound; those ports.

        A restart (`restart`, by default whether an earlier start bound ports) whose old
        port is held by another process is spawned again every 0.5 s for `bind_retry_s`.
        With `spawned` the first try was spawned already (brokers started together are
        spawned first, then waited for). Raises BrokerExited, BrokerStartTimeout (the
        process is left running: the caller decides) or PortHeld."""
        is_restart = bool(self.ports) if restart is None else restart
        tries = 0

        def bound() -> dict[str, int] | None:
            nonlocal tries
            if tries > 0 or not spawned:
                spawn()
            tries += 1
            try:
                return self.wait_bound(timeout_s, restart=is_restart, interval_s=interval_s)
            except _PortInUse:
                return None

        def held() -> None:
            raise PortHeld(
                f"kafpy server could not bind its ports again within {bind_retry_s:.0f} s: "
                "another process holds one",
                self.output_since_spawn(),
            )

        self.ports = wait_until(bound, bind_retry_s, interval_s=0.5, on_timeout=held)
        return self.ports

    def wait_bound(
        self, timeout_s: float, *, restart: bool = False, interval_s: float = 0.05
    ) -> dict[str, int]:
        """Wait for the ports the spawned process reports (kafpy.network.bound_ports)."""

        def bound() -> dict[str, int] | None:
            self.check_running(restart=restart)
            return read_bound_ports(self.bound_ports_path)

        def timed_out() -> None:
            raise BrokerStartTimeout(
                f"kafpy server did not bind its listeners within {timeout_s:.0f} s",
                self.output_since_spawn(),
            )

        return wait_until(bound, timeout_s, interval_s=interval_s, on_timeout=timed_out)

    def check_running(self, *, restart: bool = False) -> None:
        """Raise BrokerExited if the process has exited (while a restart's exit because
        its old port is taken is retried by `start`)."""
        process = self.process
        if process is None or process.poll() is None:
            return
        output = self.output_since_spawn()
        if restart and address_in_use(output):
            raise _PortInUse(output)
        raise BrokerExited(process.returncode, output)

    def output_since_spawn(self, lines: int = 40) -> str:
        """The last `lines` lines the process printed since it was spawned."""
        try:
            with self.output_path.open("rb") as output:
                output.seek(self._output_start)
                text = output.read().decode(errors="replace")
        except FileNotFoundError:
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float) -> int | None:
        """SIGTERM and wait `timeout_s` for a clean exit (SIGKILL after that); the exit
        status, None if it had to be killed or was never started."""
        process = self.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """SIGKILL: no shutdown at all."""
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
