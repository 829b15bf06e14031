"""Partition reassignment on a ZooKeeper cluster of three broker processes.

AlterPartitionReassignments through kafka-python's KafkaAdminClient moves replicas of a
topic with acknowledged records onto another broker: the new replicas catch up, the old
ones are deleted, the topic znode holds the target replicas and every replica's log is
byte-identical. A reassignment that cannot finish (its new replica's broker is paused)
shows in ListPartitionReassignments and is cancelled back to its origin replicas. A
reassignment written to /admin/reassign_partitions (Kafka's JSON) is carried out too and
the node deleted. `kafpy reassign-partitions` --generate, --execute --throttle and
--verify spread a topic of brokers 0-1 over an added broker 2 while an idempotent
acks=all producer runs, losing nothing; a 50 kB/s throttle holds a move back until it is
raised; and a controller SIGKILLed mid-reassignment leaves it to the next controller.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import confluent_kafka
import kafka
import pytest
from kafka.admin import KafkaAdminClient

from kafpy.admin.reassign_partitions import YOU_MUST_RUN_VERIFY_PERIODICALLY
from kafpy.client.admin_client import NewTopic
from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    ANY_ERROR,
    Zk,
    admin,
    live_bootstrap,
    live_log_partitions,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]
WAIT_S = 45.0
OVERRIDES = {
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    # a broker paused with SIGSTOP keeps its registration for a few seconds; a SIGKILLed
    # controller's session still expires soon enough
    "zookeeper.session.timeout.ms": "12000",
}


def _create_and_fill(
    cluster: LocalCluster,
    zk: Zk,
    topic: str,
    assignment: dict[int, list[int]],
    records: int,
    size: int = 0,
) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment=assignment)]))
    for p, replicas in assignment.items():
        wait_until(lambda p=p, r=replicas: (s := zk.partition_state(topic, p)) is not None  # type: ignore[misc]
                   and sorted(s["isr"]) == sorted(r), WAIT_S, f"{topic}-{p} with a full ISR", retry_on=ANY_ERROR)  # fmt: skip
    producer = confluent_kafka.Producer({"bootstrap.servers": live_bootstrap(cluster), "acks": "all",
                                         "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})  # fmt: skip
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i in range(records):
        value = f"v{i}".encode() * 20 if not size else f"{i:08d}".encode() * (size // 8)
        producer.produce(topic, value, partition=i % len(assignment),
                         on_delivery=delivered)  # fmt: skip
    assert producer.flush(30) == 0 and errors == []


def _segments(
    cluster: LocalCluster, broker_id: int, topic: str, partition: int
) -> dict[str, bytes]:
    directory = cluster.brokers[broker_id].data_dir / f"{topic}-{partition}"
    return {f.name: f.read_bytes() for f in sorted(directory.glob("*.log"))}


def _replicas_identical(
    cluster: LocalCluster, topic: str, partition: int, replicas: list[int]
) -> bool:
    logs = [_segments(cluster, b, topic, partition) for b in replicas]
    return all(log == logs[0] and log for log in logs)


def _kafka_admin(cluster: LocalCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=live_bootstrap(cluster), request_timeout_ms=30000)


def test_kafka_python_moves_replicas_and_cancels(cluster: LocalCluster, zk: Zk) -> None:
    topic = "moved"
    _create_and_fill(cluster, zk, topic, {0: [0, 1], 1: [1, 0]}, 400)
    client = _kafka_admin(cluster)
    try:
        client.alter_partition_reassignments(
            {kafka.TopicPartition(topic, 0): [1, 2], kafka.TopicPartition(topic, 1): [2, 1]}
        )
        wait_until(lambda: zk.assignment(topic) == {0: [1, 2], 1: [2, 1]}, WAIT_S,
                   "the target replicas in the topic znode", retry_on=ANY_ERROR)  # fmt: skip
        assert zk.get_json(f"/brokers/topics/{topic}")["adding_replicas"] == {}
        assert client.list_partition_reassignments() == {}
        # the old replicas are deleted from broker 0, the new ones hold the same bytes
        wait_until(lambda: 0 not in live_log_partitions(cluster, topic), WAIT_S,
                   "broker 0's replicas deleted", retry_on=ANY_ERROR)  # fmt: skip
        for p, replicas in {0: [1, 2], 1: [2, 1]}.items():
            wait_until(lambda p=p, r=replicas: _replicas_identical(cluster, topic, p, r), WAIT_S,  # type: ignore[misc]
                       f"{topic}-{p}'s replicas byte-identical", retry_on=ANY_ERROR)  # fmt: skip
        for p in (0, 1):
            state = zk.partition_state(topic, p)
            assert state is not None and sorted(state["isr"]) == [1, 2]

        # a broker (not the controller) is paused: a reassignment adding it stays in
        # progress, then is cancelled
        controller, _ = zk.controller()
        paused = max(b for b in cluster.brokers if b != controller)
        others = [b for b in sorted(cluster.brokers) if b != paused]
        cancelled = "cancelled"
        _create_and_fill(cluster, zk, cancelled, {0: others}, 20)
        pid = cluster.brokers[paused].pid
        assert pid is not None
        tp0 = kafka.TopicPartition(cancelled, 0)
        os.kill(pid, signal.SIGSTOP)
        try:
            client.alter_partition_reassignments({tp0: [*others, paused]})
            ongoing = client.list_partition_reassignments()
            assert set(ongoing) == {tp0}
            assert ongoing[tp0]["adding_replicas"] == [paused]
            assert zk.get_json(f"/brokers/topics/{cancelled}")["adding_replicas"] == {"0": [paused]}
            client.alter_partition_reassignments({tp0: None})
            assert client.list_partition_reassignments() == {}
            assert zk.assignment(cancelled) == {0: others}
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_until(lambda: paused not in live_log_partitions(cluster, cancelled), WAIT_S,
                   "the cancelled replica deleted from the paused broker", retry_on=ANY_ERROR)  # fmt: skip
    finally:
        client.close()


def test_reassignment_through_the_admin_znode(cluster: LocalCluster, zk: Zk) -> None:
    topic = "zk-moved"
    _create_and_fill(cluster, zk, topic, {0: [0, 1]}, 100)
    zk.create_json("/admin/reassign_partitions", {"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 0]}]})  # fmt: skip
    wait_until(lambda: not zk.exists("/admin/reassign_partitions"), WAIT_S,
               "the reassignment node deleted once done", retry_on=ANY_ERROR)  # fmt: skip
    assert zk.assignment(topic) == {0: [2, 0]}
    wait_until(lambda: 1 not in live_log_partitions(cluster, topic), WAIT_S,
               "broker 1's replica deleted", retry_on=ANY_ERROR)  # fmt: skip
    wait_until(lambda: _replicas_identical(cluster, topic, 0, [2, 0]), WAIT_S,
               "the replicas byte-identical", retry_on=ANY_ERROR)  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafpy", "reassign-partitions", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


class _Producer(threading.Thread):
    """An idempotent acks=all producer writing until stopped; remembers what was acked."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
            "enable.idempotence": True, "linger.ms": 5, "topic.metadata.refresh.interval.ms": 500})  # fmt: skip
        self.topic = topic
        self.acked: set[tuple[int, int, bytes]] = set()
        self.errors: list[Any] = []
        self.stopping = threading.Event()

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.acked.add((msg.partition(), msg.offset(), msg.value()))

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            self.producer.produce(self.topic, f"r{i}".encode() * 10, on_delivery=self._delivered)
            self.producer.poll(0.002)
            i += 1
        self.producer.flush(30)


def _consume_all(bootstrap: str, topic: str, partitions: int) -> set[tuple[int, int, bytes]]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(partitions)])  # fmt: skip
    seen: set[tuple[int, int, bytes]] = set()
    idle = 0
    try:
        while idle < 20:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                idle += 1
                continue
            idle = 0
            seen.add((msg.partition(), msg.offset(), msg.value()))
    finally:
        consumer.close()
    return seen


def test_cli_spreads_a_topic_over_an_added_broker_while_producing(
    cluster: LocalCluster, zk: Zk, tmp_path: Path
) -> None:
    topic = "spread"
    assignment = {p: [p % 2, (p + 1) % 2] for p in range(6)}
    cluster.stop_broker(2)  # the cluster has brokers 0 and 1 when the topic is made
    _create_and_fill(cluster, zk, topic, assignment, 60)
    producer = _Producer(live_bootstrap(cluster), topic)
    producer.start()
    try:
        cluster.start_broker(2)  # broker 2 is added while the producer runs
        bootstrap = live_bootstrap(cluster)
        topics_file = tmp_path / "topics.json"
        topics_file.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
        generated = _cli("--bootstrap-server", bootstrap, "--generate", "--topics-to-move-json-file",
                         str(topics_file), "--broker-list", "0,1,2")  # fmt: skip
        assert generated.returncode == 0, generated.stderr
        lines = generated.stdout.splitlines()
        assert lines[0] == "Current partition replica assignment"
        assert lines[3] == "Proposed partition reassignment configuration"
        proposed = json.loads(lines[4])
        assert {r for p in proposed["partitions"] for r in p["replicas"]} == {0, 1, 2}
        plan = tmp_path / "plan.json"
        plan.write_text(lines[4])

        # a throttle that is not a number is refused before anything happens
        refused = _cli("--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file",
                       str(plan), "--throttle", "fast")  # fmt: skip
        assert refused.returncode == 1 and "--throttle must be a whole number" in refused.stderr
        assert not zk.exists("/admin/reassign_partitions")

        executed = _cli("--bootstrap-server", bootstrap, "--execute",
                        "--reassignment-json-file", str(plan), "--throttle", "5000000")  # fmt: skip
        assert executed.returncode == 0, executed.stderr
        out = executed.stdout.splitlines()
        assert out[0] == "Current partition replica assignment"
        assert out[4] == "Save this to use as the --reassignment-json-file option during rollback"
        assert out[5] == YOU_MUST_RUN_VERIFY_PERIODICALLY
        assert out[6] == "The inter-broker throttle limit was set to 5000000 B/s"
        assert out[7] == "Successfully started partition reassignments for " + ",".join(
            f"{topic}-{p}" for p in range(6)
        )
        # the throttles stay until --verify clears them
        for b in (0, 1, 2):
            assert zk.get_json(f"/config/brokers/{b}")["config"] == {
                "leader.replication.throttled.rate": "5000000",
                "follower.replication.throttled.rate": "5000000",
            }
        topic_config = zk.get_json(f"/config/topics/{topic}")["config"]
        assert topic_config["leader.replication.throttled.replicas"].split(",") == sorted(
            f"{p}:{b}" for p, rs in assignment.items() for b in rs
        )
        assert topic_config["follower.replication.throttled.replicas"]

        def verified() -> str | None:
            result = _cli("--bootstrap-server", bootstrap, "--verify",
                          "--reassignment-json-file", str(plan))  # fmt: skip
            assert result.returncode == 0, result.stderr
            # "no active reassignment ... but replica set is" is Kafka's answer too while the
            # controller's UpdateMetadata (sent after it clears the reassignment) is on its way
            pending = ("still in progress", "There is no active reassignment")
            return None if any(p in result.stdout for p in pending) else result.stdout

        final = wait_until(
            verified,
            90,
            "--verify to report every partition complete",
            interval_s=1.0,
            retry_on=ANY_ERROR,
        )
        assert final.splitlines()[:7] == ["Status of partition reassignment:"] + [
            f"Reassignment of partition {topic}-{p} is complete." for p in range(6)
        ]
        assert "Clearing broker-level throttles on brokers 0,1,2" in final
        assert f"Clearing topic-level throttles on topic {topic}" in final
        for b in (0, 1, 2):
            assert zk.get_json(f"/config/brokers/{b}")["config"] == {}
        assert zk.get_json(f"/config/topics/{topic}")["config"] == {}
    finally:
        producer.stopping.set()
        producer.join(60)
    assert producer.errors == []
    target = {p["partition"]: p["replicas"] for p in proposed["partitions"]}
    assert zk.assignment(topic) == target
    assert producer.acked <= _consume_all(bootstrap, topic, 6)
    for p, replicas in target.items():
        wait_until(lambda p=p, r=replicas: _replicas_identical(cluster, topic, p, r), WAIT_S,  # type: ignore[misc]
                   f"{topic}-{p}'s replicas byte-identical", retry_on=ANY_ERROR)  # fmt: skip


def _log_bytes(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> int:
    return sum(len(b) for b in _segments(cluster, broker_id, topic, partition).values())


def test_throttled_move_is_held_to_the_rate_until_the_throttle_is_raised(
    cluster: LocalCluster, zk: Zk, tmp_path: Path
) -> None:
    topic = "throttled"
    _create_and_fill(cluster, zk, topic, {0: [0]}, 300, size=10000)  # 3 MB on broker 0
    bootstrap = live_bootstrap(cluster)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1]}]}))  # fmt: skip
    executed = _cli("--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file",
                    str(plan), "--throttle", "50000")  # fmt: skip
    assert executed.returncode == 0, executed.stderr
    assert zk.get_json(f"/config/topics/{topic}")["config"] == {
        "leader.replication.throttled.replicas": "0:0",
        "follower.replication.throttled.replicas": "0:1",
    }
    # 50 kB/s: broker 1's copy grows, but stays far behind (observed, not timed)
    wait_until(lambda: (cluster.brokers[1].data_dir / f"{topic}-0").exists()
               and _log_bytes(cluster, 1, topic, 0) > 0, WAIT_S, "the copy to start", retry_on=ANY_ERROR)  # fmt: skip
    verified = _cli(
        "--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(plan)
    )
    assert f"Reassignment of partition {topic}-0 is still in progress." in verified.stdout
    assert "Clearing" not in verified.stdout
    leader_bytes = _log_bytes(cluster, 0, topic, 0)
    copied = _log_bytes(cluster, 1, topic, 0)
    print(f"throttled copy: {copied} of {leader_bytes} bytes")
    assert copied < leader_bytes
    # raising the throttle (Kafka's way: --execute --additional with a new value) lets it finish
    raised = _cli("--bootstrap-server", bootstrap, "--execute", "--additional",
                  "--reassignment-json-file", str(plan), "--throttle", "1000000000")  # fmt: skip
    assert raised.returncode == 0, raised.stderr
    assert "The inter-broker throttle limit was set to 1000000000 B/s" in raised.stdout

    def complete() -> str | None:
        out = _cli("--bootstrap-server", bootstrap, "--verify",
                   "--reassignment-json-file", str(plan)).stdout  # fmt: skip
        return out if "is complete." in out else None

    final = wait_until(
        complete,
        WAIT_S,
        "the raised throttle to let the move finish",
        interval_s=1.0,
        retry_on=ANY_ERROR,
    )
    assert "Clearing broker-level throttles on brokers 0,1,2" in final
    assert zk.get_json(f"/config/topics/{topic}")["config"] == {}
    assert zk.assignment(topic) == {0: [1]}


def _send(cluster: LocalCluster, broker_id: int, api_key: int, body: dict[str, Any]) -> Any:
    async def go() -> Any:
        broker = cluster.brokers[broker_id]
        conn = BrokerConnection(broker.host, broker.port, request_timeout_ms=30000)
        await conn.connect()
        try:
            return await conn.send(api_key, body)
        finally:
            await conn.close()

    return asyncio.run(go())


def test_a_new_controller_completes_the_reassignment(cluster: LocalCluster, zk: Zk) -> None:
    topic = "failover-moved"
    controller, _ = zk.controller()
    assert controller is not None
    others = [b for b in sorted(cluster.brokers) if b != controller]
    stays, joins = others
    _create_and_fill(cluster, zk, topic, {0: [stays, controller]}, 100)
    pid = cluster.brokers[joins].pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # the new replica cannot catch up: the move stays in progress
    try:
        # straight to the controller: a client's metadata lookup could pick the paused broker
        response = _send(cluster, controller, ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
            "timeout_ms": 30000, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "replicas": [stays, joins]}]}]})  # fmt: skip
        assert response["error_code"] == 0
        assert response["responses"][0]["partitions"][0]["error_code"] == 0
        assert zk.get_json(f"/brokers/topics/{topic}")["adding_replicas"] == {"0": [joins]}
        cluster.kill_broker(controller)
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        wait_until(lambda: zk.controller()[0] not in (None, controller), WAIT_S,
                   "another controller", retry_on=ANY_ERROR)  # fmt: skip
        wait_until(lambda: zk.assignment(topic) == {0: [stays, joins]}, WAIT_S,
                   "the new controller to complete the reassignment", retry_on=ANY_ERROR)  # fmt: skip
        assert zk.get_json(f"/brokers/topics/{topic}")["removing_replicas"] == {}
        wait_until(lambda: _replicas_identical(cluster, topic, 0, [stays, joins]), WAIT_S,
                   "the moved replicas byte-identical", retry_on=ANY_ERROR)  # fmt: skip
    finally:
        cluster.start_broker(controller)
