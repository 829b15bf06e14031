"""`kafpy cluster` without starting anything: its errors, status lines and cluster file.

Starting and stopping real clusters with the command is in tests/cluster/test_cluster_command.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafpy.cli.cluster import format_status
from kafpy.cli.main import main
from kafpy.common.properties import load_properties
from kafpy.tools.local_cluster import (
    BrokerStatus,
    ClusterStatus,
    LocalCluster,
    LocalClusterError,
)
from kafpy.tools.processes import process_start_time


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["cluster", *args])
    return result.exit_code, result.stdout, result.stderr


def test_listed_by_kafpy() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for sub in ("up", "down", "status", "restart"):
        assert sub in out


@pytest.mark.parametrize("sub", ["down", "status"])
def test_no_cluster_in_the_directory(sub: str, tmp_path: Path) -> None:
    code, out, err = run(sub, "--dir", str(tmp_path))
    assert code == 1
    assert out == ""
    assert err == (
        f"No local cluster in {tmp_path}: cluster.json not found (start one with "
        "`kafpy cluster up`, or pass its --dir).\n"
    )


def test_damaged_cluster_file(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text('{"version": 1, "brokers": [{}]}')
    code, _, err = run("status", "--dir", str(tmp_path))
    assert code == 1
    assert err.startswith(f"{tmp_path / 'cluster.json'} is damaged")
    assert err.count("\n") == 1


def test_cluster_file_of_another_version(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text('{"version": 7}')
    with pytest.raises(LocalClusterError, match="not a cluster file of version 1"):
        LocalCluster.load(tmp_path)


def test_bad_override_is_refused_before_anything_starts(tmp_path: Path) -> None:
    code, out, err = run("up", "--dir", str(tmp_path / "c"), "--override", "no-equals-sign")
    assert code == 1
    assert out == ""
    assert err == "--override 'no-equals-sign' is not of the form key=value.\n"
    assert not (tmp_path / "c").exists()


def test_up_refuses_a_directory_whose_cluster_runs(tmp_path: Path) -> None:
    # a cluster file naming this very test process as broker 0: it is running
    cluster = LocalCluster(tmp_path, 1, zookeeper_connect="127.0.0.1:1")
    cluster.brokers[0].pid = os.getpid()
    cluster.brokers[0].start_time = process_start_time(os.getpid())
    cluster.save()

    code, out, err = run("up", "--brokers", "1", "--dir", str(tmp_path))

    assert code == 1
    assert out == ""
    assert err == (
        f"A cluster is already running in {tmp_path} (broker 0 (pid {os.getpid()})); stop it "
        f"with `kafpy cluster down --dir {tmp_path}` or choose another --dir.\n"
    )


def test_up_refuses_a_stopped_cluster_of_another_shape(tmp_path: Path) -> None:
    LocalCluster(tmp_path, 2, zookeeper_connect="127.0.0.1:1").save()

    code, _, err = run("up", "--brokers", "3", "--dir", str(tmp_path))
    assert code == 1
    assert "holds a stopped cluster of 2 broker(s), not 3; start it with --brokers 2" in err

    code, _, err = run("up", "--brokers", "2", "--dir", str(tmp_path), "--zookeeper", "zk:2181")
    assert code == 1
    assert "holds a stopped cluster on ZooKeeper 127.0.0.1:1, not zk:2181" in err


def test_down_with_nothing_running(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, 2, zookeeper_connect="127.0.0.1:1")
    cluster.brokers[0].pid = 2**22 + 1  # above Linux's default pid_max: never a process
    cluster.save()
    code, out, _ = run("down", "--dir", str(tmp_path))
    assert code == 0
    assert out == f"No process of the cluster in {tmp_path} is running.\n"


def test_cluster_file_round_trip(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "c", 3, overrides={"delete.topic.enable": "false"})
    cluster.brokers[1].pid, cluster.brokers[1].start_time = 1234, 99
    # broker 1 has started once: it bound a port and keeps it
    cluster.brokers[1].port, cluster.brokers[1].ports = 40123, {"PLAINTEXT": 40123}
    cluster.zookeeper.pid, cluster.zookeeper.jvm_pid = 55, 56
    cluster.save()

    loaded = LocalCluster.load(tmp_path / "c")

    assert loaded.to_json() == cluster.to_json()
    assert json.loads((tmp_path / "c" / "cluster.json").read_text())["version"] == 1
    assert loaded.bootstrap_servers == ",".join(
        f"127.0.0.1:{cluster.brokers[i].port}" for i in range(3)
    )
    assert loaded.zookeeper.managed and loaded.zookeeper.dir == tmp_path / "c" / "zookeeper"
    assert loaded.brokers[1].ports == {"PLAINTEXT": 40123}
    # the others bind a free port at their first start (port 0 until then)
    assert [b.port for b in loaded.brokers.values()] == [0, 40123, 0]
    assert loaded.zookeeper.port


def test_generated_server_properties(tmp_path: Path) -> None:
    cluster = LocalCluster(
        tmp_path,
        2,
        zookeeper_connect="127.0.0.1:2181/dev",
        overrides={"num.partitions": "3", "offsets.topic.replication.factor": "1"},
    )
    broker = cluster.brokers[1]
    cluster.write_properties(broker)

    assert load_properties(broker.properties_path) == {
        "broker.id": "1",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker.port}",
        "log.dirs": str(tmp_path / "broker-1" / "data"),
        "zookeeper.connect": "127.0.0.1:2181/dev",
        "offsets.topic.replication.factor": "1",
        "num.partitions": "3",
    }


def test_at_least_one_broker(tmp_path: Path) -> None:
    with pytest.raises(LocalClusterError, match="at least one broker, not 0"):
        LocalCluster(tmp_path, 0)


def test_status_lines() -> None:
    state = ClusterStatus(
        zookeeper_connect="127.0.0.1:2181",
        zookeeper_managed=True,
        zookeeper_alive=True,
        zookeeper_error=None,
        brokers=[
            BrokerStatus(0, "127.0.0.1:9092", 100, True, True),
            BrokerStatus(1, "127.0.0.1:9093", 101, True, False),
            BrokerStatus(2, "127.0.0.1:9094", None, False, False),
        ],
        controller_id=0,
        controller_epoch=4,
    )
    assert format_status(state) == [
        "ZooKeeper 127.0.0.1:2181 (managed): running",
        "broker 0 127.0.0.1:9092 (pid 100): running, registered, controller",
        "broker 1 127.0.0.1:9093 (pid 101): running, not registered",
        "broker 2 127.0.0.1:9094 (no pid): not running, not registered",
        "controller: broker 0 (epoch 4)",
    ]


def test_status_lines_without_zookeeper() -> None:
    state = ClusterStatus(
        zookeeper_connect="zk:2181",
        zookeeper_managed=False,
        zookeeper_alive=False,
        zookeeper_error="Cannot use ZooKeeper at zk:2181: no route",
        brokers=[BrokerStatus(0, "127.0.0.1:9092", 100, False, None)],
        controller_id=None,
        controller_epoch=None,
    )
    assert format_status(state) == [
        "ZooKeeper zk:2181 (external): unreachable (Cannot use ZooKeeper at zk:2181: no route)",
        "broker 0 127.0.0.1:9092 (pid 100): not running",
    ]
