"""`kafpy cluster up|status|down|restart|rolling-restart` for real: a managed ZooKeeper and
two detached brokers."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zookeeper_server import free_port
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from kafpy.tools.processes import process_alive
from tests.cluster.support import metadata

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(150)]


def kafpy_cluster_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", "cluster", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_up_status_down(tmp_path: Path) -> None:
    directory = str(tmp_path / "dev")
    up = kafpy_cluster_command("up", "--brokers", "2", "--dir", directory)
    assert up.returncode == 0, up.stderr
    cluster = LocalCluster.load(directory)
    try:
        lines = up.stdout.splitlines()
        assert f"bootstrap.servers={cluster.bootstrap_servers}" in lines
        assert f"zookeeper.connect={cluster.zookeeper.connect}" in lines
        for b in cluster.brokers.values():
            assert (
                f"broker {b.broker_id} at {b.address} (pid {b.pid}, logs in {b.logs_dir})" in lines
            )
            assert f"broker.id={b.broker_id}" in b.properties_path.read_text().splitlines()

        # detached: everything still runs after the command exited, and serves
        assert cluster.zookeeper.alive and process_alive(
            cluster.zookeeper.jvm_pid, cluster.zookeeper.jvm_start_time
        )
        assert all(b.alive for b in cluster.brokers.values())
        assert sorted(b["node_id"] for b in metadata(cluster.brokers[1], [])["brokers"]) == [0, 1]

        status = kafpy_cluster_command("status", "--dir", directory)
        assert status.returncode == 0, status.stdout + status.stderr
        out = status.stdout.splitlines()
        assert out[0] == f"ZooKeeper {cluster.zookeeper.connect} (managed): running"
        controller_lines = [line for line in out if line.startswith("controller: broker ")]
        assert len(controller_lines) == 1
        controller_id = int(controller_lines[0].split()[2])
        for b in cluster.brokers.values():
            expected = f"broker {b.broker_id} {b.address} (pid {b.pid}): running, registered"
            assert (expected + ", controller" if b.broker_id == controller_id else expected) in out

        again = kafpy_cluster_command("up", "--brokers", "2", "--dir", directory)
        assert again.returncode == 1
        assert len(again.stderr.strip().splitlines()) == 1
        assert "already running" in again.stderr

        cluster.kill_broker(1)
        status = kafpy_cluster_command("status", "--dir", directory)
        assert status.returncode == 1
        assert (
            f"broker 1 {cluster.brokers[1].address} (pid {cluster.brokers[1].pid}): not running"
            in status.stdout
        )

        down = kafpy_cluster_command("down", "--dir", directory)
        assert down.returncode == 0, down.stderr
        assert down.stdout.splitlines() == [
            "broker 0 stopped",
            "ZooKeeper stopped",
            f"Cluster in {directory} stopped (its data stays there).",
        ]
        assert not any(b.alive for b in cluster.brokers.values())
        assert not cluster.zookeeper.alive
        assert not process_alive(cluster.zookeeper.jvm_pid, cluster.zookeeper.jvm_start_time)

        down_again = kafpy_cluster_command("down", "--dir", directory)
        assert down_again.returncode == 0
        assert "No process of the cluster" in down_again.stdout
    finally:
        cluster.stop(timeout_s=10)


def test_up_again_restarts_a_stopped_cluster_with_its_data(tmp_path: Path) -> None:
    directory = str(tmp_path / "dev")
    assert kafpy_cluster_command("up", "--brokers", "1", "--dir", directory).returncode == 0
    first = LocalCluster.load(directory)
    try:
        cluster_id = (first.brokers[0].data_dir / "meta.properties").read_text()
        assert kafpy_cluster_command("down", "--dir", directory).returncode == 0

        wrong_size = kafpy_cluster_command("up", "--brokers", "2", "--dir", directory)
        assert wrong_size.returncode == 1
        assert "holds a stopped cluster of 1 broker(s), not 2" in wrong_size.stderr

        up = kafpy_cluster_command("up", "--brokers", "1", "--dir", directory)
        assert up.returncode == 0, up.stderr
        second = LocalCluster.load(directory)
        assert second.brokers[0].address == first.brokers[0].address
        assert second.zookeeper.connect == first.zookeeper.connect
        assert second.brokers[0].pid != first.brokers[0].pid
        # the same ZooKeeper data, so the same cluster id the broker recorded
        assert (second.brokers[0].data_dir / "meta.properties").read_text() == cluster_id
        assert kafpy_cluster_command("down", "--dir", directory).returncode == 0
    finally:
        LocalCluster.load(directory).stop(timeout_s=10)


def test_up_with_an_unreachable_zookeeper_fails_in_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "dev"
    up = kafpy_cluster_command(
        "up", "--brokers", "1", "--dir", str(directory),
        "--zookeeper", f"127.0.0.1:{free_port()}", "--timeout", "2",
    )  # fmt: skip
    assert up.returncode == 1
    assert len(up.stderr.strip().splitlines()) == 1
    assert up.stderr.startswith("Cannot start the cluster: Cannot use ZooKeeper at 127.0.0.1:")
    assert not (directory / "cluster.json").exists()


def test_up_with_a_broker_that_cannot_start_stops_everything(tmp_path: Path) -> None:
    directory = tmp_path / "dev"
    up = kafpy_cluster_command(
        "up", "--brokers", "1", "--dir", str(directory), "--override", "num.partitions=zero"
    )
    assert up.returncode == 1
    (line,) = up.stderr.strip().splitlines()
    assert line.startswith("Cannot start the cluster: Broker 0 exited with code 1 while starting: ")
    assert "num.partitions" in line
    assert str(directory / "broker-0" / "logs" / "server.out") in line
    assert not (directory / "cluster.json").exists()
    (pid_line,) = [x for x in up.stdout.splitlines() if x.startswith("ZooKeeper serving on ")]
    zookeeper_pid = int(pid_line.rsplit("pid ", 1)[1].rstrip(")"))
    assert not process_alive(zookeeper_pid)


def test_restart_and_a_broker_restarted_by_hand(tmp_path: Path) -> None:
    directory = str(tmp_path / "dev")
    up = kafpy_cluster_command("up", "--brokers", "2", "--dir", directory)
    assert up.returncode == 0, up.stderr
    cluster = LocalCluster.load(directory)
    by_hand: subprocess.Popen[bytes] | None = None
    try:
        # broker 1 dies and its operator starts it again by hand, outside `kafpy cluster`
        b1 = cluster.brokers[1]
        old_pid = b1.pid
        cluster.kill_broker(1)
        cluster.wait_unregistered(1)
        with open(tmp_path / "by-hand.out", "ab") as out:
            by_hand = subprocess.Popen(
                [sys.executable, "-m", "kafpy", "server", str(b1.properties_path)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

        async def registered(zk: KafkaZkClient) -> list[int]:
            return await zk.get_all_broker_ids()

        def back() -> bool:
            assert by_hand.poll() is None, "broker 1 exited"
            return 1 in cluster.zk_call(registered)

        wait_until(back, 60, "broker 1 to come back", interval_s=0.2)

        status = kafpy_cluster_command("status", "--dir", directory)
        assert status.returncode == 0, status.stdout + status.stderr
        lines = status.stdout.splitlines()
        assert any(
            line.startswith(f"broker 1 {b1.address} (pid {by_hand.pid}): running, registered")
            for line in lines
        ), lines
        assert old_pid != by_hand.pid

        # `restart` stops the by-hand process and starts the broker as the cluster's own
        restart = kafpy_cluster_command("restart", "1", "--dir", directory)
        assert restart.returncode == 0, restart.stderr
        assert by_hand.wait(30) == 0  # stopped cleanly by SIGTERM
        restarted = LocalCluster.load(directory).brokers[1]
        assert restarted.pid not in (old_pid, by_hand.pid) and restarted.alive
        assert restart.stdout.splitlines() == [
            "broker 1 stopped",
            f"broker 1 registered at {b1.address} (pid {restarted.pid})",
        ]
        status = kafpy_cluster_command("status", "--dir", directory)
        assert status.returncode == 0, status.stdout + status.stderr
        assert sorted(b["node_id"] for b in metadata(cluster.brokers[0], [])["brokers"]) == [0, 1]

        missing = kafpy_cluster_command("restart", "7", "--dir", directory)
        assert missing.returncode == 1
        assert missing.stderr == (
            f"Cannot restart broker 7: The cluster in {Path(directory).absolute()} has no broker 7 "
            "(its brokers: 0, 1).\n"
        )
    finally:
        LocalCluster.load(directory).stop(timeout_s=10)
        if by_hand is not None and by_hand.poll() is None:
            by_hand.kill()
            by_hand.wait()


@pytest.mark.timeout(300)
def test_rolling_restart_keeps_every_acknowledged_record_and_refuses_with_a_broker_down(
    tmp_path: Path,
) -> None:
    directory = str(tmp_path / "dev")
    up = kafpy_cluster_command("up", "--brokers", "2", "--dir", directory)
    assert up.returncode == 0, up.stderr
    cluster = LocalCluster.load(directory)
    try:
        bootstrap = cluster.bootstrap_servers
        topics = subprocess.run(
            [sys.executable, "-m", "kafpy", "topics", "--bootstrap-server", bootstrap, "--create",
             "--topic", "rolled", "--partitions", "4", "--replication-factor", "2"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert topics.returncode == 0, topics.stderr
        controller = cluster.status().controller_id
        old_pids = {i: b.pid for i, b in cluster.brokers.items()}
        acked: list[bytes] = []
        errors: list[str] = []
        stop = threading.Event()

        def produce() -> None:
            producer = confluent_kafka.Producer({
                "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                "linger.ms": 5, "message.timeout.ms": 120000,
            })  # fmt: skip

            def delivered(err: Any, msg: Any) -> None:
                if err is not None:
                    errors.append(str(err))
                else:
                    acked.append(msg.value())

            n = 0
            while not stop.is_set():
                producer.produce("rolled", f"{n}".encode(), on_delivery=delivered)
                n += 1
                producer.poll(0.01)
            assert producer.flush(60) == 0

        sender = threading.Thread(target=produce)
        sender.start()
        try:
            rolled = kafpy_cluster_command("rolling-restart", "--dir", directory)
        finally:
            stop.set()
            sender.join(90)
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr
        out = rolled.stdout.splitlines()
        order = [int(line.split()[2]) for line in out if line.startswith("restarting broker ")]
        assert order[-1] == controller and sorted(order) == [0, 1]
        assert out[-1] == (
            f"Rolling restart complete: brokers {order[0]}, {order[1]} restarted, no "
            "under-replicated partition."
        )
        restarted = LocalCluster.load(directory)
        assert all(b.alive and b.pid != old_pids[i] for i, b in restarted.brokers.items())
        assert errors == [] and len(acked) > 0
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "check", "auto.offset.reset": "earliest",
        })  # fmt: skip
        # assigned, not subscribed: two brokers cannot hold the offsets topic's 3 replicas
        consumer.assign(
            [confluent_kafka.TopicPartition("rolled", p, confluent_kafka.OFFSET_BEGINNING)
             for p in range(4)]
        )  # fmt: skip
        seen: list[bytes] = []

        def all_seen() -> bool:
            seen.extend(m.value() for m in consumer.consume(500, 0.5) if not m.error())
            return len(seen) >= len(acked)

        try:
            wait_until(all_seen, 60, f"the {len(acked)} acknowledged records", interval_s=0,
                       context=lambda: f"{len(seen)} seen")  # fmt: skip
        finally:
            consumer.close()
        assert sorted(seen) == sorted(acked)  # none lost, none twice

        restarted.kill_broker(1)
        refused = kafpy_cluster_command("rolling-restart", "--dir", directory)
        assert refused.returncode == 1
        assert refused.stderr.startswith(
            "Rolling restart stopped: Broker(s) 1 not running: a rolling restart needs every "
            "broker up"
        )
    finally:
        LocalCluster.load(directory).stop(timeout_s=10)
