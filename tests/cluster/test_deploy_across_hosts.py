"""A cluster deployed across three hosts as deploy/ and docs/operations.md describe it.

The hosts are network namespaces on a bridge (tests/fixtures/hosts.py), each with its own
address; each runs one server of a three-server ZooKeeper ensemble and one kafpy broker
made from deploy/server.properties with the host's values (`broker.rack` = the host). The
test process reaches the brokers from the root namespace through the bridge.

Under an idempotent acks=all load (confluent-kafka in a thread, a few hundred records/s,
each acknowledgement's key and time recorded), on an RF 3, min.insync.replicas=2 topic:
a rolling restart of the brokers (SIGTERM: controlled shutdown; each back in every ISR
before the next), a rolling restart of the ZooKeeper ensemble (each server back and the
quorum whole before the next), and the two rolling bounces of an inter-broker protocol
upgrade. Then every acknowledged record must be in the topic exactly once. The figures per
phase (acknowledged records, producer errors, the longest gap between two
acknowledgements) are printed, not asserted.

Also the operator's mistakes: a listener naming an address that is not the host's, and
zookeeper.connect naming an ensemble with servers down.

Needs root (or CAP_NET_ADMIN) for the namespaces; skipped otherwise.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from kafpy.testing.wait import wait_until
from tests.fixtures.host_broker import HostBroker
from tests.fixtures.hosts import HostNetwork, namespaces_unavailable
from tests.fixtures.zookeeper_ensemble import (
    EnsembleServer,
    ensemble_connect,
    wait_quorum_whole,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(900)]

CHROOT = "/kafpy"
TOPIC = "deployed"
PARTITIONS = 3
RATE_PER_S = 200


@dataclass
class Deployment:
    network: HostNetwork
    zookeepers: list[EnsembleServer]
    brokers: list[HostBroker]
    zk: KazooClient

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def registered(self) -> set[int]:
        try:
            return {int(i) for i in self.zk.get_children(f"{CHROOT}/brokers/ids")}
        except NoNodeError:  # before the first broker's start
            return set()


def wait_registered(d: Deployment, broker: HostBroker, timeout_s: float = 90.0) -> None:
    def registered() -> bool:
        if broker.exit_code is not None:
            raise AssertionError(f"broker {broker.broker_id} exited:\n{broker.output()}")
        return broker.broker_id in d.registered()

    wait_until(
        registered, timeout_s, f"broker {broker.broker_id} registered", context=broker.output
    )


def isr_by_partition(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int]]]:
    meta = admin.list_topics(topic, timeout=5).topics[topic]
    return {p: (m.leader, sorted(m.isrs)) for p, m in meta.partitions.items()}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    unavailable = namespaces_unavailable()
    if unavailable is not None:
        pytest.skip(unavailable)
    base = tmp_path_factory.mktemp("hosts")
    with HostNetwork(3, base) as network:
        hosts = network.hosts
        zookeepers = [EnsembleServer(h, i, hosts, base) for i, h in enumerate(hosts, start=1)]
        brokers = [
            HostBroker(h, i, ensemble_connect(hosts, CHROOT), base)
            for i, h in enumerate(hosts, start=1)
        ]
        zk = KazooClient(hosts=ensemble_connect(hosts), timeout=10.0)
        try:
            for z in zookeepers:
                z.start()
            wait_quorum_whole(zookeepers)
            zk.start(timeout=30)
            d = Deployment(network, zookeepers, brokers, zk)
            for b in brokers:
                b.start()
            for b in brokers:
                wait_registered(d, b)
            yield d
        finally:
            zk.stop()
            zk.close()
            for b in brokers:
                try:
                    b.stop()
                except AssertionError:
                    pass
            for z in zookeepers:
                z.stop()


# --- the load ----------------------------------------------------------------------------


@dataclass
class Phase:
    name: str
    start: float
    end: float = 0.0
    acked: int = 0
    errors: int = 0
    longest_gap_s: float = 0.0
    longest_gap_ends_at_s: float = 0.0  # from the phase's start
    notes: list[str] = field(default_factory=list)


class AckedLoad:
    """An idempotent acks=all producer in a thread: each acknowledged key and when."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: int) -> None:
        self.topic = topic
        self.interval_s = 1.0 / rate_per_s
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "retry.backoff.ms": 100,
            }
        )
        self.acks: list[tuple[float, int]] = []  # (monotonic time, key)
        self.errors: list[tuple[float, str]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acked-load", daemon=True)

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        now = time.monotonic()
        if err is None:
            key = msg.key()
            assert key is not None
            self.acks.append((now, int(key)))
        else:
            self.errors.append((now, str(err)))

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            key = str(self.sent).encode()
            try:
                self.producer.produce(self.topic, key=key, value=key, on_delivery=self._on_delivery)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0)
            next_at += self.interval_s
            pause = next_at - time.monotonic()
            if pause > 0:
                self.producer.poll(pause)
        self.producer.flush(60)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def figures(self, phase: Phase) -> None:
        """Fill in what the phase saw: acks, errors, the longest gap between two acks."""
        times = [t for t, _ in self.acks]
        previous = None
        for t in times:
            if phase.start <= t <= phase.end:
                phase.acked += 1
                if previous is not None and t - previous > phase.longest_gap_s:
                    phase.longest_gap_s = t - previous
                    phase.longest_gap_ends_at_s = t - phase.start
            previous = t
        phase.errors = sum(1 for t, _ in self.errors if phase.start <= t <= phase.end)


@contextmanager
def phase(phases: list[Phase], name: str) -> Iterator[Phase]:
    p = Phase(name, time.monotonic())
    phases.append(p)
    try:
        yield p
    finally:
        p.end = time.monotonic()


def consume_all(bootstrap: str, topic: str) -> Counter[int]:
    """Every key in the topic, from the beginning to the end offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "deploy-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        ends = {}
        for p in range(PARTITIONS):
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        keys: Counter[int] = Counter()
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 120
        while len(done) < PARTITIONS and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= ends[msg.partition()]:
                        done.add(msg.partition())
                    continue
                raise AssertionError(f"consuming {topic}: {msg.error()}")
            key = msg.key()
            assert key is not None
            keys[int(key)] += 1
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        assert len(done) == PARTITIONS, f"could not read {topic} to its end: {ends}"
        return keys
    finally:
        consumer.close()


# --- the phases ------------------------------------------------------------------------


def restart_broker(d: Deployment, admin: AdminClient, broker: HostBroker, p: Phase) -> None:
    """SIGTERM, start again, wait until the broker is back in every ISR of the topic."""
    stopped_s = broker.stop()
    started = time.monotonic()
    broker.start()
    wait_registered(d, broker)

    def in_every_isr() -> bool:
        return all(broker.broker_id in isr for _, isr in isr_by_partition(admin, TOPIC).values())

    wait_until(
        in_every_isr,
        90,
        f"broker {broker.broker_id} back in every ISR",
        retry_on=(KafkaException,),
        context=broker.output,
    )
    p.notes.append(
        f"+{started - p.start:.1f} s broker {broker.broker_id}: controlled shutdown {stopped_s:.1f} s, "
        f"back in every ISR {time.monotonic() - started:.1f} s after restart"
    )


def rolling_broker_restart(d: Deployment, admin: AdminClient, p: Phase) -> None:
    for broker in d.brokers:
        restart_broker(d, admin, broker, p)


def test_rolling_restarts_and_upgrade_lose_and_duplicate_nothing(deployment: Deployment) -> None:
    d = deployment
    admin = AdminClient({"bootstrap.servers": d.bootstrap})
    futures = admin.create_topics(
        [NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
        operation_timeout=30,
    )
    futures[TOPIC].result(60)
    wait_until(
        lambda: all(len(isr) == 3 for _, isr in isr_by_partition(admin, TOPIC).values()),
        60,
        "the topic's ISRs full",
        retry_on=(KafkaException,),
    )
    # the racks are the hosts, so each partition has one replica per host
    assert {b.broker_id: b.host.name for b in d.brokers} == {1: "host1", 2: "host2", 3: "host3"}

    load = AckedLoad(d.bootstrap, TOPIC, RATE_PER_S)
    phases: list[Phase] = []
    load.start()
    try:
        with phase(phases, "steady"):
            time.sleep(5)
        with phase(phases, "rolling broker restart") as p:
            rolling_broker_restart(d, admin, p)
        with phase(phases, "rolling ZooKeeper restart") as p:
            for z in d.zookeepers:
                z.stop()
                started = time.monotonic()
                z.start()
                modes = wait_quorum_whole(d.zookeepers)
                p.notes.append(
                    f"zookeeper {z.myid}: quorum whole {time.monotonic() - started:.1f} s after "
                    f"restart ({modes})"
                )
            wait_until(
                lambda: d.registered() == {1, 2, 3},
                60,
                "every broker still registered",
                retry_on=(KazooException,),
            )
        with phase(phases, "IBP bounce 1 (pinned 2.8)") as p:
            for b in d.brokers:
                b.overrides["inter.broker.protocol.version"] = "2.8"
            rolling_broker_restart(d, admin, p)
        with phase(phases, "IBP bounce 2 (raised to 2.8-IV1)") as p:
            for b in d.brokers:
                b.overrides["inter.broker.protocol.version"] = "2.8-IV1"
            rolling_broker_restart(d, admin, p)
        with phase(phases, "steady after"):
            time.sleep(3)
    finally:
        load.stop()

    keys = consume_all(d.bootstrap, TOPIC)
    acked = Counter(key for _, key in load.acks)
    lost = sorted(k for k in acked if keys[k] == 0)
    duplicated = sorted(k for k, n in keys.items() if n > 1)
    print(f"\nsent {load.sent}, acknowledged {len(load.acks)}, errors {len(load.errors)}")
    for p in phases:
        load.figures(p)
        print(
            f"{p.name}: {p.end - p.start:.1f} s, acknowledged {p.acked}, producer errors "
            f"{p.errors}, longest gap between acknowledgements {p.longest_gap_s:.2f} s "
            f"(ending at +{p.longest_gap_ends_at_s:.1f} s)"
        )
        for note in p.notes:
            print(f"    {note}")
    for t, err in load.errors[:10]:
        print(f"    error at +{t - phases[0].start:.1f} s: {err}")
    assert not [k for k, n in acked.items() if n > 1], "a key acknowledged twice"
    assert lost == [], f"{len(lost)} acknowledged records lost, e.g. {lost[:10]}"
    assert duplicated == [], f"{len(duplicated)} records duplicated, e.g. {duplicated[:10]}"
    assert len(load.acks) > RATE_PER_S * 10


def test_a_listener_on_an_address_not_on_the_host_is_a_clear_error(
    deployment: Deployment, tmp_path: Path
) -> None:
    d = deployment
    host1, host2 = d.network.hosts[0], d.network.hosts[1]
    broker = HostBroker(host1, 7, ensemble_connect(d.network.hosts, CHROOT), tmp_path, port=9093)
    wrong = f"PLAINTEXT://{host2.address}:9093"
    broker.overrides.update({"listeners": wrong, "advertised.listeners": wrong})
    broker.start()
    assert broker.wait_exit(60) == 1
    out = broker.output()
    assert (
        f"kafpy server: listener PLAINTEXT cannot bind {host2.address}:9093: cannot assign "
        f"requested address ({host2.address} is not an address of this host" in out
    ), out
    assert "Traceback" not in out
    assert 7 not in d.registered()


def test_zookeeper_connect_with_servers_down(deployment: Deployment, tmp_path: Path) -> None:
    d = deployment
    hosts = d.network.hosts
    connect = ensemble_connect(hosts, CHROOT)
    third, second = d.zookeepers[2], d.zookeepers[1]
    third.stop()
    try:
        # one of three down: the quorum serves; the broker starts and names the one down
        broker = HostBroker(hosts[0], 8, connect, tmp_path, port=9094)
        broker.start()
        try:
            wait_registered(d, broker)
        finally:
            broker.stop()
        assert (
            f"WARN [ZooKeeperStore] ZooKeeper server {third.connect_string} of "
            "zookeeper.connect is not reachable (connection refused)" in broker.output(10_000)
        ), broker.output()
        # two of three down: no quorum; the broker gives up after
        # zookeeper.connection.timeout.ms with an error naming the servers down
        second.stop()
        broker = HostBroker(hosts[0], 9, connect, tmp_path, port=9095)
        broker.overrides["zookeeper.connection.timeout.ms"] = "3000"
        broker.start()
        assert broker.wait_exit(60) == 1
        out = broker.output()
        assert "Traceback" not in out
        assert (
            f"kafpy server: Could not connect to ZooKeeper at {connect} within 3000 ms"
        ) in out, out
        assert (
            f"Not reachable: {second.connect_string} (connection refused), "
            f"{third.connect_string} (connection refused). The others do not serve without a "
            "majority of the ensemble." in out
        ), out
    finally:
        second.start()
        third.start()
        wait_quorum_whole(d.zookeepers)
