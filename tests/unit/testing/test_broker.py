"""Tests of kafpy.testing.broker: in-process brokers and clusters start, serve, lose and
regain brokers, and leave no thread, port or file behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import kafpy.testing.broker as testing_broker
from kafpy.client.admin_client import AdminClient, ConfigResource
from kafpy.common.topic_partition import TopicPartition
from kafpy.server.broker_launcher import BrokerLauncher
from kafpy.testing import KafkaBroker, KafkaCluster
from kafpy.testing.broker import Mode, running_clusters
from kafpy.testing.wait import wait_until
from tests.fixtures.ports import hold_port


def _accepts(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def _threads() -> set[threading.Thread]:
    return set(threading.enumerate())


def test_broker_serves_and_leaves_nothing_behind() -> None:
    before = _threads()
    with KafkaBroker() as broker:
        address = broker.bootstrap_servers
        data_dir = broker.data_dir
        assert data_dir is not None and data_dir.is_dir()
        assert _accepts(address)
        assert broker in running_clusters()
        broker.create_topic("orders", partitions=2)
        broker.produce("orders", [b"a", "b"], partition=1)
        broker.produce("orders", records=[(b"k", b"c")], partition=0)
        got = broker.consume("orders", 3)
        assert sorted((r.partition, r.value) for r in got) == [(0, b"c"), (1, b"a"), (1, b"b")]
    assert _threads() == before
    assert not data_dir.exists()
    assert not _accepts(address)
    assert broker not in running_clusters()


def test_consume_times_out_with_a_sentence() -> None:
    with KafkaBroker() as broker:
        broker.create_topic("few")
        broker.produce("few", [b"x"])
        with pytest.raises(TimeoutError, match=r"Consumed 1 of 2 records of topic 'few'"):
            broker.consume("few", 2, timeout=0.5)


def test_async_context_manager_and_a_given_data_dir_is_kept(tmp_path: Path) -> None:
    async def scenario() -> str:
        async with KafkaBroker(data_dir=tmp_path / "kept") as broker:
            await asyncio.to_thread(broker.create_topic, "t")
            return broker.bootstrap_servers

    address = asyncio.run(scenario())
    assert not _accepts(address)
    assert (tmp_path / "kept" / "broker-0" / "logs" / "t-0").is_dir()


def test_cluster_survives_a_broker_stop_and_restart() -> None:
    before = _threads()
    with KafkaCluster(3) as cluster:
        assert cluster.broker_ids == [0, 1, 2]
        cluster.create_topic("t", partitions=1, replication_factor=3)
        cluster.produce("t", [b"1"])
        leader = cluster.server(0).metadata_cache
        assert leader is not None
        info = leader.get_partition_info(TopicPartition("t", 0))
        assert info is not None
        old_leader = info.leader
        old_address = cluster._node(old_leader).address
        cluster.faults.stop_broker(old_leader)
        assert not _accepts(old_address)
        cluster.produce("t", [b"2"])  # to the new leader
        assert [r.value for r in cluster.consume("t", 2)] == [b"1", b"2"]
        cluster.faults.start_broker(old_leader)
        assert cluster._node(old_leader).address == old_address  # same port again
        cluster.faults.drop_connections()
        assert [r.value for r in cluster.consume("t", 2)] == [b"1", b"2"]
    assert _threads() == before


def test_bad_arguments_are_refused_with_sentences() -> None:
    with pytest.raises(ValueError, match="runs in this process only"):
        KafkaCluster(2, mode="subprocess")
    with pytest.raises(ValueError, match="Unknown broker mode 'docker'"):
        KafkaBroker(mode="docker")  # type: ignore[arg-type]
    with KafkaCluster(2) as cluster:
        with pytest.raises(ValueError, match=r"No broker 5 in this cluster: .* \[0, 1\]"):
            cluster.faults.stop_broker(5)
        with pytest.raises(RuntimeError, match="Broker 1 is already running"):
            cluster.faults.start_broker(1)


_FRESH = """
import json, os, sys
import kafpy.server.kafka_server
from kafpy.testing import KafkaBroker
loaded = sorted(m for m in sys.modules if m.startswith("kafpy.storage.cleaner."))

def parent(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
    except OSError:
        return None  # gone meanwhile

with KafkaBroker() as broker:
    children = [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == str(os.getpid())]
print(json.dumps({"loaded": loaded, "children": children}))
"""


def test_a_broker_loads_no_cleaner_code_and_starts_no_process_until_it_compacts() -> None:
    # a fresh interpreter: what importing and starting a broker costs a test process
    out = subprocess.run(
        [sys.executable, "-c", _FRESH], capture_output=True, text=True, check=True, timeout=120
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["loaded"] == ["kafpy.storage.cleaner.cleaner_config"]
    assert figures["children"] == []  # no multiprocessing resource tracker


def test_drop_connections_closes_client_connections_before_returning() -> None:
    with KafkaBroker() as broker:
        socket_server = broker.server(0).socket_server
        assert socket_server is not None
        host, _, port = broker.bootstrap_servers.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=5) as client:
            address = client.getsockname()

            def clients() -> list[tuple[str, int]]:
                return [c.client_address for c in socket_server.connections]

            wait_until(lambda: address in clients(), 10, "the client's connection")
            broker.faults.drop_connections()
            # gone when it returns (the broker's own connections may be back already)
            assert address not in clients()
            assert client.recv(1) == b""  # closed by the broker


@pytest.mark.parametrize("mode", ["inprocess", "subprocess"])
def test_a_restarted_broker_binds_its_old_port_once_it_is_released(mode: Mode) -> None:
    with KafkaBroker(mode=mode) as broker:
        port = broker.port
        assert port != 0
        broker.faults.stop_broker(0)
        holder = hold_port(port)
        # released while the start tries again (BIND_RETRY_S is 10 s)
        release = threading.Timer(1.0, holder.close)
        release.start()
        try:
            broker.faults.start_broker(0)
        finally:
            release.join()
            holder.close()
        assert broker.port == port
        assert _accepts(broker.bootstrap_servers)


@pytest.mark.parametrize("mode", ["inprocess", "subprocess"])
def test_a_restart_on_a_port_held_for_good_fails_naming_the_port(
    mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(testing_broker, "BIND_RETRY_S", 1.0)
    with KafkaBroker(mode=mode) as broker:
        port = broker.port
        broker.faults.stop_broker(0)
        with hold_port(port), pytest.raises(RuntimeError) as failed:
            broker.faults.start_broker(0)
    message = str(failed.value)
    assert f"Broker 0 could not bind its port {port} again within 1 s" in message
    if mode == "subprocess":  # the child's output
        assert f"cannot bind 127.0.0.1:{port}: address already in use" in message


def test_a_child_broker_refusing_its_config_fails_the_start_with_its_output() -> None:
    broker = KafkaBroker(mode="subprocess", config={"num.partitions": "zero"})
    with pytest.raises(RuntimeError) as failed:
        broker.start()
    message = str(failed.value)
    assert "kafpy server exited with status 1 while starting" in message
    assert "Invalid value zero for configuration num.partitions" in message
    assert broker not in running_clusters()


def test_a_child_broker_not_binding_in_time_is_stopped_and_fails_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", 2.0)
    monkeypatch.setattr(testing_broker, "STOP_TIMEOUT_S", 2.0)
    # a ZooKeeper nobody serves: the broker waits for it before it binds its listener
    with socket.socket() as unserved:
        unserved.bind(("127.0.0.1", 0))
        config = {
            "zookeeper.connect": f"127.0.0.1:{unserved.getsockname()[1]}",
            "zookeeper.connection.timeout.ms": "60000",
        }
        broker = KafkaBroker(mode="subprocess", config=config)
        with pytest.raises(TimeoutError) as failed:
            broker.start()
    assert "Broker 0's process did not bind its listener within 2 s" in str(failed.value)
    assert broker not in running_clusters()


class _FrozenOnceBound(BrokerLauncher):
    """A launcher whose child is stopped (SIGSTOP) as soon as it has bound its listener:
    a broker that accepts connections and never answers. The wait for readiness that
    follows is then cut to 1 s (the bind had the usual time)."""

    def start(self, *args: Any, **kwargs: Any) -> dict[str, int]:
        ports = super().start(*args, **kwargs)
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)
        testing_broker.START_TIMEOUT_S = 1.0  # the test's monkeypatch restores it
        return ports


def test_a_broker_that_never_answers_fails_the_start_and_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(testing_broker, "BrokerLauncher", _FrozenOnceBound)
    monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", testing_broker.START_TIMEOUT_S)
    monkeypatch.setattr(testing_broker, "STOP_TIMEOUT_S", 1.0)
    broker = KafkaBroker(mode="subprocess")
    with pytest.raises(TimeoutError) as failed:
        broker.start()
    assert str(failed.value) == (
        "kafpy brokers [0] did not all see each other and a controller within 1 s."
    )
    assert broker not in running_clusters()


def _follower(cluster: KafkaCluster, topic: str) -> tuple[int, int]:
    """(leader, a follower) of partition 0 of `topic`, as broker 0 knows them."""
    cache = cluster.server(0).metadata_cache
    assert cache is not None
    info = cache.get_partition_info(TopicPartition(topic, 0))
    assert info is not None
    return info.leader, next(r for r in info.replicas if r != info.leader)


async def _throttle_leaders(bootstrap: str, broker_ids: list[int]) -> None:
    """Leaders send throttled replicas' data at 1 byte/s: a new replica never catches up."""
    async with AdminClient.connect(bootstrap) as admin:
        for b in broker_ids:
            await admin.alter_configs(
                ConfigResource.broker(b), {"leader.replication.throttled.rate": "1"}
            )


def test_move_leader_times_out_naming_the_step_it_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with KafkaCluster(2) as cluster:
        cluster.create_topic("led", replication_factor=2)
        cluster.create_topic("slow", config={"leader.replication.throttled.replicas": "*"})
        # more than a fetch holds (replica.fetch.max.bytes), so the throttle bites
        cluster.produce("slow", [bytes(500_000)] * 6)
        asyncio.run(_throttle_leaders(cluster.bootstrap_servers, cluster.broker_ids))
        leader, follower = _follower(cluster, "led")
        slow = cluster.server(0).metadata_cache
        assert slow is not None
        info = slow.get_partition_info(TopicPartition("slow", 0))
        assert info is not None
        newcomer = 1 - info.leader
        usual = testing_broker.START_TIMEOUT_S
        monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", 1.0)
        with pytest.raises(TimeoutError, match="^The reassignment of slow-0 did not complete.$"):
            cluster.faults.move_leader("slow", 0, newcomer)
        # a replica that is down cannot be elected (the stop itself waits as usual: under
        # load the others may take over 1 s to notice it)
        monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", usual)
        cluster.faults.stop_broker(follower)
        monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", 1.0)
        with pytest.raises(
            TimeoutError, match=f"^Broker {follower} did not become the leader of led-0: "
        ):
            cluster.faults.move_leader("led", 0, follower)


def test_create_topic_times_out_naming_what_metadata_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the topic is created (no ACL guards the cluster) but Describe on it is denied: its
    # partitions never show a leader to the fixture's client
    config = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    with KafkaBroker(config=config) as broker:
        subprocess.run(
            [sys.executable, "-m", "kafpy", "acls", "--bootstrap-server", broker.bootstrap_servers,
             "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Describe",
             "--topic", "hidden"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", 1.0)
        with pytest.raises(TimeoutError) as failed:
            broker.create_topic("hidden")
        assert str(failed.value) == (
            "Topic 'hidden' has partitions without a leader after 1 s "
            "(Metadata: TOPIC_AUTHORIZATION_FAILED)."
        )


async def _never(*_: Any) -> bool:
    return False


def test_stop_broker_times_out_when_the_others_never_forget_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with KafkaCluster(2) as cluster:
        # the others' view is read through _has_forgotten; here it never changes
        monkeypatch.setattr(testing_broker, "_has_forgotten", _never)
        monkeypatch.setattr(testing_broker, "START_TIMEOUT_S", 0.5)
        with pytest.raises(TimeoutError) as failed:
            cluster.stop_broker(1)
        assert str(failed.value) == (
            "The other brokers did not notice broker 1 stopping within 0.5 s."
        )


async def _no_leader(address: str, tp: TopicPartition) -> int | None:
    return None


def test_move_leader_times_out_when_a_broker_never_names_the_new_leader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with KafkaCluster(2) as cluster:
        cluster.create_topic("t", replication_factor=2)
        _, follower = _follower(cluster, "t")
        # reassignment and election succeed; the brokers' Metadata is read through
        # _leader_known_to, which here never names one
        monkeypatch.setattr(testing_broker, "_leader_known_to", _no_leader)
        with pytest.raises(
            TimeoutError, match=f"^Broker 0 does not name {follower} as the leader of t-0$"
        ):
            cluster.move_leader("t", 0, follower)
