from __future__ import annotations

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator import group_metadata_records as r
from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata


def test_offset_commit_key_is_kafkas_v1_bytes() -> None:
    key = r.offset_commit_key("g", TopicPartition("t", 3))
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert r.read_key(key) == r.OffsetKey("g", TopicPartition("t", 3))
    # v0 keys (older brokers) read the same
    assert r.read_key(b"\x00\x00" + key[2:]) == r.OffsetKey("g", TopicPartition("t", 3))


def test_group_metadata_key_is_version_2() -> None:
    key = r.group_metadata_key("grp")
    assert key == b"\x00\x02\x00\x03grp"
    assert r.read_key(key) == r.GroupKey("grp")
    with pytest.raises(ValueError, match="key version 7"):
        r.read_key(b"\x00\x07\x00\x00")


def test_offset_value_v3_and_v1_with_expiry() -> None:
    om = OffsetAndMetadata(42, 5, "meta", 1000)
    value = r.offset_commit_value(om)
    assert value == (b"\x00\x03" + (42).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\x00\x04meta"
                     + (1000).to_bytes(8, "big"))  # fmt: skip
    assert r.read_offset_value(value) == om
    expiring = OffsetAndMetadata(42, -1, "", 1000, 5000)
    value = r.offset_commit_value(expiring)
    assert value[:2] == b"\x00\x01"
    assert r.read_offset_value(value) == expiring


def test_group_value_v3_round_trip_and_v0_read() -> None:
    value = {
        "protocol_type": "consumer", "generation": 4, "protocol": "range", "leader": "m1",
        "current_state_timestamp": 77,
        "members": [{"member_id": "m1", "group_instance_id": "i1", "client_id": "c", "client_host": "/h",
                     "rebalance_timeout": 300, "session_timeout": 100, "subscription": b"s", "assignment": b"a"}],
    }  # fmt: skip
    data = r.group_metadata_value(value)
    assert data[:2] == b"\x00\x03"
    assert r.read_group_value(data) == value
    v0 = r.GROUP_METADATA_VALUE.encode(0, {**value, "members": [{**value["members"][0]}]})
    read = r.read_group_value(b"\x00\x00" + v0)
    assert read["members"][0]["rebalance_timeout"] == 100  # v0 has none: the session timeout
    assert read["members"][0]["group_instance_id"] is None
