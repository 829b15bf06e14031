"""AlterIsr (KIP-497) and feature versioning (KIP-584) across three broker processes.

Real ZooKeeper, three `kafpy server` processes at inter.broker.protocol.version 2.8: a
follower stopped (SIGSTOP) drops out of the ISR and comes back, each change sent by the
leader to the controller as AlterIsr and written by the controller (its controller.log
says so, the leader epoch stays, the partition state's version moves); /feature is the
enabled node Kafka 2.8's controller writes, and `kafpy features` reads it.
"""

from __future__ import annotations

import json
import os
import signal

import confluent_kafka
import pytest
from click.testing import CliRunner

from kafpy.cli.main import main
from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, Zk, admin, live_bootstrap

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(170)]
LAG_MS = 3000
WAIT_S = 45.0
OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "500",
}


def _controller_log(cluster: LocalCluster, zk: Zk) -> str:
    controller_id, _ = zk.controller()
    assert controller_id is not None
    return (cluster.brokers[controller_id].logs_dir / "controller.log").read_text()


def test_a_stopped_follower_leaves_and_rejoins_the_isr_through_alter_isr(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "alter-isr"
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, 1, 3)]))
    state = wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None and len(s["isr"]) == 3 and s,
        WAIT_S, "the partition online with a full ISR", retry_on=ANY_ERROR,
    )  # fmt: skip
    leader, epoch = state["leader"], state["leader_epoch"]
    controller_id, _ = zk.controller()
    # the follower stopped must not be the controller, which answers the AlterIsr
    follower = next(b for b in cluster.brokers if b not in (leader, controller_id))
    version_before = zk.client.get(f"/brokers/topics/{topic}/partitions/0/state")[1].version
    pid = cluster.brokers[follower].pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": live_bootstrap(cluster), "acks": "1"}
        )
        for _ in range(10):
            producer.produce(topic, b"x", partition=0)
        assert producer.flush(30) == 0
        shrunk = wait_until(
            lambda: (s := zk.partition_state(topic, 0)) and follower not in s["isr"] and s,
            LAG_MS / 1000 + 15, "the leader to drop the stopped follower", retry_on=ANY_ERROR,
        )  # fmt: skip
    finally:
        os.kill(pid, signal.SIGCONT)
    # an ISR change of the leader's, not a new leadership: same leader, same epoch
    assert shrunk["leader"] == leader and shrunk["leader_epoch"] == epoch
    isr = ",".join(map(str, shrunk["isr"]))
    wait_until(
        lambda: f"ISR for partition {topic}-0 updated to [{isr}]" in _controller_log(cluster, zk),
        WAIT_S, "the controller's log of the AlterIsr write", retry_on=ANY_ERROR,
    )  # fmt: skip
    rejoined = wait_until(
        lambda: (s := zk.partition_state(topic, 0)) and follower in s["isr"] and s,
        WAIT_S, "the follower to rejoin the ISR", retry_on=ANY_ERROR,
    )  # fmt: skip
    assert rejoined["leader_epoch"] == epoch
    full = ",".join(map(str, rejoined["isr"]))
    assert f"ISR for partition {topic}-0 updated to [{full}]" in _controller_log(cluster, zk)
    version_after = zk.client.get(f"/brokers/topics/{topic}/partitions/0/state")[1].version
    assert version_after >= version_before + 2
    # the leader took each answer (Kafka's Partition log line)
    leader_log = (cluster.brokers[leader].logs_dir / "server.log").read_text()
    assert (
        f"ISR updated to {full} and version updated to [{version_after}] for {topic}-0"
        in leader_log
    )


def test_feature_znode_and_kafpy_features(cluster: LocalCluster, zk: Zk) -> None:
    # Kafka 2.8's controller at IBP >= 2.7: enabled, and no feature finalized
    assert zk.get_json("/feature") == {"features": {}, "status": 1, "version": 1}
    runner = CliRunner()
    bootstrap = live_bootstrap(cluster)
    described = runner.invoke(main, ["features", "--bootstrap-server", bootstrap, "--describe"])
    assert described.exit_code == 0, described.output
    assert described.output == ""  # Kafka 2.8 defines no feature: nothing to list
    for action in ("--upgrade-all", "--downgrade-all"):
        dry = runner.invoke(
            main, ["features", "--bootstrap-server", bootstrap, action, "--dry-run"]
        )
        assert (dry.exit_code, dry.output) == (0, ""), dry.output
    bad = runner.invoke(
        main, ["features", "--bootstrap-server", bootstrap, "--describe", "--dry-run"]
    )
    assert bad.exit_code == 1 and "--dry-run option only when" in bad.output
    assert json.loads(zk.client.get("/feature")[0]) == {"features": {}, "status": 1, "version": 1}
