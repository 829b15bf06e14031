"""Topic deletion that must wait: a replica's broker is down until it returns.

As TopicDeletionManager does it: the live replicas are deleted, the dead broker's replica
is ReplicaDeletionIneligible and so is the topic, which stays queued (its znodes and marker
stay, partitions cannot be added); its deletion completes once that broker is back.
"""

from __future__ import annotations

import time

import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.common.errors import KafkaError
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    ANY_ERROR,
    Zk,
    admin,
    deleted_log_dirs,
    expected_placement,
    live_log_partitions,
    topic_metadata,
    zookeeper,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]
WAIT_S = 30.0


def _partitions_online(zk: Zk, topic: str, assignment: dict[int, list[int]]) -> bool:
    return all(
        (state := zk.partition_state(topic, p)) is not None and state["leader"] == replicas[0]
        for p, replicas in assignment.items()
    )


def test_delete_while_a_replica_broker_is_down(cluster: LocalCluster) -> None:
    assignment = {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    admin(cluster, lambda a: a.create_topics([NewTopic("held", replica_assignment=assignment)]))
    with zookeeper(cluster) as zk:
        wait_until(
            lambda: _partitions_online(zk, "held", assignment),
            WAIT_S,
            "held online",
            retry_on=ANY_ERROR,
        )
        wait_until(
            lambda: live_log_partitions(cluster, "held") == expected_placement(assignment),
            WAIT_S,
            "the logs of held",
            retry_on=ANY_ERROR,
        )

        cluster.stop_broker(2)
        cluster.wait_unregistered(2)
        controller_id, _ = wait_until(
            lambda: zk.controller()[0] is not None and zk.controller(),
            WAIT_S,
            "a controller",
            retry_on=ANY_ERROR,
        )
        # the controller's own lines go to its controller.log, as Kafka's log4j.properties
        controller_log = cluster.brokers[controller_id].logs_dir / "controller.log"
        log_size = controller_log.stat().st_size

        # what kafka-topics.sh --zookeeper --delete writes
        zk.create_json("/admin/delete_topics/held", None)

        wait_until(
            lambda: (
                "marked ineligible for deletion" in controller_log.read_text()[log_size:]
                and "held" in controller_log.read_text()[log_size:]
            ),
            WAIT_S,
            "the controller to hold back the deletion of held",
            retry_on=ANY_ERROR,
        )
        # queued: the marker and the topic stay; the live replicas are deleted, the dead
        # broker's are not, and no broker serves the topic any more
        wait_until(
            lambda: (
                live_log_partitions(cluster, "held") == {2: {1, 2}}
                and sorted(deleted_log_dirs(cluster, "held")) == [0, 1]
            ),
            WAIT_S,
            "the live replicas of held to be deleted",
            retry_on=ANY_ERROR,
        )
        time.sleep(1.0)
        assert zk.exists("/admin/delete_topics/held")
        assert zk.assignment("held") == assignment
        assert live_log_partitions(cluster, "held") == {2: {1, 2}}
        for broker_id in (0, 1):
            assert topic_metadata(cluster.brokers[broker_id], "held")["error_code"] == 3

        # no new partitions for a topic queued for deletion
        with pytest.raises(KafkaError, match="deletion"):
            admin(cluster, lambda a: a.create_partitions({"held": 4}))
        assert zk.assignment("held") == assignment

        cluster.start_broker(2)

        wait_until(
            lambda: (
                not zk.exists("/brokers/topics/held") and not zk.exists("/admin/delete_topics/held")
            ),
            WAIT_S,
            "the deletion of held to complete",
            retry_on=ANY_ERROR,
        )
        wait_until(
            lambda: not live_log_partitions(cluster, "held"),
            WAIT_S,
            "the logs of held to go",
            retry_on=ANY_ERROR,
        )
        for broker in cluster.brokers.values():
            wait_until(
                lambda b=broker: topic_metadata(b, "held")["error_code"] == 3,
                WAIT_S,
                f"broker {broker.broker_id} to forget held",
                retry_on=ANY_ERROR,
            )
