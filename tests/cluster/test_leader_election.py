"""ElectLeaders on a real ZooKeeper cluster: `kafpy leader-election --bootstrap-server` with
Kafka 2.8's lines, preferred elections after a leader moved, an unclean election of an
out-of-sync replica when the whole ISR is down, and the Kafka clients' elect_leaders."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType as CkElectionType
from confluent_kafka import KafkaError as CkKafkaError
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient as CkAdminClient

from kafpy.client.admin_client import ConfigResource, NewTopic
from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, Zk, admin, live_bootstrap
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(240)]
WAIT_S = 30.0
FAILOVER_S = int(CLUSTER_TEST_DEFAULTS["zookeeper.session.timeout.ms"]) / 1000 + 10.0
NOT_CONTROLLER, ELECTION_NOT_NEEDED = 41, 84


# no automatic rebalance: the elections here are the ones the tests ask for
OVERRIDES = {"auto.leader.rebalance.enable": "false"}


def leader_election(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", "leader-election",
         "--bootstrap-server", live_bootstrap(cluster), *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def create(cluster: LocalCluster, zk: Zk, topic: str, assignment: dict[int, list[int]]) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment=assignment)]))
    wait_until(
        lambda: all(
            (s := zk.partition_state(topic, p)) is not None
            and s["leader"] == replicas[0]
            and sorted(s["isr"]) == sorted(replicas)
            for p, replicas in assignment.items()
        ),
        WAIT_S,
        f"{topic} online with full ISRs",
        retry_on=ANY_ERROR,
    )


def leader(zk: Zk, topic: str, partition: int) -> int:
    state = zk.partition_state(topic, partition)
    assert state is not None
    return int(state["leader"])


def test_preferred_election_after_a_leader_moved(
    cluster: LocalCluster, zk: Zk, tmp_path: Path
) -> None:
    controller, _ = wait_until(lambda: zk.controller()[0] is not None and zk.controller(),
                               WAIT_S, "a controller", retry_on=ANY_ERROR)  # fmt: skip
    moved, other = [b for b in cluster.brokers if b != controller]
    assignment = {0: [moved, other, controller], 1: [other, moved, controller]}
    create(cluster, zk, "pref", assignment)

    cluster.stop_broker(moved)  # controlled shutdown: pref-0 moves to `other`
    assert leader(zk, "pref", 0) == other
    cluster.start_broker(moved)
    wait_until(lambda: moved in (zk.partition_state("pref", 0) or {}).get("isr", []),
               WAIT_S, f"broker {moved} back in the ISR of pref-0", retry_on=ANY_ERROR)  # fmt: skip
    assert leader(zk, "pref", 0) == other

    r = leader_election(cluster, "--election-type", "preferred", "--topic", "pref",
                        "--partition", "0")  # fmt: skip
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == "Successfully completed leader election (PREFERRED) for partitions pref-0\n"
    assert leader(zk, "pref", 0) == moved

    partitions = tmp_path / "partitions.json"
    partitions.write_text(json.dumps({"partitions": [{"topic": "pref", "partition": 1},
                                                     {"topic": "pref", "partition": 0}]}))  # fmt: skip
    r = leader_election(cluster, "--election-type", "PREFERRED",
                        "--path-to-json-file", str(partitions))  # fmt: skip
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == "Valid replica already elected for partitions pref-1, pref-0\n"

    # every partition is led by its preferred replica: nothing is elected, nothing printed
    r = leader_election(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")

    r = leader_election(cluster, "--election-type", "preferred", "--topic", "pref",
                        "--partition", "9")  # fmt: skip
    assert r.returncode == 1
    assert r.stdout == (
        "Error completing leader election (PREFERRED) for partition: pref-9: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "The partition does not exist.\n"
    )
    assert r.stderr == "1 replica(s) could not be elected\n"


def test_unclean_election_of_an_out_of_sync_replica_when_the_isr_is_down(
    cluster: LocalCluster, zk: Zk
) -> None:
    controller, _ = wait_until(lambda: zk.controller()[0] is not None and zk.controller(),
                               WAIT_S, "a controller", retry_on=ANY_ERROR)  # fmt: skip
    in_sync, out_of_sync = [b for b in cluster.brokers if b != controller]
    create(cluster, zk, "dirty", {0: [in_sync, out_of_sync]})

    r = leader_election(cluster, "--election-type", "unclean", "--topic", "dirty",
                        "--partition", "0")  # fmt: skip
    assert (r.returncode, r.stdout) == (0, "Valid replica already elected for partitions dirty-0\n")

    cluster.stop_broker(out_of_sync)  # leaves the ISR
    cluster.stop_broker(in_sync)  # the last in-sync replica: dirty-0 goes offline
    wait_until(
        lambda: leader(zk, "dirty", 0) == -1, FAILOVER_S, "dirty-0 offline", retry_on=ANY_ERROR
    )
    cluster.start_broker(out_of_sync)
    # unclean.leader.election.enable is false: the returning replica does not lead by itself
    state = zk.partition_state("dirty", 0)
    assert state is not None and (state["leader"], state["isr"]) == (-1, [in_sync])

    r = leader_election(cluster, "--election-type", "unclean", "--topic", "dirty",
                        "--partition", "0")  # fmt: skip
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == "Successfully completed leader election (UNCLEAN) for partitions dirty-0\n"
    state = zk.partition_state("dirty", 0)
    assert state is not None and (state["leader"], state["isr"]) == (out_of_sync, [out_of_sync])

    # its preferred replica is down: a preferred election cannot happen
    r = leader_election(cluster, "--election-type", "preferred", "--topic", "dirty",
                        "--partition", "0")  # fmt: skip
    assert r.returncode == 1 and r.stderr == "1 replica(s) could not be elected\n"
    assert r.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: dirty-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect "
        "leader for partition dirty-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy"
    )
    cluster.start_broker(in_sync)


def test_kafka_clients_elect_leaders_and_only_the_controller_answers(
    cluster: LocalCluster, zk: Zk
) -> None:
    controller, _ = wait_until(lambda: zk.controller()[0] is not None and zk.controller(),
                               WAIT_S, "a controller", retry_on=ANY_ERROR)  # fmt: skip
    others = [b for b in cluster.brokers if b != controller]
    create(cluster, zk, "clients", {0: [others[0], others[1], controller]})

    ck = CkAdminClient({"bootstrap.servers": live_bootstrap(cluster)})
    results = ck.elect_leaders(CkElectionType.PREFERRED, [CkTopicPartition("clients", 0)]).result(
        30
    )
    del ck
    [(tp, error)] = results.items()
    assert (tp.topic, tp.partition) == ("clients", 0)
    assert error is not None and error.code() == CkKafkaError.ELECTION_NOT_NEEDED

    async def raw(broker_id: int, version: int) -> dict[str, Any]:
        b = cluster.brokers[broker_id]
        conn = BrokerConnection(b.host, b.port, request_timeout_ms=30000)
        await conn.connect()
        try:
            body = {"election_type": 0, "timeout_ms": 10000,
                    "topic_partitions": [{"topic": "clients", "partitions": [0]}]}  # fmt: skip
            return await conn.send(ApiKey.ELECT_LEADERS, body, version)
        finally:
            await conn.close()

    for version in (0, 1, 2):
        answer = asyncio.run(raw(controller, version))
        [result] = answer["replica_election_results"]
        assert result["partition_result"][0]["error_code"] == ELECTION_NOT_NEEDED, (version, answer)
        elsewhere = asyncio.run(raw(others[0], version))
        [result] = elsewhere["replica_election_results"]
        assert result["partition_result"][0]["error_code"] == NOT_CONTROLLER, (version, elsewhere)


def test_enabling_unclean_election_on_a_topic_elects_its_offline_partition(
    cluster: LocalCluster, zk: Zk
) -> None:
    """As Kafka 2.8: the controller acts on the config change at once, not at the next
    broker change."""
    controller, _ = wait_until(lambda: zk.controller()[0] is not None and zk.controller(),
                               WAIT_S, "a controller", retry_on=ANY_ERROR)  # fmt: skip
    in_sync, out_of_sync = [b for b in cluster.brokers if b != controller]
    create(cluster, zk, "configured", {0: [in_sync, out_of_sync]})
    cluster.stop_broker(out_of_sync)
    cluster.stop_broker(in_sync)
    wait_until(
        lambda: leader(zk, "configured", 0) == -1,
        FAILOVER_S,
        "configured-0 offline",
        retry_on=ANY_ERROR,
    )
    cluster.start_broker(out_of_sync)
    state = zk.partition_state("configured", 0)
    assert state is not None and (state["leader"], state["isr"]) == (-1, [in_sync])

    admin(
        cluster,
        lambda a: a.alter_configs(
            ConfigResource.topic("configured"), {"unclean.leader.election.enable": "true"}
        ),
    )
    wait_until(lambda: leader(zk, "configured", 0) == out_of_sync, WAIT_S,
               "the out-of-sync replica to lead configured-0", retry_on=ANY_ERROR)  # fmt: skip
    state = zk.partition_state("configured", 0)
    assert state is not None and state["isr"] == [out_of_sync]
    cluster.start_broker(in_sync)
