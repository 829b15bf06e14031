"""Starting and stopping a real Apache ZooKeeper server (Debian's `zookeeper` package).

Tests, `kafpy zookeeper` and `kafpy cluster` run ZooKeeper through `ZooKeeperServer`:
it writes a private zoo.cfg, runs `QuorumPeerMain` in a child JVM and waits until the
server answers the `srvr` four-letter command in standalone mode (`ruok` answers before
the server accepts sessions, so it is not enough).
"""

from __future__ import annotations

import atexit
import os
import shlex
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from kafpy.common.logger import component_logger

# Debian's zookeeper.jar names its dependencies (jute, netty, slf4j, ...) in its manifest
# Class-Path, so it alone is enough; slf4j-simple makes the server log to its output.
DEFAULT_JARS = ("/usr/share/java/zookeeper.jar",)
OPTIONAL_JARS = ("/usr/share/java/slf4j-simple.jar",)
CLASSPATH_ENV = "KAFPY_ZOOKEEPER_CLASSPATH"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
JVM_OPTIONS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class ZooKeeperServerError(Exception):
    """The ZooKeeper server could not be started."""


def zookeeper_classpath() -> str:
    """The classpath running ZooKeeper's server, or ZooKeeperServerError saying what to install.

    `KAFPY_ZOOKEEPER_CLASSPATH` overrides the Debian location (e.g. for a tarball's lib/*).
    """
    override = os.environ.get(CLASSPATH_ENV)
    if override:
        return override
    missing = [jar for jar in DEFAULT_JARS if not os.path.exists(jar)]
    if missing:
        raise ZooKeeperServerError(
            f"ZooKeeper is not installed: {', '.join(missing)} not found. "
            f"Install it (`apt-get install zookeeper`) or set {CLASSPATH_ENV} "
            "to the classpath of a ZooKeeper 3.5+ distribution."
        )
    return os.pathsep.join([*DEFAULT_JARS, *(jar for jar in OPTIONAL_JARS if os.path.exists(jar))])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_in_use(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send a four-letter command (`srvr`, `ruok`) and return the server's whole answer."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


class ZooKeeperServer:
    """One standalone ZooKeeper server in a child JVM, listening on 127.0.0.1.

    `data_dir` holds zoo.cfg, the snapshots and transaction logs (`data/`) and the
    server's output (`zookeeper.out`). With `port=None` a free port is picked at the
    first start (and another one tried if it was taken meanwhile); a restart keeps it. `tick_time_ms` sets how fast sessions
    can expire: ZooKeeper accepts session timeouts from 2 ticks up to
    `max_session_timeout_ms`. `force_sync=False` skips fsync (for tests).
    """

    def __init__(
        self,
        data_dir: Path | str,
        port: int | None = None,
        *,
        tick_time_ms: int = 2000,
        max_session_timeout_ms: int = 60000,
        force_sync: bool = True,
        startup_timeout_s: float = 60.0,
        java: str = "java",
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or 0
        self.tick_time_ms = tick_time_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.force_sync = force_sync
        self.startup_timeout_s = startup_timeout_s
        self.java = java
        self._process: subprocess.Popen[bytes] | None = None
        self._log = component_logger(__name__, "ZooKeeperServer")

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def connect_string(self) -> str:
        """`127.0.0.1:<port>`, for `zookeeper.connect` (append a chroot as needed)."""
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "zoo.cfg"

    @property
    def output_path(self) -> Path:
        return self.data_dir / "zookeeper.out"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the server and wait until it accepts sessions."""
        if self.running:
            return
        classpath = zookeeper_classpath()
        # a restarted server keeps its port, so that its clients can reconnect
        fixed_port = bool(self.port)
        attempts = 1 if fixed_port else 3
        for attempt in range(attempts):
            if not fixed_port:
                self.port = free_port()
            if port_in_use(self.host, self.port):
                if attempt + 1 < attempts:
                    continue
                # otherwise the server there would answer our `srvr` in place of ours
                raise ZooKeeperServerError(
                    f"Cannot start ZooKeeper on {self.connect_string}: the port is already in "
                    "use (Address already in use). Stop what listens there or choose another "
                    "port."
                )
            self._spawn(classpath)
            try:
                self._wait_until_serving()
            except ZooKeeperServerError:
                self._terminate()
                if attempt + 1 < attempts and "Address already in use" in self.output():
                    continue
                raise
            self._log.info("ZooKeeper %s serving (pid %s)", self.connect_string, self.pid)
            return

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s). Its data stays in `data_dir`."""
        if self._process is not None:
            self._terminate()
            self._log.info("ZooKeeper %s stopped", self.connect_string)

    def wait(self, timeout_s: float | None = None) -> int | None:
        """Wait for the server process to exit; its exit code, or None if still running."""
        process = self._process
        if process is None:
            return None
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), like a crash."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def output(self, last_lines: int = 40) -> str:
        """The last lines the server printed (its log), for error messages."""
        try:
            lines = self.output_path.read_text("utf-8", "replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(lines[-last_lines:])

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _write_config(self) -> None:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_time_ms}",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            f"minSessionTimeout={2 * self.tick_time_ms}",
            f"maxSessionTimeout={max(self.max_session_timeout_ms, 2 * self.tick_time_ms)}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr,ruok",
            # 1 MB instead of 64 MB preallocated per transaction log file
            "preAllocSize=1024",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
            f"forceSync={'yes' if self.force_sync else 'no'}",
        ]
        self.config_path.write_text("\n".join(lines) + "\n", "utf-8")

    def _spawn(self, classpath: str) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        command = [
            self.java,
            *JVM_OPTIONS,
            f"-Dzookeeper.log.dir={self.data_dir}",
            "-cp",
            classpath,
            MAIN_CLASS,
            str(self.config_path),
        ]
        self._log.debug("Starting %s", shlex.join(command))
        with open(self.output_path, "wb") as out:
            try:
                self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self.data_dir,
                    # its own process group: Ctrl-C in a terminal goes to us, and we stop it
                    start_new_session=True,
                )
            except FileNotFoundError as e:
                raise ZooKeeperServerError(
                    f"Cannot run ZooKeeper: `{self.java}` not found. Install a Java runtime "
                    "(`apt-get install default-jre-headless`)."
                ) from e
        _running_servers.add(self)

    def _wait_until_serving(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        last_answer = ""
        while True:
            code = self._process.poll()
            if code is not None:
                raise ZooKeeperServerError(
                    f"ZooKeeper on port {self.port} exited with code {code} while starting "
                    f"(config {self.config_path}). Its output:\n{self.output()}"
                )
            try:
                last_answer = four_letter_word(self.host, self.port, "srvr", timeout_s=1.0)
            except OSError:
                pass
            if "Mode: standalone" in last_answer and self._process.poll() is None:
                return
            if time.monotonic() > deadline:
                raise ZooKeeperServerError(
                    f"ZooKeeper on port {self.port} did not start serving within "
                    f"{self.startup_timeout_s:.0f} s (config {self.config_path}); last `srvr` "
                    f"answer: {last_answer!r}. Its output:\n{self.output()}"
                )
            time.sleep(0.05)

    def _terminate(self) -> None:
        process, self._process = self._process, None
        _running_servers.discard(self)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# Servers still running when the interpreter exits are stopped, so no JVM is left behind.
_running_servers: set[ZooKeeperServer] = set()


@atexit.register
def _stop_running_servers() -> None:
    for server in list(_running_servers):
        server.stop()
