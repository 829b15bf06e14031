"""Log dirs against a real `kafpy server` with two log dirs: DescribeLogDirs and
`kafpy log-dirs --describe` (kafka-log-dirs.sh's lines and JSON), and AlterReplicaLogDirs
moving a replica between the dirs while an acks=all producer writes, with nothing lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafpy.client.admin_client import AdminClient, LogDirDescription
from kafpy.common.errors import (
    KafkaError,
    LogDirNotFoundError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.testing.wait import WaitTimeout, wait_until
from tests.fixtures.broker import KafpyBroker

TIMEOUT_S = 120


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    data = tmp_path_factory.mktemp("log-dirs-broker")
    dirs = f"{data / 'd1'},{data / 'd2'}"
    b = KafpyBroker(
        data,
        {
            "log.dirs": dirs,
            "log.segment.delete.delay.ms": "500",
            "log.initial.task.delay.ms": "500",
        },
    )
    b.start()
    try:
        yield b
    finally:
        b.stop()


def dirs_of(broker: KafpyBroker) -> list[Path]:
    return [Path(d).resolve() for d in broker.overrides["log.dirs"].split(",")]


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S)  # fmt: skip


def create(broker: KafpyBroker, topic: str, partitions: int) -> None:
    r = kafpy("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic,
              "--partitions", str(partitions), "--replication-factor", "1")  # fmt: skip
    assert r.returncode == 0, r.stderr


def describe(broker: KafpyBroker) -> list[LogDirDescription]:
    async def run() -> list[LogDirDescription]:
        async with AdminClient.connect(broker.bootstrap) as admin:
            return (await admin.describe_log_dirs([0]))[0]

    return asyncio.run(run())


def alter(broker: KafpyBroker, moves: dict[TopicPartition, Path]) -> dict[Any, KafkaError | None]:
    async def run() -> dict[Any, KafkaError | None]:
        async with AdminClient.connect(broker.bootstrap) as admin:
            return await admin.alter_replica_log_dirs({(tp, 0): str(d) for tp, d in moves.items()})

    return asyncio.run(run())


def where(broker: KafpyBroker, tp: TopicPartition) -> dict[tuple[str, bool], int]:
    """{(dir, is_future): offset lag} of the replicas of `tp`."""
    return {
        (d.path, r.is_future): r.offset_lag
        for d in describe(broker)
        for p, r in d.replicas.items()
        if p == tp
    }


def test_log_dirs_describe_prints_kafka_lines_and_json(broker: KafpyBroker) -> None:
    topic = f"ld-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce(topic, b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    r = kafpy("log-dirs", "--describe", "--bootstrap-server", broker.bootstrap,
              "--topic-list", topic)  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 0",
    ]
    doc = json.loads(lines[2])
    assert doc["version"] == 1
    [b] = doc["brokers"]
    assert b["broker"] == 0
    assert sorted(d["logDir"] for d in b["logDirs"]) == sorted(map(str, dirs_of(broker)))
    parts = [p for d in b["logDirs"] for p in d["partitions"]]
    assert all(d["error"] is None for d in b["logDirs"])
    assert sorted(p["partition"] for p in parts) == [f"{topic}-0", f"{topic}-1"]
    assert all(p["size"] > 0 and p["offsetLag"] == 0 and p["isFuture"] is False for p in parts)
    # the two partitions went to different dirs (the least loaded one)
    assert sum(1 for d in b["logDirs"] if d["partitions"]) == 2
    # the JSON is compact, as Kafka's Json.encodeAsString writes it
    assert lines[2].startswith('{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--broker-list", "0,x"), "'x' is not a broker id"),
        (("--broker-list", "7"), "Broker(s) 7 are not in the cluster"),
        (("--topic-list", "no-such-topic"), "Topic(s) no-such-topic do not exist"),
    ],
)
def test_log_dirs_bad_input_is_one_clear_line(
    broker: KafpyBroker, args: tuple[str, ...], message: str
) -> None:
    r = kafpy("log-dirs", "--describe", "--bootstrap-server", broker.bootstrap, *args)
    assert r.returncode == 1
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Querying" not in r.stdout


def test_alter_replica_log_dirs_errors(broker: KafpyBroker, tmp_path: Path) -> None:
    topic = f"lde-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 1)
    result = alter(
        broker,
        {
            TopicPartition(topic, 0): tmp_path,
            TopicPartition("no-such-topic", 0): dirs_of(broker)[0],
        },
    )
    assert isinstance(result[(TopicPartition(topic, 0), 0)], LogDirNotFoundError)
    assert isinstance(result[(TopicPartition("no-such-topic", 0), 0)], UnknownTopicOrPartitionError)
    # moving into the dir it is already in is a no-op
    [(here, _)] = where(broker, TopicPartition(topic, 0))
    assert alter(broker, {TopicPartition(topic, 0): Path(here)}) == {
        (TopicPartition(topic, 0), 0): None
    }


def test_replica_moves_between_dirs_while_producing(broker: KafpyBroker) -> None:
    topic = f"ldm-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 1)
    tp = TopicPartition(topic, 0)
    [(source, _)] = where(broker, tp)
    target = next(d for d in dirs_of(broker) if str(d) != source)

    acked: list[bytes] = []
    errors: list[str] = []
    stop = threading.Event()

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.append(msg.value())
        else:
            errors.append(str(err))

    def produce() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})  # fmt: skip
        i = 0
        while not stop.is_set():
            producer.produce(topic, b"%08d" % i + b"x" * 200, on_delivery=on_delivery)
            producer.poll(0)
            i += 1
            if i % 200 == 0:
                time.sleep(0.01)
        assert producer.flush(30) == 0

    # some data first, so the move has something to copy
    seed = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(5000):
        seed.produce(topic, b"seed%06d" % i + b"y" * 500, on_delivery=on_delivery)
    assert seed.flush(30) == 0

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        time.sleep(0.3)
        assert alter(broker, {tp: target}) == {(tp, 0): None}
        wait_until(
            lambda: set(where(broker, tp)) == {(str(target), False)},
            60,
            "the move to finish",
            interval_s=0.2,
            context=lambda: f"places: {where(broker, tp)}",
        )
        time.sleep(0.3)  # keep writing into the moved log for a moment
    finally:
        stop.set()
        writer.join(60)
    assert not errors

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    seen: list[bytes] = []

    def all_read() -> bool:
        if len(seen) < len(acked):
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                seen.append(msg.value() or b"")
        return len(seen) >= len(acked)

    try:
        # what came within 60 s: the assertions below compare it with what was acked
        with contextlib.suppress(WaitTimeout):
            wait_until(all_read, 60, f"{len(acked)} records", interval_s=0)
    finally:
        consumer.close()
    assert len(acked) > 5000
    assert set(acked) <= set(seen)
    assert len(seen) == len(set(seen))  # nothing written twice
    # the old dir no longer holds the partition, and its -delete copy goes
    wait_until(
        lambda: not [p.name for p in Path(source).iterdir() if p.name.startswith(f"{topic}-0")],
        30,
        f"{topic}-0 and its -delete copy gone from the old dir",
        interval_s=0.2,
        context=lambda: str(sorted(p.name for p in Path(source).iterdir())),
    )
    assert (target / f"{topic}-0").is_dir()


def test_kafka_python_describes_and_moves(broker: KafpyBroker) -> None:
    """kafka-python's admin client, unmodified: describe_log_dirs and alter_replica_log_dirs."""
    from kafka import KafkaAdminClient
    from kafka.errors import NoError

    topic = f"ldk-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 1)
    tp = TopicPartition(topic, 0)
    [(source, _)] = where(broker, tp)
    target = next(d for d in dirs_of(broker) if str(d) != source)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        [answer] = admin.describe_log_dirs()
        assert answer["broker"] == 0
        paths = {d["log_dir"]: d for d in answer["log_dirs"]}
        assert set(paths) == {str(d) for d in dirs_of(broker)}
        listed = [(t["name"], p["partition_index"]) for t in paths[source]["topics"]
                  for p in t["partitions"]]  # fmt: skip
        assert (topic, 0) in listed
        errors = admin.alter_replica_log_dirs({(topic, 0, 0): str(target)})
        assert list(errors.values()) == [NoError]
    finally:
        admin.close()
    wait_until(
        lambda: set(where(broker, tp)) == {(str(target), False)},
        30,
        "the move to finish",
        context=lambda: f"places: {where(broker, tp)}",
    )
