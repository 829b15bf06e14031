"""LocalCluster: a ZooKeeper and N `kafpy server` processes on loopback, in one directory.

The layout under the cluster's directory D:

    D/cluster.json                    pids, start times, ports, dirs (what `down` stops)
    D/zookeeper/                      the managed ZooKeeper (zoo.cfg, data/, zookeeper.out)
    D/broker-<id>/server.properties   generated broker configuration
    D/broker-<id>/data/               log.dirs
    D/broker-<id>/logs/               server.out (the broker's stdout and stderr), and the
                                      controller.log / state-change.log the broker writes

Every process runs in its own session, detached from the caller: `kafpy cluster up` exits
and the cluster keeps running; `kafpy cluster down` finds the processes again through
cluster.json. A pid is trusted only if the process's start time still matches the one
recorded, so a recycled pid is never signalled.

The ZooKeeper it manages is a `kafpy zookeeper` process (which runs the JVM and stops it on
SIGTERM); with `zookeeper_connect` an existing ensemble is used and left alone. Tests
drive single brokers with `start_broker`, `stop_broker`, `kill_broker` and `restart_broker`.

This module orchestrates; the records of the processes and cluster.json are in
`tools/process_records.py`, the process helpers in `tools/processes.py`.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from kafpy.admin.scram_credentials import credential_from_config_command, write_user_configs
from kafpy.client.client_security import ClientSecurity
from kafpy.client.connection import BrokerConnection
from kafpy.common.errors import KafkaError
from kafpy.common.extras import require_extra
from kafpy.common.properties import load_properties
from kafpy.common.wait import async_wait_until, wait_until
from kafpy.metadata.errors import MetadataStoreError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store_factory import create_store
from kafpy.metadata.zookeeper_server import four_letter_word, free_port
from kafpy.network.bound_ports import BIND_RETRY_S
from kafpy.protocol.api_keys import ApiKey
from kafpy.server.broker_launcher import (
    BrokerExited,
    BrokerLauncher,
    BrokerStartTimeout,
    PortHeld,
    server_command,
)
from kafpy.tools.process_records import (
    CLUSTER_FILE,
    CLUSTER_FILE_VERSION,
    HOST,
    BrokerProcess,
    LocalClusterError,
    ZooKeeperProcess,
    read_cluster_file,
    write_cluster_file,
)
from kafpy.tools.processes import (
    POLL_S,
    child_pids,
    last_line,
    process_alive,
    process_start_time,
    send_signal,
    spawn_detached,
    wait_gone,
)

__all__ = [
    "CLUSTER_FILE",
    "DEFAULT_START_TIMEOUT_S",
    "DEFAULT_STOP_TIMEOUT_S",
    "BrokerProcess",
    "BrokerStatus",
    "ClusterStatus",
    "LocalCluster",
    "LocalClusterError",
    "ZooKeeperProcess",
]

DEFAULT_START_TIMEOUT_S = 60.0
# the super user of a --secure cluster
ADMIN_USER = "admin"
DEFAULT_STOP_TIMEOUT_S = 30.0
# how long a rolling restart waits for the replicas to be in sync before each broker
DEFAULT_ROLLING_WAIT_S = 300.0

T = TypeVar("T")
Progress = Callable[[str], None]


def _first_listener(properties_path: Path) -> str:
    """The name of the first listener in a broker's server.properties (its `port`)."""
    listeners = load_properties(properties_path)["listeners"]
    return listeners.split(",")[0].strip().partition("://")[0]


def _scram_jaas(user: str, password: str) -> str:
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";'
    )


def _escape_property(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _failure(message: Callable[[], str]) -> Callable[[], NoReturn]:
    """An `on_timeout` for wait_until raising LocalClusterError(message())."""

    def fail() -> NoReturn:
        raise LocalClusterError(message())

    return fail


@dataclass(frozen=True)
class BrokerStatus:
    """What `status` found out about one broker."""

    broker_id: int
    address: str
    pid: int | None
    alive: bool
    registered: bool | None  # None: ZooKeeper could not be asked


@dataclass(frozen=True)
class ClusterStatus:
    """The state of a local cluster: processes, registrations and the controller."""

    zookeeper_connect: str
    zookeeper_managed: bool
    zookeeper_alive: bool
    zookeeper_error: str | None
    brokers: list[BrokerStatus]
    controller_id: int | None
    controller_epoch: int | None


# --- the cluster ----------------------------------------------------------------------------


class LocalCluster:
    """A ZooKeeper and `num_brokers` brokers (ids 0..n-1) on 127.0.0.1, under `base_dir`.

    Parameters:
        base_dir: the cluster's directory (created); cluster.json is kept there.
        num_brokers: how many brokers.
        zookeeper_connect: an existing ZooKeeper to use (`host:port[/chroot]`); None
            starts one in `base_dir/zookeeper` on a free port.
        overrides: broker properties added to every generated server.properties (e.g.
            `zookeeper.session.timeout.ms`, `delete.topic.enable`).
        broker_overrides: broker id -> properties for that broker alone (e.g. its
            `broker.rack`), over `overrides`.
        zookeeper_tick_ms: tickTime of the managed ZooKeeper (sessions expire no sooner
            than 2 ticks).
        start_timeout_s: how long a start may take before it fails.
        python: the interpreter running `-m kafpy`.
    """

    def __init__(
        self,
        base_dir: Path | str,
        num_brokers: int = 3,
        *,
        zookeeper_connect: str | None = None,
        overrides: Mapping[str, str] | None = None,
        zookeeper_tick_ms: int = 500,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        python: str = sys.executable,
        secure: bool = False,
        broker_overrides: Mapping[int, Mapping[str, str]] | None = None,
    ) -> None:
        if num_brokers < 1:
            raise LocalClusterError(f"A cluster needs at least one broker, not {num_brokers}.")
        self.base_dir = Path(base_dir).absolute()
        self.overrides = dict(overrides or {})
        self.broker_overrides = {b: dict(o) for b, o in (broker_overrides or {}).items()}
        self.zookeeper_tick_ms = zookeeper_tick_ms
        self.start_timeout_s = start_timeout_s
        self.python = python
        self.secure = secure
        if zookeeper_connect is None:
            port = free_port()
            self.zookeeper = ZooKeeperProcess(
                connect=f"{HOST}:{port}", dir=self.base_dir / "zookeeper", port=port
            )
        else:
            self.zookeeper = ZooKeeperProcess(connect=zookeeper_connect)
        self.brokers: dict[int, BrokerProcess] = {
            # port 0: each broker binds a free port at its first start and keeps it
            i: BrokerProcess(i, 0, self.base_dir / f"broker-{i}")
            for i in range(num_brokers)
        }
        self._launchers: dict[int, BrokerLauncher] = {}

    # --- persistence ---

    @property
    def cluster_file(self) -> Path:
        return self.base_dir / CLUSTER_FILE

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CLUSTER_FILE_VERSION,
            "zookeeper": self.zookeeper.to_json(),
            "brokers": [b.to_json() for b in self.brokers.values()],
            "overrides": self.overrides,
            "broker_overrides": {str(b): o for b, o in self.broker_overrides.items()},
            "zookeeper_tick_ms": self.zookeeper_tick_ms,
            "secure": self.secure,
        }

    def save(self) -> None:
        """Write cluster.json."""
        write_cluster_file(self.base_dir, self.to_json())

    @classmethod
    def load(cls, base_dir: Path | str) -> LocalCluster:
        """The cluster recorded in `base_dir/cluster.json`; a broker whose recorded process
        is gone but that was restarted by hand is found again (BrokerProcess.find_process)."""
        directory = Path(base_dir).absolute()
        value = read_cluster_file(directory)
        cluster = cls.__new__(cls)
        cluster.base_dir = directory
        cluster.overrides = dict(value.get("overrides", {}))
        cluster.broker_overrides = {
            int(b): dict(o) for b, o in value.get("broker_overrides", {}).items()
        }
        cluster.zookeeper_tick_ms = int(value.get("zookeeper_tick_ms", 500))
        cluster.secure = bool(value.get("secure", False))
        cluster.start_timeout_s = DEFAULT_START_TIMEOUT_S
        cluster.python = sys.executable
        try:
            cluster.zookeeper = ZooKeeperProcess.from_json(value["zookeeper"])
            brokers = [BrokerProcess.from_json(b) for b in value["brokers"]]
        except (KeyError, TypeError, ValueError) as e:
            raise LocalClusterError(
                f"{directory / CLUSTER_FILE} is damaged ({e!r}); remove it."
            ) from e
        cluster.brokers = {b.broker_id: b for b in brokers}
        cluster._launchers = {}
        for b in brokers:
            b.find_process()
        return cluster

    def running_processes(self) -> list[str]:
        """Descriptions of the cluster's processes that are still running."""
        running = [f"broker {b.broker_id} (pid {b.pid})" for b in self.brokers.values() if b.alive]
        if self.zookeeper.managed and self.zookeeper.alive:
            running.append(f"ZooKeeper (pid {self.zookeeper.pid})")
        return running

    # --- start ---

    def start(
        self,
        progress: Progress | None = None,
        *,
        wait_for_metadata: bool = True,
    ) -> None:
        """Start ZooKeeper (when managed) and every broker; return once each broker is
        registered in /brokers/ids and, with `wait_for_metadata`, answers Metadata listing
        all brokers and a controller. On failure everything started is stopped again."""
        say = progress or (lambda _: None)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        try:
            if self.zookeeper.managed and not self.zookeeper.alive:
                self.start_zookeeper()
                say(f"ZooKeeper serving on {self.zookeeper.connect} (pid {self.zookeeper.pid})")
            else:
                self._check_zookeeper_reachable()
            if self.secure:
                self._secure_setup(say)
            self._spawn_brokers([b for b in self.brokers.values() if not b.alive])
            self.save()
            self.wait_registered(self.brokers, progress=say)
            if wait_for_metadata:
                self.wait_for_metadata()
        except BaseException:
            self.stop()
            raise

    def start_zookeeper(self) -> None:
        """Start the managed ZooKeeper (`kafpy zookeeper`) and wait until it serves."""
        zk = self.zookeeper
        assert zk.dir is not None and zk.port is not None and zk.output_path is not None
        zk.dir.mkdir(parents=True, exist_ok=True)
        process = spawn_detached(
            [
                self.python, "-m", "kafpy", "zookeeper",
                "--data-dir", str(zk.dir),
                "--port", str(zk.port),
                "--tick-time-ms", str(self.zookeeper_tick_ms),
            ],
            zk.dir,
            zk.output_path,
        )  # fmt: skip
        zk.pid, zk.start_time = process.pid, process_start_time(process.pid)
        self.save()
        port, output_path = zk.port, zk.output_path

        def serving() -> bool:
            if process.poll() is not None:
                raise LocalClusterError(
                    f"ZooKeeper exited with code {process.returncode} while starting: "
                    f"{last_line(output_path)} (see {output_path})"
                )
            try:
                return "Mode: standalone" in four_letter_word(HOST, port, "srvr", 1.0)
            except OSError:
                return False

        wait_until(
            serving,
            self.start_timeout_s,
            interval_s=POLL_S,
            on_timeout=_failure(
                lambda: (
                    f"ZooKeeper did not serve on {zk.connect} within "
                    f"{self.start_timeout_s:.0f} s (see {output_path})."
                )
            ),
        )
        # the JVM is the `kafpy zookeeper` process's child: recorded, so that `down` can
        # still stop it should its parent have to be killed
        jvms = child_pids(process.pid)
        if jvms:
            zk.jvm_pid, zk.jvm_start_time = jvms[0], process_start_time(jvms[0])
        self.save()

    # --- --secure: TLS, SCRAM and ACLs ---

    @property
    def client_properties_path(self) -> Path:
        """The admin client's config of a secure cluster (`--command-config` for the tools)."""
        return self.base_dir / "client.properties"

    def _secure_setup(self, say: Progress) -> None:
        """Once per cluster directory: a CA with a broker certificate (made with the
        `cryptography` package), a random password for the super user `admin`, its
        SCRAM-SHA-512 credential in ZooKeeper, and the client config to use it."""
        require_extra("crypto", "kafpy cluster up --secure")
        from kafpy.security.local_pki import make_test_pki

        pki_dir = self.base_dir / "pki"
        if not (pki_dir / "ca.pem").exists():
            make_test_pki(pki_dir, hosts=("localhost", HOST), client_name="admin")
        if not self.client_properties_path.exists():
            password = secrets.token_urlsafe(18)
            credential = credential_from_config_command(
                "SCRAM-SHA-512", f"iterations=8192,password={password}"
            )

            async def store(zk: KafkaZkClient) -> None:
                await write_user_configs(zk, ADMIN_USER, {"SCRAM-SHA-512": credential})

            self.zk_call(store)
            lines = [
                "# kafpy cluster up --secure: the super user's client config",
                "security.protocol=SASL_SSL",
                "sasl.mechanism=SCRAM-SHA-512",
                f"sasl.jaas.config={_scram_jaas(ADMIN_USER, password)}",
                "ssl.truststore.type=PEM",
                f"ssl.truststore.location={pki_dir / 'ca.pem'}",
            ]
            self.client_properties_path.write_text("\n".join(lines) + "\n", "utf-8")
            self.client_properties_path.chmod(0o600)
            say(f"Created the super user {ADMIN_USER} (SCRAM-SHA-512) and a CA in {pki_dir}")

    def _secure_properties(self, broker: BrokerProcess) -> dict[str, str]:
        pki_dir = self.base_dir / "pki"
        client = load_properties(self.client_properties_path)
        return {
            "listeners": f"SASL_SSL://{broker.host}:{broker.port}",
            "security.inter.broker.protocol": "SASL_SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": client["sasl.jaas.config"],
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki_dir / "broker.keystore.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki_dir / "ca.pem"),
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": f"User:{ADMIN_USER}",
            "allow.everyone.if.no.acl.found": "false",
        }

    def client_security(self) -> ClientSecurity | None:
        """How the cluster's own tools connect: the super user's config when secure."""
        if not self.secure:
            return None
        props = load_properties(self.client_properties_path)
        return ClientSecurity.from_config(props, source=str(self.client_properties_path))

    def _check_zookeeper_reachable(self) -> None:
        async def get(zk: KafkaZkClient) -> list[int]:
            return await zk.get_all_broker_ids()

        self.zk_call(get, min(self.start_timeout_s, 10.0))

    def write_properties(self, broker: BrokerProcess) -> None:
        """Write the broker's server.properties from its place in the cluster and the overrides."""
        props = {
            "broker.id": str(broker.broker_id),
            "listeners": f"PLAINTEXT://{broker.host}:{broker.port}",
            "log.dirs": str(broker.data_dir),
            "zookeeper.connect": self.zookeeper.connect,
            # internal topics must fit on a small cluster
            "offsets.topic.replication.factor": str(min(3, len(self.brokers))),
            **(self._secure_properties(broker) if self.secure else {}),
            **self.overrides,
            **self.broker_overrides.get(broker.broker_id, {}),
        }
        lines = [
            f"# Broker {broker.broker_id} of the local cluster in {self.base_dir},",
            "# written by kafpy.tools.local_cluster; rewritten at every start.",
            *(f"{k}={_escape_property(v)}" for k, v in props.items()),
        ]
        broker.dir.mkdir(parents=True, exist_ok=True)
        broker.properties_path.write_text("\n".join(lines) + "\n", "utf-8")

    def _launcher(self, broker: BrokerProcess) -> BrokerLauncher:
        launcher = self._launchers.get(broker.broker_id)
        if launcher is None:
            launcher = BrokerLauncher(broker.output_path, broker.bound_ports_path)
            self._launchers[broker.broker_id] = launcher
        return launcher

    def _spawn_broker(self, broker: BrokerProcess) -> None:
        self.write_properties(broker)
        broker.logs_dir.mkdir(parents=True, exist_ok=True)
        command = server_command(
            properties=broker.properties_path,
            bound_ports_file=broker.bound_ports_path,
            python=self.python,
        )
        process = self._launcher(broker).spawn_process(
            command,
            cwd=broker.dir,
            # where a broker's log files go, by the name Kafka's scripts use
            env={"LOG_DIR": str(broker.logs_dir)},
            # detached: the cluster outlives `kafpy cluster up`, as a daemon does
            new_session=True,
        )
        broker.process = process
        broker.pid, broker.start_time = process.pid, process_start_time(process.pid)

    def _spawn_brokers(self, brokers: list[BrokerProcess]) -> None:
        """Start `brokers` and learn the ports they bound (kafpy.network.bound_ports); a
        broker restarted on a port another process holds now is tried again for
        BIND_RETRY_S, then fails naming the port."""
        for broker in brokers:
            self._spawn_broker(broker)
        # spawned together, then waited for one after the other
        for broker in brokers:
            try:
                ports = self._launcher(broker).start(
                    functools.partial(self._spawn_broker, broker),
                    self.start_timeout_s,
                    restart=broker.port != 0,
                    interval_s=POLL_S,
                    spawned=True,
                    bind_retry_s=BIND_RETRY_S,
                )
            except BrokerExited:
                self._check_not_exited(broker)
                raise
            except BrokerStartTimeout:
                raise LocalClusterError(
                    f"Broker(s) {broker.broker_id} did not bind their listeners within "
                    f"{self.start_timeout_s:.0f} s (see {broker.output_path})."
                ) from None
            except PortHeld:
                raise LocalClusterError(
                    f"Broker {broker.broker_id} could not bind its port {broker.port} "
                    f"again within {BIND_RETRY_S:.0f} s: another process holds it "
                    f"(see {broker.output_path})."
                ) from None
            broker.ports = ports
            broker.port = ports[_first_listener(broker.properties_path)]

    def start_broker(self, broker_id: int, *, wait_for_metadata: bool = True) -> BrokerProcess:
        """(Re)start one broker with its port and directories; wait until it is registered
        (and, with `wait_for_metadata`, until it knows every live broker)."""
        broker = self.brokers[broker_id]
        if not broker.alive:
            self._spawn_brokers([broker])
            self.save()
        self.wait_registered([broker_id])
        if wait_for_metadata:
            self.wait_for_metadata([broker_id])
        return broker

    def restart_broker(
        self,
        broker_id: int,
        timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
        progress: Progress | None = None,
    ) -> BrokerProcess:
        """Stop one broker cleanly (SIGKILL after `timeout_s`), wait until its registration
        is gone, and start it again with its ports and data; return once it is registered
        and knows every live broker."""
        say = progress or (lambda _: None)
        broker = self.brokers.get(broker_id)
        if broker is None:
            ids = ", ".join(map(str, sorted(self.brokers)))
            raise LocalClusterError(
                f"The cluster in {self.base_dir} has no broker {broker_id} (its brokers: {ids})."
            )
        if self.zookeeper.managed and not self.zookeeper.alive:
            raise LocalClusterError(
                f"The cluster's ZooKeeper is not running; start the cluster with "
                f"`kafpy cluster up --dir {self.base_dir}`."
            )
        if broker.alive:
            killed = self._stop_brokers([broker], timeout_s)
            say(
                f"broker {broker_id} "
                + ("killed after not stopping within the timeout" if killed else "stopped")
            )
        else:
            say(f"broker {broker_id} was not running")
        self.wait_unregistered(broker_id)
        self.start_broker(broker_id)
        say(f"broker {broker_id} registered at {broker.address} (pid {broker.pid})")
        return broker

    def rolling_restart(
        self,
        timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
        progress: Progress | None = None,
        wait_timeout_s: float = DEFAULT_ROLLING_WAIT_S,
    ) -> list[int]:
        """Restart every broker, one at a time, as an operator does a rolling restart:
        before each, wait until no partition is under-replicated (so the controlled
        shutdown can hand every leadership to an in-sync replica); the controller goes
        last, so the controller moves once. Returns the brokers in the order restarted."""
        say = progress or (lambda _: None)
        down = [b.broker_id for b in self.brokers.values() if not b.alive]
        if down:
            raise LocalClusterError(
                f"Broker(s) {', '.join(map(str, down))} not running: a rolling restart needs "
                f"every broker up (start one with `kafpy cluster restart <id> --dir "
                f"{self.base_dir}`)."
            )
        controller = self.zk_call(lambda zk: zk.get_controller_id(), timeout_s=10.0)
        order = sorted(self.brokers, key=lambda i: (i == controller, i))
        for broker_id in order:
            self.wait_fully_replicated(wait_timeout_s, say)
            say(
                f"restarting broker {broker_id}"
                + (" (controller)" if broker_id == controller else "")
            )
            self.restart_broker(broker_id, timeout_s, say)
        self.wait_fully_replicated(wait_timeout_s, say)
        return order

    def under_replicated_partitions(self) -> list[str]:
        """`topic-partition` of each partition whose ISR lacks one of its replicas, as a live
        broker's Metadata tells it."""

        async def read() -> list[str]:
            for broker in [b for b in self.brokers.values() if b.alive]:
                conn = BrokerConnection(
                    broker.host, broker.port, request_timeout_ms=5000,
                    security=self.client_security(),
                )  # fmt: skip
                try:
                    await conn.connect()
                    body = await conn.send(ApiKey.METADATA, {"topics": None})
                except (KafkaError, OSError):
                    continue
                finally:
                    await conn.close()
                return [
                    f"{t['name']}-{p['partition_index']}"
                    for t in body["topics"]
                    for p in t["partitions"]
                    if set(p["replica_nodes"]) - set(p["isr_nodes"])
                ]
            raise LocalClusterError("No broker of the cluster answers Metadata.")

        return asyncio.run(read())

    def wait_fully_replicated(self, timeout_s: float, progress: Progress | None = None) -> None:
        """Wait until no partition of the cluster is under-replicated."""
        say = progress or (lambda _: None)
        lagging: list[str] = []
        told = -1

        def replicated() -> bool:
            nonlocal lagging, told
            lagging = self.under_replicated_partitions()
            if lagging and len(lagging) != told:
                told = len(lagging)
                say(f"waiting for {len(lagging)} under-replicated partition(s) to catch up")
            return not lagging

        wait_until(
            replicated,
            timeout_s,
            interval_s=POLL_S * 2,
            retry_on=(LocalClusterError,),
            on_timeout=_failure(
                lambda: (
                    f"{len(lagging)} partition(s) still under-replicated after {timeout_s:.0f} s "
                    f"({', '.join(lagging[:5])}{', ...' if len(lagging) > 5 else ''}); the "
                    "rolling restart stops here so that no leadership moves to a replica out "
                    "of sync."
                )
            ),
        )

    # --- waiting ---

    def zk_call(self, call: Callable[[KafkaZkClient], Awaitable[T]], timeout_s: float = 10.0) -> T:
        """Run `call` on a short-lived ZooKeeper session to the cluster's ZooKeeper."""

        async def run() -> T:
            store = create_store(
                self.zookeeper.connect, None, session_timeout_ms=10000,
                connection_timeout_ms=int(timeout_s * 1000),
            )  # fmt: skip
            await store.start()
            try:
                return await call(KafkaZkClient(store))
            finally:
                await store.close()

        try:
            return asyncio.run(run())
        except MetadataStoreError as e:
            raise LocalClusterError(
                f"Cannot use ZooKeeper at {self.zookeeper.connect}: {e or type(e).__name__}"
            ) from e

    def wait_registered(
        self,
        broker_ids: Iterable[int],
        timeout_s: float | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Wait until every broker in `broker_ids` is registered in /brokers/ids; fail at
        once, with its last output line, if one of them exits."""
        waiting = set(broker_ids)
        deadline = time.monotonic() + (timeout_s or self.start_timeout_s)

        async def poll(zk: KafkaZkClient) -> None:
            async def all_registered() -> bool:
                registered = set(await zk.get_all_broker_ids())
                for broker_id in sorted(waiting & registered):
                    waiting.discard(broker_id)
                    broker = self.brokers[broker_id]
                    if progress is not None:
                        progress(
                            f"broker {broker_id} registered at {broker.address} (pid {broker.pid})"
                        )
                for broker_id in sorted(waiting):
                    self._check_not_exited(self.brokers[broker_id])
                return not waiting

            await async_wait_until(
                all_registered,
                deadline - time.monotonic(),
                interval_s=POLL_S * 2,
                on_timeout=_failure(
                    lambda: (
                        f"Broker(s) {', '.join(str(i) for i in sorted(waiting))} did not "
                        f"register in ZooKeeper within {timeout_s or self.start_timeout_s:.0f} s "
                        f"(see {self.brokers[min(waiting)].output_path})."
                    )
                ),
            )

        self.zk_call(poll)

    def _check_not_exited(self, broker: BrokerProcess) -> None:
        process = broker.process
        code = process.poll() if process is not None else None
        if code is None and (process is not None or broker.alive):
            return
        status = f" with code {code}" if code is not None else ""
        raise LocalClusterError(
            f"Broker {broker.broker_id} exited{status} while starting: "
            f"{last_line(broker.output_path)} (see {broker.output_path})"
        )

    def wait_unregistered(self, broker_id: int, timeout_s: float = 60.0) -> None:
        """Wait until the broker's registration is gone (its session closed or expired)."""

        async def poll(zk: KafkaZkClient) -> None:
            async def gone() -> bool:
                return broker_id not in await zk.get_all_broker_ids()

            await async_wait_until(
                gone,
                timeout_s,
                interval_s=POLL_S * 2,
                on_timeout=_failure(
                    lambda: f"Broker {broker_id} is still registered after {timeout_s:.0f} s."
                ),
            )

        self.zk_call(poll, timeout_s)

    def wait_for_metadata(
        self, broker_ids: Iterable[int] | None = None, timeout_s: float | None = None
    ) -> None:
        """Wait until each broker in `broker_ids` (default: every live one) answers Metadata
        with all live brokers of the cluster and an active controller."""
        ids = sorted(broker_ids if broker_ids is not None else self.live_broker_ids())
        deadline = time.monotonic() + (timeout_s or self.start_timeout_s)

        async def ready(broker: BrokerProcess, expected: set[int]) -> bool:
            conn = BrokerConnection(
                broker.host, broker.port, request_timeout_ms=2000, security=self.client_security()
            )
            try:
                await conn.connect()
                body = await conn.send(ApiKey.METADATA, {"topics": []})
            except (KafkaError, OSError):
                return False
            finally:
                await conn.close()
            known = {b["node_id"] for b in body["brokers"]}
            return expected <= known and body.get("controller_id", -1) >= 0

        waiting = list(ids)

        async def all_ready() -> bool:
            nonlocal waiting
            expected = set(self.live_broker_ids())
            waiting = [i for i in waiting if not await ready(self.brokers[i], expected)]
            for broker_id in waiting:
                self._check_not_exited(self.brokers[broker_id])
            return not waiting

        if waiting:
            asyncio.run(
                async_wait_until(
                    all_ready,
                    deadline - time.monotonic(),
                    interval_s=POLL_S * 2,
                    on_timeout=_failure(
                        lambda: (
                            f"Broker(s) {', '.join(map(str, waiting))} did not answer Metadata "
                            "with every live broker and a controller within "
                            f"{timeout_s or self.start_timeout_s:.0f} s (see "
                            f"{self.brokers[waiting[0]].output_path})."
                        )
                    ),
                )
            )

    def live_broker_ids(self) -> list[int]:
        return [i for i, b in self.brokers.items() if b.alive]

    # --- stop ---

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL one broker: no shutdown at all, its session expires in ZooKeeper later."""
        broker = self.brokers[broker_id]
        if broker.alive and broker.pid is not None:
            send_signal(broker.pid, signal.SIGKILL)
            wait_gone([(broker.pid, broker.start_time)], time.monotonic() + DEFAULT_STOP_TIMEOUT_S)

    def stop_broker(self, broker_id: int, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """Stop one broker cleanly (SIGTERM; SIGKILL after `timeout_s`)."""
        self._stop_brokers([self.brokers[broker_id]], timeout_s)

    def _stop_brokers(self, brokers: list[BrokerProcess], timeout_s: float) -> list[int]:
        """SIGTERM all, wait together, SIGKILL those left; the ids that had to be killed."""
        running = [b for b in brokers if b.alive and b.pid is not None]
        for b in running:
            assert b.pid is not None
            send_signal(b.pid, signal.SIGTERM)
        left = wait_gone(
            [(b.pid, b.start_time) for b in running if b.pid is not None],
            time.monotonic() + timeout_s,
        )
        killed = []
        for b in running:
            if b.pid in left:
                send_signal(b.pid, signal.SIGKILL)
                killed.append(b.broker_id)
        wait_gone([(pid, None) for pid in left], time.monotonic() + 10)
        return killed

    def stop_zookeeper(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
        """Stop the managed ZooKeeper; False if it had to be killed."""
        zk = self.zookeeper
        clean = True
        if zk.pid is not None and zk.alive:
            send_signal(zk.pid, signal.SIGTERM)
            if wait_gone([(zk.pid, zk.start_time)], time.monotonic() + timeout_s):
                send_signal(zk.pid, signal.SIGKILL)
                clean = False
        if zk.jvm_pid is not None and process_alive(zk.jvm_pid, zk.jvm_start_time):
            send_signal(zk.jvm_pid, signal.SIGTERM)
            if wait_gone([(zk.jvm_pid, zk.jvm_start_time)], time.monotonic() + 10):
                send_signal(zk.jvm_pid, signal.SIGKILL)
                clean = False
        return clean

    def stop(
        self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S, progress: Progress | None = None
    ) -> None:
        """Stop every broker (SIGTERM, SIGKILL after `timeout_s`), then the managed ZooKeeper
        (an external one is left running)."""
        say = progress or (lambda _: None)
        brokers = list(self.brokers.values())
        running = [b.broker_id for b in brokers if b.alive]
        killed = self._stop_brokers(brokers, timeout_s)
        for broker_id in running:
            how = (
                "killed after not stopping within the timeout" if broker_id in killed else "stopped"
            )
            say(f"broker {broker_id} {how}")
        if self.zookeeper.managed and (self.zookeeper.alive or self.zookeeper.jvm_pid):
            was_alive = self.zookeeper.alive or process_alive(
                self.zookeeper.jvm_pid, self.zookeeper.jvm_start_time
            )
            clean = self.stop_zookeeper(timeout_s)
            if was_alive:
                say("ZooKeeper stopped" if clean else "ZooKeeper killed after not stopping in time")

    # --- status ---

    def status(self) -> ClusterStatus:
        """Which processes run, which brokers are registered, and who is controller."""
        zk_alive = self.zookeeper.alive if self.zookeeper.managed else True
        registered: set[int] | None = None
        controller_id: int | None = None
        epoch: int | None = None
        error: str | None = None
        if zk_alive:

            async def read(zk: KafkaZkClient) -> tuple[list[int], int | None, int | None]:
                ids = await zk.get_all_broker_ids()
                controller = await zk.get_controller_id()
                current = await zk.get_controller_epoch()
                return ids, controller, None if current is None else current[0]

            try:
                ids, controller_id, epoch = self.zk_call(read, timeout_s=5.0)
                registered = set(ids)
            except LocalClusterError as e:
                error = str(e)
        brokers = [
            BrokerStatus(
                b.broker_id,
                b.address,
                b.pid,
                b.alive,
                None if registered is None else b.broker_id in registered,
            )
            for b in self.brokers.values()
        ]
        return ClusterStatus(
            zookeeper_connect=self.zookeeper.connect,
            zookeeper_managed=self.zookeeper.managed,
            zookeeper_alive=zk_alive and error is None,
            zookeeper_error=error,
            brokers=brokers,
            controller_id=controller_id,
            controller_epoch=epoch,
        )
