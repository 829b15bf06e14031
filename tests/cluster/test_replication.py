"""Replication across three broker processes: copies, ISR, acks=all, leader failures.

Real ZooKeeper, three `kafpy server` processes, confluent-kafka as the producer. Failure
detection is kept short (6 s ZooKeeper sessions, replica.lag.time.max.ms 3 s); every wait
has a deadline.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from kafpy.client.admin_client import ConfigResource, NewTopic
from kafpy.client.fetcher import Fetcher, OffsetResetStrategy
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.memory_records import MemoryRecords
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    ANY_ERROR,
    Zk,
    admin,
    live_bootstrap,
)
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(170)]
LAG_MS = 3000
WAIT_S = 45.0
SESSION_TIMEOUT_S = int(CLUSTER_TEST_DEFAULTS["zookeeper.session.timeout.ms"]) / 1000
FAILOVER_S = SESSION_TIMEOUT_S + 25.0
OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "default.replication.factor": "3",
    # brokers stopped together at the end retry controlled shutdown while the controller goes
    "controlled.shutdown.retry.backoff.ms": "500",
}


def _create(cluster: LocalCluster, zk: Zk, topic: str, partitions: int = 1, **configs: str) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, partitions, 3, configs=configs)]))
    for p in range(partitions):
        wait_until(
            lambda p=p: (s := zk.partition_state(topic, p)) is not None and len(s["isr"]) == 3 and s,
            WAIT_S, f"{topic}-{p} online with a full ISR", retry_on=ANY_ERROR,
        )  # fmt: skip


def _producer(cluster: LocalCluster, **extra: Any) -> Any:
    conf = {
        "bootstrap.servers": live_bootstrap(cluster),
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 60000,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    conf.update(extra)
    return confluent_kafka.Producer(conf)


def _segments(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> dict[str, str]:
    d: Path = cluster.brokers[broker_id].data_dir / f"{topic}-{partition}"
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(d.glob("*.log"))}


def _restart(cluster: LocalCluster, broker_id: int) -> None:
    cluster.wait_unregistered(broker_id, FAILOVER_S)
    cluster.start_broker(broker_id)


def test_rf3_followers_hold_identical_segment_files(cluster: LocalCluster, zk: Zk) -> None:
    topic = "copies"
    _create(cluster, zk, topic)
    producer = _producer(cluster)
    errors: list[Any] = []
    for i in range(3000):
        producer.produce(topic, f"value-{i}".encode() * 3, key=str(i).encode(),
                         on_delivery=lambda err, msg: err and errors.append(err))  # fmt: skip
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []

    def identical() -> Any:
        copies = {b: _segments(cluster, b, topic, 0) for b in cluster.brokers}
        first = next(iter(copies.values()))
        return first and all(c == first for c in copies.values()) and copies

    copies = wait_until(
        identical, WAIT_S, "the three copies to be byte-identical", retry_on=ANY_ERROR
    )
    assert len(copies) == 3
    assert sorted(zk.partition_state(topic, 0)["isr"]) == [0, 1, 2]


def test_followers_copy_a_log_of_mixed_message_formats(cluster: LocalCluster, zk: Zk) -> None:
    # a topic stored as v1 (gzip wrappers), then v0, then v2: the followers append the
    # leader's messages as they are, so the copies stay byte-identical
    topic = "copies-mixed-formats"
    _create(cluster, zk, topic, **{"message.format.version": "0.10.0", "compression.type": "gzip"})
    values = [f"value-{i}".encode() * 3 for i in range(600)]
    for version, part in (
        ("0.10.0", values[:200]),
        ("0.9.0", values[200:400]),
        ("2.8", values[400:]),
    ):
        admin(cluster, lambda a, v=version: a.alter_configs(
            ConfigResource.topic(topic), {"message.format.version": v}))  # fmt: skip
        wait_until(
            lambda v=version: (
                _applied_config(cluster, topic) == {f"'message.format.version': '{v}'"}
            ),
            WAIT_S,
            f"every broker to apply message.format.version={version}",
        )
        assert _produce_all(cluster, topic, part) == []

    def identical() -> Any:
        copies = {b: _segments(cluster, b, topic, 0) for b in cluster.brokers}
        first = next(iter(copies.values()))
        return first and all(c == first for c in copies.values()) and copies

    wait_until(identical, WAIT_S, "the three copies to be byte-identical", retry_on=ANY_ERROR)
    leader = zk.partition_state(topic, 0)["leader"]
    d: Path = cluster.brokers[leader].data_dir / f"{topic}-0"
    data = b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))
    magics = [b.magic for b in MemoryRecords(data).batches()]
    assert [m for i, m in enumerate(magics) if i == 0 or magics[i - 1] != m] == [1, 0, 2]
    assert sorted(zk.partition_state(topic, 0)["isr"]) == [0, 1, 2]


def _applied_config(cluster: LocalCluster, topic: str) -> set[str]:
    """The message.format.version each broker last applied to `topic`, from the line its
    DynamicConfigManager logs on a config notification (nothing for a broker that has
    applied none yet)."""
    marker = f"Processing override for topic {topic}: "
    applied = set()
    for b in cluster.brokers.values():
        lines = [
            line for line in (b.logs_dir / "server.log").read_text().splitlines() if marker in line
        ]
        found = re.search(r"'message\.format\.version': '[^']*'", lines[-1]) if lines else None
        applied.add(found.group(0) if found else "")
    return applied


def _produce_all(cluster: LocalCluster, topic: str, values: list[bytes], **conf: Any) -> list[Any]:
    """Produce `values`, flush; the delivery errors."""
    producer = _producer(cluster, **conf)
    errors: list[Any] = []
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, msg: err and errors.append(err))
    producer.flush(60)
    return errors


def _consume_all(
    cluster: LocalCluster, topic: str, partitions: int
) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of `topic` below the high watermark: partition -> [(offset, value)]."""

    async def go() -> dict[int, list[tuple[int, bytes]]]:
        async with KafkaClient(
            live_bootstrap(cluster), request_timeout_ms=10000, retries=20
        ) as client:
            fetcher = Fetcher(client, max_wait_ms=100, reset=OffsetResetStrategy.EARLIEST)
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            fetcher.assign({tp: 0 for tp in tps})
            ends = await fetcher.list_offsets(tps, -1)
            out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
            while any(fetcher.positions[tp] < ends[tp] for tp in tps):
                for r in await fetcher.fetch():
                    out[r.partition].append((r.offset, r.value or b""))
            return out

    return asyncio.run(go())


def _topics_cli(cluster: LocalCluster, *args: str) -> str:
    from click.testing import CliRunner

    from kafpy.cli.main import main

    result = CliRunner().invoke(main, ["topics", "--zookeeper", cluster.zookeeper.connect, *args])
    assert result.exit_code == 0, result.output
    return result.output


def _leader(zk: Zk, topic: str, partition: int) -> int:
    state = zk.partition_state(topic, partition)
    assert state is not None
    leader: int = state["leader"]
    return leader


def test_stopped_follower_drops_out_of_isr_and_rejoins(cluster: LocalCluster, zk: Zk) -> None:
    topic = "lagging"
    _create(cluster, zk, topic)
    leader = _leader(zk, topic, 0)
    epoch = zk.partition_state(topic, 0)["leader_epoch"]
    # the controller when it is a follower: the leader's AlterIsr to a frozen controller
    # must go to the next one once it is elected
    controller = zk.controller()[0]
    followers = [b for b in cluster.brokers if b != leader]
    follower = controller if controller in followers else followers[0]
    pid = cluster.brokers[follower].pid
    assert pid is not None
    os.kill(
        pid, signal.SIGSTOP
    )  # a follower that stops fetching (its session lives on for a while)
    try:
        assert _produce_all(cluster, topic, [b"x"] * 10, acks="1") == []
        state = wait_until(
            lambda: (s := zk.partition_state(topic, 0)) and follower not in s["isr"] and s,
            LAG_MS / 1000 + 10, "the leader to drop the stopped follower from the ISR", retry_on=ANY_ERROR,
        )  # fmt: skip
    finally:
        os.kill(pid, signal.SIGCONT)
    # the leader shrank it (the controller would have bumped the leader epoch)
    assert state["leader"] == leader and state["leader_epoch"] == epoch
    wait_until(
        lambda: follower in zk.partition_state(topic, 0)["isr"],
        WAIT_S,
        "the follower to rejoin the ISR",
        retry_on=ANY_ERROR,
    )
    # stopped longer than its session under load, it registers again: let the cluster settle
    wait_until(
        lambda: sorted(zk.children("/brokers/ids")) == sorted(map(str, cluster.brokers))
        and zk.controller()[0] is not None,
        FAILOVER_S, "every broker registered and a controller elected", retry_on=ANY_ERROR,
    )  # fmt: skip


def test_killed_follower_catches_up_after_restart(cluster: LocalCluster, zk: Zk) -> None:
    topic = "catch-up"
    _create(cluster, zk, topic)
    leader = _leader(zk, topic, 0)
    follower = next(b for b in cluster.brokers if b != leader)
    cluster.kill_broker(follower)
    values = [f"v{i}".encode() for i in range(2000)]
    assert _produce_all(cluster, topic, values) == []  # acks=all with min.insync.replicas=1
    _restart(cluster, follower)
    wait_until(
        lambda: sorted(zk.partition_state(topic, 0)["isr"]) == [0, 1, 2],
        WAIT_S,
        "a full ISR again",
        retry_on=ANY_ERROR,
    )
    wait_until(
        lambda: _segments(cluster, follower, topic, 0) == _segments(cluster, leader, topic, 0),
        WAIT_S, "the restarted follower's copy to match the leader's", retry_on=ANY_ERROR,
    )  # fmt: skip


def test_not_enough_replicas_with_two_of_three_down(cluster: LocalCluster, zk: Zk) -> None:
    topic = "min-isr"
    _create(cluster, zk, topic, **{"min.insync.replicas": "2"})
    leader = _leader(zk, topic, 0)
    others = [b for b in cluster.brokers if b != leader]
    for b in others:
        cluster.kill_broker(b)
    try:
        assert _produce_all(cluster, topic, [b"one"], acks="1") == []
        # the followers now lag: the leader (or the controller, if it sees them die first)
        # takes them out of the ISR
        wait_until(
            lambda: zk.partition_state(topic, 0)["isr"] == [leader],
            FAILOVER_S,
            "the ISR to be the leader alone",
            retry_on=ANY_ERROR,
        )
        errors = _produce_all(
            cluster, topic, [b"all"], acks="all", retries=0, **{"message.timeout.ms": 10000}
        )
        assert [e.code() for e in errors] == [confluent_kafka.KafkaError.NOT_ENOUGH_REPLICAS]
        under = _topics_cli(cluster, "--describe", "--under-replicated-partitions")
        (line,) = [x for x in under.splitlines() if f"Topic: {topic}\t" in x]
        assert line.rstrip().endswith(f"Isr: {leader}")
    finally:
        for b in others:
            _restart(cluster, b)
    wait_until(
        lambda: sorted(zk.partition_state(topic, 0)["isr"]) == [0, 1, 2],
        WAIT_S,
        "a full ISR again",
        retry_on=ANY_ERROR,
    )
    assert [v for _, v in _consume_all(cluster, topic, 1)[0]] == [b"one"]


class _NumberedProducer(threading.Thread):
    """Produces "n" for n = 0, 1, ... with acks=all (idempotent) until stopped; records
    which numbers were acknowledged at which partition and offset."""

    def __init__(self, cluster: LocalCluster, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = _producer(
            cluster, **{"enable.idempotence": True, "message.timeout.ms": 120000, "linger.ms": 2}
        )
        self.topic = topic
        self.acked: dict[int, tuple[int, int]] = {}
        self.failed: list[Any] = []
        self.stop = threading.Event()
        self.sent = 0

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(err)
        else:
            self.acked[int(msg.value())] = (msg.partition(), msg.offset())

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.producer.produce(self.topic, str(self.sent).encode(), key=str(self.sent).encode(),
                                      on_delivery=self._on_delivery)  # fmt: skip
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.002)
        self.producer.flush(120)


def test_acks_all_loses_no_acknowledged_record_when_leaders_die(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "faults"
    partitions = 3
    _create(cluster, zk, topic, partitions, **{"min.insync.replicas": "2"})
    writer = _NumberedProducer(cluster, topic)
    writer.start()
    try:
        wait_until(
            lambda: len(writer.acked) > 200,
            WAIT_S,
            "records acknowledged before the first kill",
            retry_on=ANY_ERROR,
        )
        victims = [_leader(zk, topic, 0), _leader(zk, topic, 1), None]
        for victim in victims:
            if victim is None:  # once the controller
                victim = wait_until(
                    lambda: (c := zk.controller()[0]) is not None and [c],
                    WAIT_S,
                    "a controller",
                    retry_on=ANY_ERROR,
                )[0]
            before = len(writer.acked)
            cluster.kill_broker(victim)
            wait_until(
                lambda v=victim: all(_leader(zk, topic, p) != v for p in range(partitions)),
                FAILOVER_S, f"every partition led by another broker than {victim}", retry_on=ANY_ERROR,
            )  # fmt: skip
            wait_until(
                lambda b=before: len(writer.acked) > b + 100,
                WAIT_S,
                "acknowledgements after the kill",
                retry_on=ANY_ERROR,
            )
            _restart(cluster, victim)
            wait_until(
                lambda: all(len(zk.partition_state(topic, p)["isr"]) == 3 for p in range(partitions)),
                WAIT_S, "full ISRs after the restart", retry_on=ANY_ERROR,
            )  # fmt: skip
    finally:
        writer.stop.set()
        writer.join(150)
    assert not writer.is_alive()
    stored = _consume_all(cluster, topic, partitions)
    by_position = {(p, off): v for p, recs in stored.items() for off, v in recs}
    lost = [n for n, pos in writer.acked.items() if by_position.get(pos) != str(n).encode()]
    values = [v for recs in stored.values() for _, v in recs]
    duplicates = len(values) - len(set(values))
    print(f"acks=all fault test: sent {writer.sent}, acknowledged {len(writer.acked)}, "
          f"failed {len(writer.failed)}, stored {len(values)}, duplicates {duplicates}, "
          f"acknowledged-but-lost {len(lost)}")  # fmt: skip
    assert lost == []
    assert duplicates == 0
    for recs in stored.values():
        offsets = [off for off, _ in recs]
        assert offsets == sorted(offsets)


def test_controlled_shutdown_moves_leadership_without_produce_errors(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "rolling"
    _create(cluster, zk, topic, 3, **{"min.insync.replicas": "2"})
    writer = _NumberedProducer(cluster, topic)
    writer.start()
    try:
        wait_until(
            lambda: len(writer.acked) > 200,
            WAIT_S,
            "records acknowledged before the shutdown",
            retry_on=ANY_ERROR,
        )
        victim = _leader(zk, topic, 0)
        epoch = zk.partition_state(topic, 0)["leader_epoch"]
        cluster.stop_broker(victim)  # SIGTERM: the broker asks the controller first
        assert not cluster.brokers[victim].alive
        # leadership moved during the controlled shutdown, not after a session expiry
        state = zk.partition_state(topic, 0)
        assert state["leader"] != victim and state["leader_epoch"] > epoch
        assert victim not in state["isr"]
        before = len(writer.acked)
        wait_until(
            lambda: len(writer.acked) > before + 100,
            WAIT_S,
            "acknowledgements after the shutdown",
            retry_on=ANY_ERROR,
        )
        cluster.start_broker(victim)
        wait_until(
            lambda: all(len(zk.partition_state(topic, p)["isr"]) == 3 for p in range(3)),
            WAIT_S, "full ISRs after the restart", retry_on=ANY_ERROR,
        )  # fmt: skip
    finally:
        writer.stop.set()
        writer.join(150)
    assert writer.failed == []
    stored = _consume_all(cluster, topic, 3)
    by_position = {(p, off): v for p, recs in stored.items() for off, v in recs}
    assert [n for n, pos in writer.acked.items() if by_position.get(pos) != str(n).encode()] == []


def test_preferred_leader_election_moves_leadership_back(cluster: LocalCluster, zk: Zk) -> None:
    from click.testing import CliRunner

    from kafpy.cli.main import main

    topic = "preferred"
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment={0: [0, 1, 2]})]))
    wait_until(
        lambda: len(zk.partition_state(topic, 0)["isr"]) == 3,
        WAIT_S,
        "a full ISR",
        retry_on=ANY_ERROR,
    )
    assert _leader(zk, topic, 0) == 0
    cluster.stop_broker(0)  # controlled shutdown: leadership moves to 1
    assert _leader(zk, topic, 0) == 1
    cluster.start_broker(0)
    wait_until(
        lambda: len(zk.partition_state(topic, 0)["isr"]) == 3,
        WAIT_S,
        "broker 0 back in the ISR",
        retry_on=ANY_ERROR,
    )
    assert (
        _leader(zk, topic, 0) == 1
    )  # no automatic move within leader.imbalance.check.interval.seconds

    result = CliRunner().invoke(main, [
        "leader-election", "--zookeeper", cluster.zookeeper.connect, "--election-type", "preferred",
        "--topic", topic, "--partition", "0",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        "Successfully started preferred replica election for partitions preferred-0"
        in result.output
    )
    wait_until(
        lambda: _leader(zk, topic, 0) == 0,
        WAIT_S,
        "the preferred replica to lead again",
        retry_on=ANY_ERROR,
    )
    wait_until(
        lambda: not zk.exists("/admin/preferred_replica_election"),
        WAIT_S,
        "the election node to go",
        retry_on=ANY_ERROR,
    )
