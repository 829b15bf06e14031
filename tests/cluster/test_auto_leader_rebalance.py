"""Automatic preferred leader election (auto.leader.rebalance.enable) across three brokers.

A broker stopped with a controlled shutdown hands its leaderships to the other replicas;
once it is back in the ISRs, the controller's periodic imbalance check (every
leader.imbalance.check.interval.seconds, here 1 s) must give every partition back to its
preferred replica (the first in its assignment) with nobody asking.
"""

from __future__ import annotations

import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, Zk, admin

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]
WAIT_S = 45.0
OVERRIDES = {
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "1",
    "leader.imbalance.per.broker.percentage": "10",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "500",
}
# each broker is the preferred replica of two partitions
ASSIGNMENT = {
    0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1],
    3: [0, 2, 1], 4: [1, 0, 2], 5: [2, 1, 0],
}  # fmt: skip


def _leaders(zk: Zk, topic: str) -> dict[int, int]:
    return {p: zk.partition_state(topic, p)["leader"] for p in ASSIGNMENT}


def _full_isrs(zk: Zk, topic: str) -> bool:
    return all(len(zk.partition_state(topic, p)["isr"]) == 3 for p in ASSIGNMENT)


def test_controller_moves_leaders_back_to_their_preferred_replicas(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "rebalanced"
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment=ASSIGNMENT)]))
    preferred = {p: replicas[0] for p, replicas in ASSIGNMENT.items()}
    wait_until(lambda: all(zk.partition_state(topic, p) for p in ASSIGNMENT) and _full_isrs(zk, topic),
               WAIT_S, "every partition online with a full ISR", retry_on=ANY_ERROR)  # fmt: skip
    assert _leaders(zk, topic) == preferred

    victim = 1
    epochs = {p: zk.partition_state(topic, p)["leader_epoch"] for p in ASSIGNMENT}
    cluster.stop_broker(victim)  # controlled shutdown: its two partitions get other leaders
    moved = _leaders(zk, topic)
    assert all(moved[p] != victim for p in ASSIGNMENT), moved
    cluster.start_broker(victim)

    # back in the ISRs as a follower first, then the imbalance check makes it leader again
    wait_until(lambda: _leaders(zk, topic) == preferred, WAIT_S,
               "the controller to give every partition back to its preferred replica", retry_on=ANY_ERROR)  # fmt: skip
    wait_until(lambda: _full_isrs(zk, topic), WAIT_S, "full ISRs", retry_on=ANY_ERROR)
    for p, replicas in ASSIGNMENT.items():
        if replicas[0] == victim:
            # two elections: away during the shutdown, back by the rebalance
            state = zk.partition_state(topic, p)
            assert state["leader_epoch"] >= epochs[p] + 2, (p, state)
