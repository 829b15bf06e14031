"""Brokers dying without a word (SIGKILL): the controller moves, leaders move.

Failure is noticed when the dead broker's ZooKeeper session expires, so each wait allows
`zookeeper.session.timeout.ms` (6 s in these tests) plus a margin.
"""

from __future__ import annotations

import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    ANY_ERROR,
    Zk,
    admin,
    expected_placement,
    leaders_in_metadata,
    live_log_partitions,
)
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(150)]
WAIT_S = 30.0
SESSION_TIMEOUT_S = int(CLUSTER_TEST_DEFAULTS["zookeeper.session.timeout.ms"]) / 1000
FAILOVER_S = SESSION_TIMEOUT_S + 10.0


def _restart_dead_brokers(cluster: LocalCluster) -> None:
    for broker_id, broker in cluster.brokers.items():
        if not broker.alive:
            cluster.wait_unregistered(broker_id, FAILOVER_S)
            cluster.start_broker(broker_id)


def _online(zk: Zk, topic: str, assignment: dict[int, list[int]]) -> bool:
    return all(
        (state := zk.partition_state(topic, p)) is not None and state["leader"] in replicas
        for p, replicas in assignment.items()
    )


def test_controller_sigkill(cluster: LocalCluster, zk: Zk) -> None:
    old_id, old_epoch = wait_until(
        lambda: zk.controller()[0] is not None and zk.controller(),
        WAIT_S,
        "a controller",
        retry_on=ANY_ERROR,
    )
    assert old_epoch is not None

    cluster.kill_broker(old_id)

    new_id, new_epoch = wait_until(
        lambda: (c := zk.controller())[0] not in (None, old_id) and c,
        FAILOVER_S,
        "another broker to become controller",
        retry_on=ANY_ERROR,
    )
    assert new_epoch is not None and new_epoch > old_epoch
    live = [b for b in cluster.brokers if b != old_id]
    assert new_id in live

    # the new controller creates, grows and deletes topics
    assignment = {0: live[:], 1: live[::-1]}
    admin(
        cluster,
        lambda a: a.create_topics([NewTopic("after-failover", replica_assignment=assignment)]),
    )
    wait_until(
        lambda: _online(zk, "after-failover", assignment),
        WAIT_S,
        "after-failover online",
        retry_on=ANY_ERROR,
    )
    state = zk.partition_state("after-failover", 0)
    assert state is not None and state["controller_epoch"] == new_epoch
    admin(
        cluster,
        lambda a: a.create_partitions(
            {"after-failover": 3}, {"after-failover": [[live[1], live[0]]]}
        ),
    )
    assignment[2] = [live[1], live[0]]
    wait_until(
        lambda: _online(zk, "after-failover", assignment),
        WAIT_S,
        "after-failover grown",
        retry_on=ANY_ERROR,
    )
    wait_until(
        lambda: live_log_partitions(cluster, "after-failover") == expected_placement(assignment),
        WAIT_S,
        "the logs of after-failover",
        retry_on=ANY_ERROR,
    )
    admin(cluster, lambda a: a.delete_topics(["after-failover"]))
    wait_until(
        lambda: not zk.exists("/brokers/topics/after-failover"),
        WAIT_S,
        "after-failover deleted",
        retry_on=ANY_ERROR,
    )
    wait_until(
        lambda: not live_log_partitions(cluster, "after-failover"),
        WAIT_S,
        "its logs to go",
        retry_on=ANY_ERROR,
    )

    # the old controller returns as an ordinary broker
    _restart_dead_brokers(cluster)
    assert zk.controller() == (new_id, new_epoch)


def test_partition_leader_sigkill(cluster: LocalCluster, zk: Zk) -> None:
    _restart_dead_brokers(cluster)
    controller_id, _ = wait_until(
        lambda: zk.controller()[0] is not None and zk.controller(),
        WAIT_S,
        "a controller",
        retry_on=ANY_ERROR,
    )
    victim, survivor = [b for b in cluster.brokers if b != controller_id]
    assignment = {0: [victim, survivor], 1: [survivor, victim], 2: [controller_id, victim]}
    admin(cluster, lambda a: a.create_topics([NewTopic("led", replica_assignment=assignment)]))
    wait_until(
        lambda: all(
            (s := zk.partition_state("led", p)) is not None
            and s["leader"] == r[0]
            and sorted(s["isr"]) == sorted(r)
            for p, r in assignment.items()
        ),
        WAIT_S,
        "led online with full ISRs",
        retry_on=ANY_ERROR,
    )
    before = {p: zk.partition_state("led", p) for p in assignment}

    cluster.kill_broker(victim)

    controller = cluster.brokers[controller_id]
    wait_until(
        lambda: leaders_in_metadata(controller, "led")[0][0] == survivor,
        FAILOVER_S,
        f"broker {survivor} to lead led-0",
        retry_on=ANY_ERROR,
    )
    # the controller elects led-0's new leader first, then drops the dead replica from the
    # other ISRs (Kafka's onReplicasBecomeOffline): wait for both
    after = wait_until(
        lambda: (
            (a := {p: zk.partition_state("led", p) for p in assignment})
            and all(s is not None and victim not in s["isr"] for s in a.values())
            and a
        ),
        WAIT_S,
        f"broker {victim} out of every ISR of led",
        retry_on=ANY_ERROR,
    )
    # led-0: the leader moved to the other in-sync replica, with a new leader epoch
    assert after[0] is not None and before[0] is not None
    assert after[0]["leader"] == survivor and after[0]["isr"] == [survivor]
    assert after[0]["leader_epoch"] == before[0]["leader_epoch"] + 1
    # led-1 and led-2 keep their leaders; the dead broker leaves their ISRs
    assert after[1] is not None and after[1]["leader"] == survivor and after[1]["isr"] == [survivor]
    assert (
        after[2] is not None
        and after[2]["leader"] == controller_id
        and after[2]["isr"] == [controller_id]
    )
    for broker_id in (controller_id, survivor):
        wait_until(
            lambda b=cluster.brokers[broker_id]: (
                {p: lead for p, (lead, _, _) in leaders_in_metadata(b, "led").items()}
                == {0: survivor, 1: survivor, 2: controller_id}
            ),
            WAIT_S,
            f"broker {broker_id}'s metadata of led",
            retry_on=ANY_ERROR,
        )

    _restart_dead_brokers(cluster)
