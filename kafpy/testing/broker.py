"""Embedded brokers for application test suites: `KafkaBroker` and `KafkaCluster`.

An in-process broker is a `KafkaServer` on an event loop of its own, on a thread of the
test process; `KafkaBroker(mode="subprocess")` runs the broker as a child process
instead (kafpy.testing.child: `kafpy server` plus a control socket that carries the
faults). The brokers of a `KafkaCluster` share one embedded metadata store (the SQLite
database in the cluster's temporary directory, one session per broker), so leader moves
and broker loss work without ZooKeeper. Every broker listens on a free loopback port and
keeps its data in a temporary directory removed when it stops; stopping leaves no thread,
process, port or file behind.
"""

from __future__ import annotations

import asyncio
import errno
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NoReturn, TypeVar

from kafpy.client.admin_client import AdminClient, NewTopic
from kafpy.client.connection import BrokerConnection
from kafpy.client.fetcher import EARLIEST_TIMESTAMP, ConsumerRecord, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer, ProduceResult
from kafpy.common.election_type import ElectionType
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.common.wait import async_wait_until, wait_until
from kafpy.network.bound_ports import BIND_RETRY_S
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.server.broker_launcher import BrokerExited, BrokerLauncher, BrokerStartTimeout, PortHeld
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.kafka_server import KafkaServer
from kafpy.testing.faults import FaultInjector

__all__ = ["KafkaBroker", "KafkaCluster", "Mode", "running_clusters"]

T = TypeVar("T")
Mode = Literal["inprocess", "subprocess"]
MODES: tuple[Mode, ...] = ("inprocess", "subprocess")

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
_HOST = "127.0.0.1"
# What a test broker changes from Kafka's defaults: internal topics fit the cluster, and a
# consumer group's first rebalance does not wait 3 s for more members.
_TEST_DEFAULTS = {
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}
# The threads of a running broker, named so a leak check can find them.
THREAD_PREFIX = "kafpy-testing-"
# Clusters started and not yet stopped (the pytest plugin reports them at session end).
_RUNNING: set[KafkaCluster] = set()
_RUNNING_LOCK = threading.Lock()


def running_clusters() -> list[KafkaCluster]:
    """The KafkaBrokers and KafkaClusters of this process started and not yet stopped."""
    with _RUNNING_LOCK:
        return list(_RUNNING)


class _LoopThread:
    """An asyncio event loop running on a daemon thread of its own."""

    def __init__(self, name: str) -> None:
        self.loop: asyncio.AbstractEventLoop
        try:
            import uvloop

            self.loop = uvloop.new_event_loop()
        except ImportError:
            self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=THREAD_PREFIX + name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Cancel what is left on the loop, stop it, join the thread and close the loop."""
        if self.loop.is_closed():
            return

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()
            await self.loop.shutdown_default_executor()

        self.run(drain(), STOP_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        self.loop.close()


class _Node:
    """One broker of a test cluster, running in this process or as a child process."""

    def __init__(self, values: dict[str, str], mode: Mode, faults: FaultInjector) -> None:
        self.values = values
        self.mode = mode
        self.faults = faults
        self.port = 0
        self.server: KafkaServer | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._launcher: BrokerLauncher | None = None
        self._control: socket.socket | None = None
        self._loop: _LoopThread | None = None

    @property
    def broker_id(self) -> int:
        return int(self.values["broker.id"])

    @property
    def running(self) -> bool:
        return self.server is not None or self.process is not None

    @property
    def address(self) -> str:
        return f"{_HOST}:{self.port}"

    def start(self) -> None:
        if self.mode == "subprocess":
            self._start_process()
            return

        def started() -> bool:
            try:
                self._start_in_process()
            except OSError as e:
                # a restart binds its old port, which another process may hold for now
                if self.port and e.errno == errno.EADDRINUSE:
                    return False
                raise
            return True

        wait_until(started, BIND_RETRY_S, interval_s=0.5, on_timeout=self._port_held)

    def _start_in_process(self) -> None:
        # port 0 the first time (the listener picks a free one); restarts keep that port
        values = {**self.values, "listeners": f"PLAINTEXT://{_HOST}:{self.port}"}
        self._loop = _LoopThread(f"broker-{self.broker_id}")
        server = KafkaServer(KafkaConfig(values))
        try:
            self._loop.run(server.startup(), START_TIMEOUT_S)
        except BaseException:
            self._loop.close()
            self._loop = None
            raise
        assert server.socket_server is not None
        server.socket_server.request_interceptor = self.faults.interceptor(self.broker_id)
        self.port = server.socket_server.bound_port("PLAINTEXT")
        self.server = server

    def _start_process(self) -> None:
        """Start the child process broker on port 0 (the port of its last start on a
        restart, tried again for BIND_RETRY_S while another process holds it) and learn
        the port it bound (kafpy.network.bound_ports)."""
        log_path = Path(self.values["log.dirs"]).parent / f"broker-{self.broker_id}.out"
        self._log_path = log_path
        if self._launcher is None:
            self._launcher = BrokerLauncher(log_path, log_path.with_suffix(".ports"))
        try:
            ports = self._launcher.start(
                self._spawn_process,
                START_TIMEOUT_S,
                restart=bool(self.port),
                interval_s=0.01,
                bind_retry_s=BIND_RETRY_S,
            )
        except BrokerExited as e:
            self._exited(e)
        except BrokerStartTimeout:
            self._start_timed_out()
        except PortHeld:
            self.stop()
            self._port_held()
        self.port = ports["PLAINTEXT"]

    def _spawn_process(self) -> None:
        assert self._launcher is not None
        self._close_control()  # of an earlier try that exited
        values = {**self.values, "listeners": f"PLAINTEXT://{_HOST}:{self.port}"}
        parent_end, child_end = socket.socketpair()
        # the child runs the broker with its FaultInjector, answering fault commands on
        # its end of the socket pair (kafpy.testing.child)
        args = [
            sys.executable,
            "-m",
            "kafpy.testing.child",
            "--control-fd",
            str(child_end.fileno()),
            "--bound-ports-file",
            str(self._launcher.bound_ports_path),
        ]
        for key, value in values.items():
            args += ["--override", f"{key}={value}"]
        try:
            self.process = self._launcher.spawn_process(args, pass_fds=(child_end.fileno(),))
        except BaseException:
            parent_end.close()
            raise
        finally:
            child_end.close()
        parent_end.settimeout(START_TIMEOUT_S)
        self._control = parent_end
        self._control_file = parent_end.makefile("rwb")

    def _close_control(self) -> None:
        if self._control is not None:
            self._control_file.close()
            self._control.close()
            self._control = None

    def _start_timed_out(self) -> NoReturn:
        self.stop()
        raise TimeoutError(
            f"Broker {self.broker_id}'s process did not bind its listener within "
            f"{START_TIMEOUT_S:.0f} s:\n{self.log_tail()}"
        )

    def _port_held(self) -> NoReturn:
        raise RuntimeError(
            f"Broker {self.broker_id} could not bind its port {self.port} again within "
            f"{BIND_RETRY_S:.0f} s: another process holds it."
            + (f"\n{self.log_tail()}" if self.mode == "subprocess" else "")
        )

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of a child process broker's output."""
        try:
            text = self._log_path.read_text(errors="replace")
        except (AttributeError, FileNotFoundError):
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:])

    def remote(self, op: str, kwargs: Mapping[str, Any]) -> Any:
        """Do fault operation `op` in this child process broker; its result."""
        if self.process is None:
            raise RuntimeError(f"Broker {self.broker_id} is stopped.")
        self._control_file.write(json.dumps({"op": op, "kwargs": dict(kwargs)}).encode() + b"\n")
        self._control_file.flush()
        line = self._control_file.readline()
        if not line:
            raise RuntimeError(f"Broker {self.broker_id}'s process closed its fault control.")
        answer = json.loads(line)
        if "error" in answer:
            kind = ValueError if answer.get("type") == "ValueError" else RuntimeError
            raise kind(answer["error"])
        return answer["ok"]

    def check_alive(self) -> None:
        """Raise if a child process broker exited while starting."""
        if self.process is not None and self._launcher is not None:
            try:
                self._launcher.check_running()
            except BrokerExited as e:
                self._exited(e)

    def _exited(self, exited: BrokerExited) -> NoReturn:
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"kafpy server exited with status {exited.code} while starting:\n{tail}")

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on this in-process broker's loop."""
        assert self._loop is not None
        return self._loop.run(coro, START_TIMEOUT_S)

    def drop_connections(self) -> None:
        """Close every client connection; returns once they are closed."""
        server = self.server
        if server is None or server.socket_server is None:
            return
        socket_server = server.socket_server

        async def close() -> None:
            dropped = socket_server.close_connections(
                "connections dropped by kafpy.testing faults", abort=True
            )
            # the transports report the connections lost an iteration or more later; the
            # clients may have connected again meanwhile
            await async_wait_until(
                lambda: all(conn.lost for conn in dropped),
                STOP_TIMEOUT_S,
                "the dropped connections to be closed",
                interval_s=0.001,
            )

        self.run(close())

    def stop(self) -> None:
        if self.process is not None:
            self.process = None
            self._close_control()
            assert self._launcher is not None
            self._launcher.stop(STOP_TIMEOUT_S)
            return
        server, loop = self.server, self._loop
        self.server, self._loop = None, None
        try:
            if server is not None and loop is not None:
                loop.run(server.shutdown(), STOP_TIMEOUT_S)
        finally:
            if loop is not None:
                loop.close()


class KafkaCluster:
    """Several kafpy brokers in this process sharing one embedded metadata store.

    Parameters:
        size: the number of brokers (broker ids 0 to size-1).
        config: broker settings (Kafka's keys, e.g. {"num.partitions": "3"}) for every
            broker, over the test defaults (one `__consumer_offsets` partition, no initial
            rebalance delay, internal topics replicated as far as the cluster allows).
        data_dir: where the brokers keep their data; a temporary directory removed at
            stop when None.

    Use as `with KafkaCluster(3) as cluster:` or `async with`, or call start() and stop().
    `bootstrap_servers` lists every broker; `faults` injects failures (see
    kafpy.testing.faults.FaultInjector). create_topic, produce and consume arrange and
    check data through kafpy's own client; they block, so call them from any thread.
    """

    def __init__(
        self,
        size: int = 3,
        *,
        config: Mapping[str, str] | None = None,
        data_dir: str | Path | None = None,
        mode: Mode = "inprocess",
    ) -> None:
        if size < 1:
            raise ValueError(f"cluster size {size}: a cluster needs at least one broker.")
        if mode not in MODES:
            raise ValueError(f"Unknown broker mode {mode!r}: use 'inprocess' or 'subprocess'.")
        if mode == "subprocess" and size > 1:
            raise ValueError(
                "A KafkaCluster of several brokers runs in this process only: its brokers "
                "share one embedded metadata store, which child processes cannot share. "
                "Use mode='inprocess', or a ZooKeeper-based cluster."
            )
        self.size = size
        self.mode: Mode = mode
        self.config = dict(config or {})
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self.data_dir: Path | None = None
        self.faults = FaultInjector(self)
        self._nodes: list[_Node] = []
        self._client_loop: _LoopThread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> KafkaCluster:
        """Start every broker and wait until each knows all of them and a controller."""
        if self._nodes:
            raise RuntimeError("This cluster is already started.")
        if self._given_data_dir is not None:
            self.data_dir = self._given_data_dir
            self.data_dir.mkdir(parents=True, exist_ok=True)
        else:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kafpy-testing-"))
        with _RUNNING_LOCK:
            _RUNNING.add(self)
        try:
            for broker_id in range(self.size):
                self._nodes.append(_Node(self._broker_values(broker_id), self.mode, self.faults))
            for node in self._nodes:
                node.start()
            self._wait_ready(self._nodes)
        except BaseException:
            self.stop()
            raise
        return self

    def _broker_values(self, broker_id: int) -> dict[str, str]:
        assert self.data_dir is not None
        replication = str(min(3, self.size))
        return {
            **_TEST_DEFAULTS,
            "offsets.topic.replication.factor": replication,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": str(min(2, self.size)),
            **self.config,
            "broker.id": str(broker_id),
            "log.dirs": str(self.data_dir / f"broker-{broker_id}" / "logs"),
            "metadata.store.dir": str(self.data_dir / "metadata"),
        }

    def stop(self) -> None:
        """Stop every broker and helper thread; remove the temporary data directory."""
        errors: list[BaseException] = []
        if self._client_loop is not None:
            loop, self._client_loop = self._client_loop, None
            try:
                loop.close()
            except Exception as e:
                errors.append(e)
        for node in reversed(self._nodes):
            try:
                node.stop()
            except Exception as e:
                errors.append(e)
        self._nodes = []
        if self.data_dir is not None and self._given_data_dir is None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        self.data_dir = None
        with _RUNNING_LOCK:
            _RUNNING.discard(self)
        if errors:
            raise errors[0]

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __repr__(self) -> str:
        state = f"on {','.join(n.address for n in self._nodes)}" if self._nodes else "stopped"
        return f"<{type(self).__name__} of {self.size} ({self.mode}) {state}>"

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.stop()

    async def __aenter__(self) -> KafkaCluster:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await asyncio.to_thread(self.stop)

    def _wait_ready(self, nodes: Sequence[_Node]) -> None:
        wait_until(
            lambda: all(self._ready(node) for node in nodes),
            START_TIMEOUT_S,
            interval_s=0.005,
            on_timeout=_timeout(
                lambda: (
                    f"kafpy brokers {[n.broker_id for n in nodes]} did not all see each "
                    f"other and a controller within {START_TIMEOUT_S:.0f} s."
                )
            ),
        )

    def _ready(self, node: _Node) -> bool:
        node.check_alive()
        alive = {n.broker_id for n in self._nodes if n.running}
        if node.server is not None:
            cache = node.server.metadata_cache
            if cache is None or cache.controller_id is None:
                return False
            return all(cache.get_alive_broker(b) is not None for b in alive)
        return self._client_run(_answers_metadata(node.address, len(alive)))

    # -- addresses ----------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """`host:port,...` of the running brokers."""
        addresses = [n.address for n in self._nodes if n.running]
        if not addresses:
            raise RuntimeError("No broker of this cluster is running: call start() first.")
        return ",".join(addresses)

    @property
    def broker_ids(self) -> list[int]:
        return [n.broker_id for n in self._nodes]

    def stopped_broker_ids(self) -> list[int]:
        """The brokers stopped through `faults.stop_broker` and not started again."""
        return [n.broker_id for n in self._nodes if not n.running]

    def server(self, broker_id: int) -> KafkaServer:
        """The KafkaServer of a running in-process broker (for white-box checks)."""
        server = self._node(broker_id).server
        if server is None:
            raise RuntimeError(f"Broker {broker_id} is not running in this process.")
        return server

    def _node(self, broker_id: int) -> _Node:
        for node in self._nodes:
            if node.broker_id == broker_id:
                return node
        raise ValueError(
            f"No broker {broker_id} in this cluster: its broker ids are {self.broker_ids}."
        )

    # -- faults (FaultInjector calls these) --------------------------------------------

    def remote_faults(self, op: str, kwargs: Mapping[str, Any]) -> list[Any]:
        """Do fault operation `op` in each running child process broker (subprocess mode)."""
        return [node.remote(op, kwargs) for node in self._nodes if node.running]

    def drop_connections(self, broker_id: int | None = None) -> None:
        if self.mode == "subprocess":
            self.remote_faults("drop_connections", {})
            return
        for node in self._nodes:
            if broker_id is None or node.broker_id == broker_id:
                node.drop_connections()

    def stop_broker(self, broker_id: int) -> None:
        """Stop a broker cleanly; returns once the others have noticed: it is gone from
        their metadata and from the ISR of every partition they lead."""
        node = self._node(broker_id)
        if not node.running:
            raise RuntimeError(f"Broker {broker_id} is already stopped.")
        node.stop()
        wait_until(
            lambda: all(
                other.run(_has_forgotten(other, broker_id)) for other in self._in_process()
            ),
            START_TIMEOUT_S,
            interval_s=0.005,
            on_timeout=_timeout(
                lambda: (
                    f"The other brokers did not notice broker {broker_id} stopping within "
                    f"{START_TIMEOUT_S:g} s."
                )
            ),
        )

    def _in_process(self) -> list[_Node]:
        return [n for n in self._nodes if n.server is not None]

    def start_broker(self, broker_id: int) -> None:
        node = self._node(broker_id)
        if node.running:
            raise RuntimeError(f"Broker {broker_id} is already running.")
        node.start()
        self._wait_ready([n for n in self._nodes if n.running])

    def move_leader(self, topic: str, partition: int, to: int) -> None:
        """Make broker `to` the partition's leader, as an operator would with Kafka: a
        reassignment that puts `to` first (adding it as a replica if it is not one), then
        a preferred leader election; returns once every broker names the new leader."""
        tp = TopicPartition(topic, partition)
        self._node(to)  # a broker of this cluster

        async def move() -> None:
            async with AdminClient.connect(self.bootstrap_servers) as admin:
                info = (await admin.describe_topics([topic]))[topic]
                if partition not in info.partitions:
                    raise ValueError(
                        f"Partition {tp} does not exist (the topic has "
                        f"{len(info.partitions)} partitions)."
                    )
                current = info.partitions[partition]
                if current.leader == to:
                    return
                replicas = [to, *(r for r in current.replicas if r != to)]
                if to not in current.replicas:
                    replicas = replicas[: len(current.replicas)]
                errors = await admin.alter_partition_reassignments({tp: replicas})
                if errors.get(tp) is not None:
                    raise errors[tp]  # type: ignore[misc]
                # the three waits share one START_TIMEOUT_S
                deadline = time.monotonic() + START_TIMEOUT_S

                async def reassigned() -> bool:
                    return not await admin.list_partition_reassignments([tp])

                await async_wait_until(
                    reassigned,
                    deadline - time.monotonic(),
                    on_timeout=_timeout(lambda: f"The reassignment of {tp} did not complete."),
                )
                error: object = None

                async def elected() -> bool:
                    nonlocal error
                    result = await admin.elect_leaders(ElectionType.PREFERRED, [tp])
                    error = result.get(tp)
                    info = (await admin.describe_topics([topic]))[topic]
                    return info.partitions[partition].leader == to

                await async_wait_until(
                    elected,
                    deadline - time.monotonic(),
                    on_timeout=_timeout(
                        lambda: f"Broker {to} did not become the leader of {tp}: {error}"
                    ),
                )
            # every broker names the new leader, so a client asking any of them finds it
            for node in [n for n in self._nodes if n.running]:
                await _wait_named_leader(node, tp, to, deadline - time.monotonic())

        self._client_run(move())

    # -- helpers for arranging and checking --------------------------------------------

    def _client_run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._client_loop is None:
            self._client_loop = _LoopThread("client")
        return self._client_loop.run(coro)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic and wait until every partition has a leader."""

        async def create() -> None:
            async with AdminClient.connect(self.bootstrap_servers) as admin:
                await admin.create_topics(
                    [NewTopic(name, partitions, replication_factor, configs=dict(config or {}))]
                )
                await _wait_for_leaders(admin.client, name, partitions)

        self._client_run(create())

    def produce(
        self,
        topic: str,
        values: Iterable[bytes | str] | None = None,
        *,
        records: Iterable[tuple[bytes | None, bytes | None]] | None = None,
        partition: int | None = None,
    ) -> list[ProduceResult]:
        """Produce `values` (keyless) or `records` ((key, value) pairs) with acks=all;
        returns where each batch landed."""
        if (values is None) == (records is None):
            raise ValueError("produce takes either values or records, not both or neither.")
        batch: list[tuple[bytes | None, bytes | None]] = (
            [(None, _bytes(v)) for v in values] if values is not None else list(records or ())
        )

        async def send() -> list[ProduceResult]:
            async with KafkaClient(self.bootstrap_servers) as client:
                return await BatchProducer(client, acks=-1).send(topic, batch, partition=partition)

        return self._client_run(send())

    def consume(
        self, topic: str, n: int, timeout: float = 10.0, *, partition: int | None = None
    ) -> list[ConsumerRecord]:
        """The first `n` records of `topic` (of `partition` only, if given) from the
        beginning; raises TimeoutError if fewer than `n` arrive within `timeout` seconds."""

        async def fetch() -> list[ConsumerRecord]:
            async with KafkaClient(self.bootstrap_servers) as client:
                await client.refresh_metadata([topic])
                found = client.cluster.partitions_for(topic)
                if not found:
                    raise ValueError(f"Topic {topic!r} does not exist: create it first.")
                tps = [TopicPartition(topic, p) for p in found if partition in (None, p)]
                fetcher = Fetcher(client, max_wait_ms=100)
                fetcher.assign(await fetcher.list_offsets(tps, EARLIEST_TIMESTAMP))
                got: list[ConsumerRecord] = []

                async def enough() -> bool:
                    if len(got) < n:
                        got.extend(await fetcher.fetch())
                    return len(got) >= n

                await async_wait_until(
                    enough,
                    timeout,
                    interval_s=0,
                    on_timeout=_timeout(
                        lambda: (
                            f"Consumed {len(got)} of {n} records of topic {topic!r} "
                            f"within {timeout} s."
                        )
                    ),
                )
                return got[:n]

        return self._client_run(fetch())


class KafkaBroker(KafkaCluster):
    """One kafpy broker for tests: in this process (the default) or as a child process.

    Parameters:
        mode: "inprocess" (a KafkaServer on its own event loop thread) or "subprocess"
            (`kafpy server` as a child process; faults then only stop and start it).
        config: broker settings over the test defaults (see KafkaCluster).
        data_dir: where the broker keeps its data; a temporary directory removed at stop
            when None.
    """

    def __init__(
        self,
        *,
        mode: Mode = "inprocess",
        config: Mapping[str, str] | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        super().__init__(1, config=config, data_dir=data_dir, mode=mode)

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    async def __aenter__(self) -> KafkaBroker:
        await asyncio.to_thread(self.start)
        return self

    @property
    def port(self) -> int:
        return self._node(0).port


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value


async def _has_forgotten(node: _Node, broker_id: int) -> bool:
    """On `node`'s loop: whether `broker_id` is out of its metadata and of the ISR of the
    partitions it leads."""
    server = node.server
    if server is None or server.metadata_cache is None or server.replica_manager is None:
        return True
    if server.metadata_cache.get_alive_broker(broker_id) is not None:
        return False
    return not any(
        p.leader_replica_id == node.broker_id and broker_id in p.isr
        for p in server.replica_manager.partitions.values()
    )


def _timeout(message: Callable[[], str]) -> Callable[[], NoReturn]:
    """An `on_timeout` for wait_until raising TimeoutError(message())."""

    def fail() -> NoReturn:
        raise TimeoutError(message())

    return fail


async def _wait_for_leaders(client: KafkaClient, topic: str, partitions: int) -> None:
    seen = "no answer"

    async def all_led() -> bool:
        nonlocal seen
        response = await client.refresh_metadata([topic])
        entry = next((t for t in response["topics"] if t["name"] == topic), None)
        info = client.cluster.topic(topic)
        if entry is not None and entry["error_code"] != Errors.NONE:
            seen = Errors(entry["error_code"]).name
        elif info is not None:
            led = sum(p.leader >= 0 for p in info.partitions.values())
            seen = f"{led} of {partitions} partitions led"
        return (
            info is not None
            and len(info.partitions) == partitions
            and all(p.leader >= 0 for p in info.partitions.values())
        )

    await async_wait_until(
        all_led,
        START_TIMEOUT_S,
        interval_s=0.01,
        on_timeout=_timeout(
            lambda: (
                f"Topic {topic!r} has partitions without a leader after {START_TIMEOUT_S:g} s "
                f"(Metadata: {seen})."
            )
        ),
    )


async def _metadata_of(address: str, topics: list[str]) -> dict[str, Any] | None:
    """The Metadata (v1) the broker at `address` answers for `topics`, on a connection of
    its own (None if it does not answer)."""
    host, _, port = address.rpartition(":")
    conn = BrokerConnection(host, int(port), request_timeout_ms=2000)
    try:
        await conn.connect()
        body: dict[str, Any] = await conn.send(
            ApiKey.METADATA, {"topics": [{"name": t} for t in topics]}, version=1
        )
        return body
    except (KafkaError, OSError):
        return None
    finally:
        await conn.close()


async def _leader_known_to(address: str, tp: TopicPartition) -> int | None:
    """The leader of `tp` in the Metadata of the broker at `address` (None if it has none)."""
    body = await _metadata_of(address, [tp.topic])
    for t in body["topics"] if body is not None else ():
        for p in t["partitions"]:
            if t["name"] == tp.topic and p["partition_index"] == tp.partition:
                return int(p["leader_id"])
    return None


async def _wait_named_leader(
    node: _Node, tp: TopicPartition, leader: int, timeout_s: float
) -> None:
    """Wait until `node`'s Metadata names `leader` as the leader of `tp`."""

    async def named() -> bool:
        return await _leader_known_to(node.address, tp) == leader

    await async_wait_until(
        named,
        timeout_s,
        on_timeout=_timeout(
            lambda: f"Broker {node.broker_id} does not name {leader} as the leader of {tp}"
        ),
    )


async def _answers_metadata(address: str, brokers: int) -> bool:
    """Whether the broker at `address` answers Metadata listing `brokers` brokers and a
    controller (it has had its first UpdateMetadata)."""
    body = await _metadata_of(address, [])
    return body is not None and len(body["brokers"]) >= brokers and body["controller_id"] >= 0
