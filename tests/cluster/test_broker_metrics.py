"""Replication metrics of a 3-broker kafpy.testing cluster (embedded metadata store, each
broker serving its own /metrics): the leader's UnderReplicatedPartitions is 1 while a
follower is stopped and back to 0 once it has caught up again, with an ISR expansion
counted."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from kafpy.common.topic_partition import TopicPartition
from kafpy.testing import KafkaCluster
from kafpy.testing.wait import wait_until

DEADLINE_S = 60.0


def scrape(cluster: KafkaCluster, broker_id: int) -> dict[str, float]:
    """The unlabelled samples of one broker's endpoint, by name."""
    endpoint = cluster.server(broker_id).metrics_endpoint
    assert endpoint is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.labels
    }


def test_under_replicated_partitions_while_a_follower_is_stopped() -> None:
    config = {"kafpy.metrics.listener": "http://127.0.0.1:0"}
    with KafkaCluster(3, config=config) as cluster:
        cluster.create_topic("urp", partitions=1, replication_factor=3)
        cluster.produce("urp", [b"before"], partition=0)
        cache = cluster.server(0).metadata_cache
        assert cache is not None
        info = cache.get_partition_info(TopicPartition("urp", 0))
        assert info is not None
        leader = info.leader
        follower = next(b for b in cluster.broker_ids if b != leader)
        before = scrape(cluster, leader)
        assert before["kafka_server_replicamanager_underreplicatedpartitions"] == 0

        cluster.stop_broker(follower)  # returns once the follower is out of the ISR
        during = scrape(cluster, leader)
        assert during["kafka_server_replicamanager_underreplicatedpartitions"] == 1
        assert during["kafka_server_replicamanager_leadercount"] >= 1

        cluster.start_broker(follower)
        after = wait_until(
            lambda: (
                (s := scrape(cluster, leader))
                and s["kafka_server_replicamanager_underreplicatedpartitions"] == 0
                and s
            ),
            DEADLINE_S,
            "the follower to rejoin the ISR",
            interval_s=0.05,
        )
        expands = "kafka_server_replicamanager_isrexpands_total"
        assert after[expands] - before[expands] >= 1
