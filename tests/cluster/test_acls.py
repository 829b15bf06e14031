"""ACLs on a real ZooKeeper with two brokers: `kafpy acls --authorizer-properties
zookeeper.connect=...` writes Kafka 2.x's nodes and change notifications, and every broker
applies an added and then a removed ACL without a restart."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, admin, topic_metadata, zookeeper

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(170)]
TOPIC_AUTHORIZATION_FAILED = 29
WAIT_S = 30.0


@pytest.fixture(scope="module")
def cluster(kafpy_cluster: Any) -> LocalCluster:
    # no ACL on the cluster resource: the brokers' own requests stay allowed
    started: LocalCluster = kafpy_cluster(2, {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    })  # fmt: skip
    return started


def acls(cluster: LocalCluster, *args: str) -> str:
    connect = f"zookeeper.connect={cluster.zookeeper.connect}"
    res = subprocess.run(
        [sys.executable, "-m", "kafpy", "acls", "--authorizer-properties", connect, *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_acl_changes_reach_every_broker_without_restart(cluster: LocalCluster) -> None:
    admin(cluster, lambda a: a.create_topics([NewTopic("guarded", 2, 2)]))
    brokers = list(cluster.brokers.values())

    def errors() -> set[int]:
        return {topic_metadata(b, "guarded")["error_code"] for b in brokers}

    wait_until(
        lambda: errors() == {0}, WAIT_S, "every broker to serve the topic", retry_on=ANY_ERROR
    )
    acls(cluster, "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Describe",
         "--topic", "guarded")  # fmt: skip
    with zookeeper(cluster) as zk:
        assert zk.get_json("/kafka-acl/Topic/guarded") == {"version": 1, "acls": [{
            "principal": "User:ANONYMOUS", "permissionType": "Deny", "operation": "Describe",
            "host": "*"}]}  # fmt: skip
        changes = zk.children("/kafka-acl-changes")
        assert [zk.client.get(f"/kafka-acl-changes/{c}")[0] for c in changes] == [b"TOPIC:guarded"]
    wait_until(lambda: errors() == {TOPIC_AUTHORIZATION_FAILED}, WAIT_S,
               "every broker to refuse the topic", retry_on=ANY_ERROR)  # fmt: skip

    acls(cluster, "--remove", "--force", "--topic", "guarded")
    wait_until(
        lambda: errors() == {0}, WAIT_S, "every broker to serve the topic again", retry_on=ANY_ERROR
    )
