"""broker-api-versions' output lines against Kafka 2.8's NodeApiVersions text."""

from __future__ import annotations

from kafpy.cli.broker_api_versions import (
    KAFKA_2_8_APIS,
    api_version_text,
    node_api_versions_text,
    node_text,
)
from kafpy.client.cluster import Node
from kafpy.protocol.api_keys import ApiKey


def test_node_text_is_kafkas_node_to_string() -> None:
    assert node_text(Node(0, "localhost", 9092)) == "localhost:9092 (id: 0 rack: null)"
    assert node_text(Node(2, "h", 1, "r1")) == "h:1 (id: 2 rack: r1)"


def test_api_version_lines() -> None:
    assert api_version_text(0, 3, 9) == "Produce(0): 3 to 9 [usable: 9]"
    assert api_version_text(0, 0, 13) == "Produce(0): 0 to 13 [usable: 9]"
    assert api_version_text(47, 0, 0) == "OffsetDelete(47): 0 [usable: 0]"
    assert api_version_text(3, 12, 13) == "Metadata(3): 12 to 13 [unusable: node too new]"
    assert api_version_text(99, 0, 2) == "UNKNOWN(99): 0 to 2"


def test_whole_block_lists_unsupported_zk_broker_apis() -> None:
    text = node_api_versions_text({0: (3, 9), 18: (0, 3)})
    lines = text.split("\n")
    assert lines[0] == "(" and lines[-1] == ")"
    assert lines[1] == "\tProduce(0): 3 to 9 [usable: 9],"
    assert "\tApiVersions(18): 0 to 3 [usable: 3]," in lines
    assert "\tAlterIsr(56): UNSUPPORTED," in lines
    assert lines[-2] == "\tDescribeCluster(60): UNSUPPORTED"  # the last zkBroker API, no comma
    assert not any("Vote(52)" in line for line in lines)  # KRaft-only APIs are not listed


def test_names_are_kafkas() -> None:
    for key, (name, *_) in KAFKA_2_8_APIS.items():
        assert name == ApiKey(key).api_name, key
