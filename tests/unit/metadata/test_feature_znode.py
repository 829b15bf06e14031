"""The /feature znode codec against Kafka 2.8's JSON."""

from __future__ import annotations

import pytest

from kafpy.common.features import FinalizedVersionRange
from kafpy.metadata.feature_znode import FeatureZNode, FeatureZNodeStatus
from kafpy.metadata.zk_data import ZkDataError


def test_encode_is_kafkas_json() -> None:
    assert FeatureZNode(FeatureZNodeStatus.ENABLED).encode() == (
        b'{"features":{},"status":1,"version":1}'
    )
    node = FeatureZNode(FeatureZNodeStatus.DISABLED, {"f": FinalizedVersionRange(1, 3)})
    assert node.encode() == (
        b'{"features":{"f":{"max_version_level":3,"min_version_level":1}},"status":0,"version":1}'
    )


def test_decode_kafkas_json_in_any_key_order() -> None:
    data = (
        b'{"version":1,"status":1,"features":{"f":{"min_version_level":2,"max_version_level":4}}}'
    )
    assert FeatureZNode.decode(data) == FeatureZNode(
        FeatureZNodeStatus.ENABLED, {"f": FinalizedVersionRange(2, 4)}
    )
    node = FeatureZNode(FeatureZNodeStatus.ENABLED, {"a": FinalizedVersionRange(1, 1)})
    assert FeatureZNode.decode(node.encode()) == node


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "Failed to parse feature information"),
        (b'{"version":0,"status":1,"features":{}}', "Unsupported version: 0"),
        (b'{"version":1,"status":1}', "Features map can not be absent"),
        (b'{"version":1,"features":{}}', "Status can not be absent"),
        (b'{"version":1,"status":7,"features":{}}', "Malformed status: 7"),
        (
            b'{"version":1,"status":1,"features":{"f":{"min_version_level":3,"max_version_level":2}}}',
            "Unable to convert to finalized features",
        ),
    ],
)
def test_malformed_nodes_are_refused_with_kafkas_messages(data: bytes, message: str) -> None:
    with pytest.raises(ZkDataError, match=message):
        FeatureZNode.decode(data)
