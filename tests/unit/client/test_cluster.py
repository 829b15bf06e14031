"""Cluster: the metadata view built from Metadata response bodies."""

from __future__ import annotations

from typing import Any

from kafpy.client.cluster import Cluster, Node
from kafpy.common.topic_partition import TopicPartition


def topic(name: str, leaders: dict[int, int], error_code: int = 0) -> dict[str, Any]:
    return {
        "error_code": error_code,
        "name": name,
        "is_internal": name.startswith("__"),
        "partitions": [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": leader,
                "leader_epoch": 3,
                "replica_nodes": [leader, 9],
                "isr_nodes": [leader],
                "offline_replicas": [9],
            }
            for p, leader in leaders.items()
        ],
    }


def response(*topics: dict[str, Any], controller: int = 1) -> dict[str, Any]:
    return {
        "brokers": [
            {"node_id": 0, "host": "h0", "port": 9092, "rack": None},
            {"node_id": 1, "host": "h1", "port": 9093, "rack": "r1"},
        ],
        "cluster_id": "abc",
        "controller_id": controller,
        "topics": list(topics),
    }


def test_update_reads_brokers_controller_and_partitions() -> None:
    cluster = Cluster()
    cluster.update(response(topic("a", {0: 0, 1: 1}), topic("__consumer_offsets", {0: 1})), None)
    assert cluster.brokers[1] == Node(1, "h1", 9093, "r1")
    assert cluster.controller == Node(1, "h1", 9093, "r1")
    assert cluster.cluster_id == "abc"
    assert cluster.partitions_for("a") == [0, 1]
    assert cluster.leader_for(TopicPartition("a", 1)) == 1
    p = cluster.partition(TopicPartition("a", 0))
    assert p is not None and p.replicas == (0, 9) and p.isr == (0,)
    assert p.offline_replicas == (9,) and p.leader_epoch == 3
    assert cluster.topics["__consumer_offsets"].is_internal


def test_partial_refresh_merges_and_full_refresh_replaces() -> None:
    cluster = Cluster()
    cluster.update(response(topic("a", {0: 0}), topic("b", {0: 0})), None)
    cluster.update(response(topic("a", {0: 1})), ["a"])
    assert cluster.leader_for(TopicPartition("a", 0)) == 1
    assert cluster.partitions_for("b") == [0]  # untouched by a refresh of "a"
    cluster.update(response(topic("b", {0: 0}, error_code=3)), ["b"])
    assert cluster.topic("b") is None  # UNKNOWN_TOPIC_OR_PARTITION forgets it
    cluster.update(response(topic("c", {0: 0})), None)
    assert sorted(cluster.topics) == ["c"]


def test_no_leader_and_unknown_partition() -> None:
    cluster = Cluster()
    cluster.update(response(topic("a", {0: -1}), topic("new", {}, error_code=5)), None)
    assert cluster.leader_for(TopicPartition("a", 0)) is None
    assert cluster.leader_for(TopicPartition("a", 7)) is None
    assert cluster.leader_for(TopicPartition("zzz", 0)) is None
    assert cluster.topics["new"].error_code == 5 and cluster.partitions_for("new") == []
    assert cluster.partitions_for("zzz") is None
    cluster.update(response(controller=-1), [])
    assert cluster.controller is None
