"""Tests of MetadataCache: UpdateMetadata in both shapes, topic metadata, deletions."""

from __future__ import annotations

from kafpy.common.topic_partition import TopicPartition
from kafpy.server.metadata_cache import MetadataCache
from tests.unit.server.fixtures import partition_state, update_metadata


def test_update_and_topic_metadata() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(update_metadata(
        [partition_state("t", 1, 1, replicas=[1, 0], isr=[1]), partition_state("t", 0, 0, replicas=[0, 1])],
        [0, 1], controller_id=1,
    ))  # fmt: skip
    assert cache.controller_id == 1
    assert [(b, ep.port) for b, ep, _ in cache.alive_endpoints("PLAINTEXT")] == [
        (0, 9092),
        (1, 9093),
    ]
    assert cache.alive_endpoints("SSL") == []
    [topic] = cache.get_topic_metadata(["t", "unknown"], "PLAINTEXT")
    assert topic["name"] == "t" and topic["error_code"] == 0 and not topic["is_internal"]
    assert topic["partitions"] == [
        {"error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": 0,
         "replica_nodes": [0, 1], "isr_nodes": [0, 1], "offline_replicas": []},
        {"error_code": 0, "partition_index": 1, "leader_id": 1, "leader_epoch": 0,
         "replica_nodes": [1, 0], "isr_nodes": [1], "offline_replicas": []},
    ]  # fmt: skip
    assert cache.contains_topic("t") and cache.get_all_topics() == ["t"]


def test_dead_leader_is_leader_not_available() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(
        update_metadata([partition_state("t", 0, 2, replicas=[2, 0], offline=[2])], [0])
    )
    [p] = cache.get_topic_metadata(["t"], "PLAINTEXT")[0]["partitions"]
    assert (p["error_code"], p["leader_id"], p["offline_replicas"]) == (5, -1, [2])
    # v0 filters replicas without an endpoint and reports REPLICA_NOT_AVAILABLE when the leader lives
    cache.update_metadata(update_metadata([partition_state("t", 0, 0, replicas=[0, 2])], [0]))
    [p] = cache.get_topic_metadata(["t"], "PLAINTEXT", error_unavailable_endpoints=True)[0][
        "partitions"
    ]
    assert (p["error_code"], p["replica_nodes"]) == (9, [0])


def test_v5_topic_states_and_v0_brokers() -> None:
    cache = MetadataCache(0)
    body = {
        "controller_id": -1,
        "controller_epoch": 1,
        "topic_states": [{"topic_name": "t", "partition_states": [
            {k: v for k, v in partition_state("t", 0, 0).items() if k != "topic_name"}]}],
        "live_brokers": [{"id": 0, "v0_host": "h", "v0_port": 1}],
    }  # fmt: skip
    cache.update_metadata(body, 5)
    assert cache.controller_id is None
    assert cache.get_partition_info(TopicPartition("t", 0)) is not None
    assert cache.alive_endpoints("PLAINTEXT")[0][1].host == "h"


def test_leader_during_delete_removes_partitions() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(update_metadata([partition_state("t", 0, 0), partition_state("t", 1, 0)]))
    deleted = cache.update_metadata(update_metadata([partition_state("t", 0, -2)]))
    assert deleted == [TopicPartition("t", 0)] and cache.contains_topic("t")
    cache.update_metadata(update_metadata([partition_state("t", 1, -2)]))
    assert not cache.contains_topic("t")
    assert cache.get_topic_metadata(["t"], "PLAINTEXT") == []


def test_partition_states_with_illegal_names_are_ignored() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(
        update_metadata([partition_state("", -5, 0), partition_state("t", -1, 0),
                         partition_state("t", 0, 0)])
    )  # fmt: skip
    assert cache.get_all_topics() == ["t"]
    assert list(cache.partitions_for("t")) == [0]
