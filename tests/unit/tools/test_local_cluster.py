"""Tests of LocalCluster's generated broker properties: per-broker overrides (a broker's
`broker.rack`) over the cluster-wide ones, kept in cluster.json."""

from __future__ import annotations

from pathlib import Path

from kafpy.common.properties import load_properties
from kafpy.tools.local_cluster import LocalCluster


def test_broker_overrides_apply_to_their_broker_only_and_survive_cluster_json(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster(
        tmp_path, 2, zookeeper_connect="127.0.0.1:2181/c",
        overrides={"broker.rack": "everywhere", "num.partitions": "3"},
        broker_overrides={1: {"broker.rack": "rack-1"}},
    )  # fmt: skip
    cluster.save()
    loaded = LocalCluster.load(tmp_path)
    for b in loaded.brokers.values():
        loaded.write_properties(b)
    props = {i: load_properties(b.properties_path) for i, b in loaded.brokers.items()}
    assert props[0]["broker.rack"] == "everywhere" and props[1]["broker.rack"] == "rack-1"
    assert props[0]["num.partitions"] == props[1]["num.partitions"] == "3"
