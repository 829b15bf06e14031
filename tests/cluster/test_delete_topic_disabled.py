"""`delete.topic.enable=false`: deletion markers are removed and the topics stay."""

from __future__ import annotations

import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.common.errors import TopicDeletionDisabledError
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import (
    ANY_ERROR,
    admin,
    leaders_in_metadata,
    live_log_partitions,
    zookeeper,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(90)]
WAIT_S = 30.0


BROKERS = 2
OVERRIDES = {"delete.topic.enable": "false"}


def test_deletion_marker_removed_and_topic_kept(cluster: LocalCluster) -> None:
    assignment = {0: [0, 1], 1: [1, 0]}
    admin(cluster, lambda a: a.create_topics([NewTopic("kept", replica_assignment=assignment)]))
    with zookeeper(cluster) as zk:
        wait_until(
            lambda: all(zk.partition_state("kept", p) is not None for p in assignment),
            WAIT_S,
            "kept online",
            retry_on=ANY_ERROR,
        )

        # what kafka-topics.sh --zookeeper --delete writes
        zk.create_json("/admin/delete_topics/kept", None)

        wait_until(
            lambda: not zk.exists("/admin/delete_topics/kept"),
            WAIT_S,
            "the marker to be removed",
            retry_on=ANY_ERROR,
        )
        assert zk.assignment("kept") == assignment
        assert all(zk.partition_state("kept", p) is not None for p in assignment)

    for broker in cluster.brokers.values():
        assert {p: lead for p, (lead, _, _) in leaders_in_metadata(broker, "kept").items()} == {
            0: 0,
            1: 1,
        }
    assert live_log_partitions(cluster, "kept") == {0: {0, 1}, 1: {0, 1}}

    with pytest.raises(TopicDeletionDisabledError):
        admin(cluster, lambda a: a.delete_topics(["kept"]))
