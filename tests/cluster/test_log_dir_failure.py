"""A log dir that fills up on one broker of a real ZooKeeper cluster (Kafka's
LogDirFailureChannel + the controller's LogDirEventNotification).

Broker 1 has two log dirs, one of them a small tmpfs. When an append to a partition
there fails for lack of space, broker 1 takes that dir offline and writes
/log_dir_event_notification; the controller asks broker 1 about its replicas, learns
(KAFKA_STORAGE_ERROR) which are offline and makes broker 0 the leader. Broker 1 keeps
serving the partition in its healthy dir, and every record acknowledged with acks=all
is read back from the new leader. DescribeLogDirs (`kafpy log-dirs`) shows the dir offline;
restarted with room on the tmpfs, broker 1 serves the dir again and catches up into the ISR.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS
from tests.fixtures.tmpfs import resize_tmpfs

pytestmark = [pytest.mark.zookeeper]
TOPIC = "ldf"
WAIT_S = 60.0


def log_tails(brokers: list[KafpyBroker]) -> str:
    return "\n".join(f"--- broker {b.broker_id}:\n{b.log_tail(30)}" for b in brokers)


def read_partition(bootstrap: str, partition: int, end: int) -> dict[int, bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, consumer_timeout_ms=10000)
    try:
        tp = KafkaTopicPartition(TOPIC, partition)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        out: dict[int, bytes] = {}
        for msg in consumer:
            out[msg.offset] = msg.value
            if msg.offset >= end - 1:
                break
        return out
    finally:
        consumer.close()


def describe_log_dirs(broker: KafpyBroker) -> dict[str, Any]:
    """`kafpy log-dirs --describe` of one broker: its dirs by path."""
    r = subprocess.run(
        [sys.executable, "-m", "kafpy", "log-dirs", "--describe", "--bootstrap-server",
         broker.bootstrap, "--broker-list", str(broker.broker_id), "--topic-list", TOPIC],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    [b] = json.loads(r.stdout.splitlines()[-1])["brokers"]
    return {d["logDir"]: d for d in b["logDirs"]}


def test_a_full_log_dir_moves_its_leaders_to_another_broker(
    zookeeper_connect: str,
    kafpy_broker_factory: Callable[..., KafpyBroker],
    small_tmpfs: Callable[[int], Path],
    tmp_path: Path,
) -> None:
    small = small_tmpfs(1024 * 1024)
    common = {**CLUSTER_TEST_DEFAULTS, "zookeeper.connect": zookeeper_connect,
              "offsets.topic.replication.factor": "1"}  # fmt: skip
    b0 = kafpy_broker_factory({**common, "broker.id": "0"})
    b1 = kafpy_broker_factory({**common, "broker.id": "1",
                               "log.dirs": f"{small},{tmp_path / 'b1-healthy'}",
                               "metadata.store.dir": str(tmp_path / "b1-meta")})  # fmt: skip
    brokers = [b0, b1]
    zk = KazooClient(hosts=zookeeper_connect, timeout=10.0)
    zk.start(timeout=30)
    try:
        zk.create(
            f"/brokers/topics/{TOPIC}",
            json.dumps({"version": 1, "partitions": {"0": [1, 0], "1": [1, 0]}}).encode(),
            makepath=True,
        )

        def state(p: int) -> dict[str, Any] | None:
            if not zk.exists(f"/brokers/topics/{TOPIC}/partitions/{p}/state"):
                return None
            data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{p}/state")
            return dict(json.loads(data))

        wait_until(
            lambda: all((s := state(p)) and s["isr"] == [1, 0] for p in (0, 1)),
            WAIT_S,
            "both partitions led by broker 1 with both replicas in sync",
            context=lambda: log_tails(brokers),
        )
        on_small = {
            int(p.name.rsplit("-", 1)[1]) for p in small.iterdir() if p.name.startswith(TOPIC)
        }
        assert len(on_small) == 1, "one of broker 1's partitions is in its small dir"
        (full_partition,) = on_small
        healthy_partition = 1 - full_partition

        acked: dict[int, bytes] = {}
        errors: list[Any] = []

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                errors.append(err)

        producer = Producer({
            "bootstrap.servers": b1.bootstrap, "acks": "all", "retries": 0, "linger.ms": 5,
            "message.timeout.ms": 10000,
        })  # fmt: skip
        i = 0
        while not errors and i < 5000:  # 5 MB into a 1 MB dir
            try:
                producer.produce(TOPIC, value=b"%06d" % i + b"y" * 1000,
                                 partition=full_partition, on_delivery=on_delivery)  # fmt: skip
                i += 1
            except BufferError:
                pass
            producer.poll(0.001)
        producer.flush(30)
        assert errors and acked, (errors[:3], len(acked))

        # the controller moves the leadership to broker 0 and takes broker 1 out of the ISR
        wait_until(
            lambda: (s := state(full_partition)) and s["leader"] == 0 and s["isr"] == [0],
            WAIT_S,
            "broker 0 leading the partition of the failed dir",
            context=lambda: log_tails(brokers),
        )
        assert zk.get_children("/log_dir_event_notification") == []
        assert b1.process is not None and b1.process.poll() is None, "broker 1 has a healthy dir"
        out = b1.log_path.read_text(errors="replace")
        assert f"Stopping serving replicas in dir {small}" in out

        # every acknowledged record is on the new leader
        stored = read_partition(b0.bootstrap, full_partition, max(acked) + 1)
        missing = sorted(o for o in acked if stored.get(o) != acked[o])
        assert not missing, f"{len(missing)} acknowledged records lost: {missing[:10]}"

        # broker 1 still serves the partition in its healthy dir
        assert (s := state(healthy_partition)) and s["leader"] == 1
        done: list[Any] = []
        producer = Producer({"bootstrap.servers": b1.bootstrap, "acks": "all"})
        producer.produce(TOPIC, value=b"healthy", partition=healthy_partition,
                         on_delivery=lambda e, m: done.append(e))  # fmt: skip
        assert producer.flush(30) == 0 and done == [None]

        # DescribeLogDirs names the offline dir with Kafka's error
        dirs = describe_log_dirs(b1)
        assert dirs[str(small)]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
        assert dirs[str(small)]["partitions"] == []
        healthy = dirs[str((tmp_path / "b1-healthy").resolve())]
        assert healthy["error"] is None
        assert [p["partition"] for p in healthy["partitions"]] == [f"{TOPIC}-{healthy_partition}"]

        # restarted with room on the disk, broker 1 serves the dir again and catches up
        b1.stop()
        resize_tmpfs(small, 64 * 1024 * 1024)
        b1.start()
        wait_until(
            lambda: (s := state(full_partition)) and sorted(s["isr"]) == [0, 1],
            WAIT_S,
            "broker 1 back in the ISR of the partition of the repaired dir",
            context=lambda: log_tails(brokers),
        )
        dirs = describe_log_dirs(b1)
        assert all(d["error"] is None for d in dirs.values())
        assert [p["partition"] for p in dirs[str(small)]["partitions"]] == [
            f"{TOPIC}-{full_partition}"
        ]
    finally:
        zk.stop()
        zk.close()
