"""The keys and values the group coordinator writes to __consumer_offsets (Kafka 2.x's schemas).

Every record's key starts with an int16 version: 0 and 1 are offset commits (group,
topic, partition), 2 is a group's metadata (group). Values also start with an int16
version. Offset commit values: v1 (offset, metadata, commit timestamp, expire
timestamp), v3 (offset, leader epoch, metadata, commit timestamp); v0 and v2 are read.
Group metadata values v0 to v3 (v3 adds group.instance.id); kafpy writes v3, as Kafka
2.3+ does. A null value is a tombstone: the offset or the group is gone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.offset_and_metadata import NO_LEADER_EPOCH, OffsetAndMetadata
from kafpy.protocol.schema import Array, Field, Message, Struct

_INT16 = struct.Struct(">h")

OFFSET_COMMIT_KEY = Message(
    -1, "OffsetCommitKey", "request", (0, 1), None,
    [Field("group", "string"), Field("topic", "string"), Field("partition", "int32")],
)  # fmt: skip
GROUP_METADATA_KEY = Message(
    -1, "GroupMetadataKey", "request", (2, 2), None, [Field("group", "string")]
)

OFFSET_COMMIT_VALUE = Message(
    -1, "OffsetCommitValue", "request", (0, 3), None,
    [
        Field("offset", "int64"),
        Field("leader_epoch", "int32", "3+", default=NO_LEADER_EPOCH),
        Field("metadata", "string"),
        Field("commit_timestamp", "int64"),
        Field("expire_timestamp", "int64", "1", default=-1),
    ],
)  # fmt: skip

GROUP_METADATA_VALUE = Message(
    -1, "GroupMetadataValue", "request", (0, 3), None,
    [
        Field("protocol_type", "string"),
        Field("generation", "int32"),
        Field("protocol", "string", nullable="0+"),
        Field("leader", "string", nullable="0+"),
        Field("current_state_timestamp", "int64", "2+", default=-1),
        Field("members", Array(Struct([
            Field("member_id", "string"),
            Field("group_instance_id", "string", "3+", nullable="3+", default=None),
            Field("client_id", "string"),
            Field("client_host", "string"),
            Field("rebalance_timeout", "int32", "1+", default=0),
            Field("session_timeout", "int32"),
            Field("subscription", "bytes"),
            Field("assignment", "bytes"),
        ]))),
    ],
)  # fmt: skip

GROUP_METADATA_VALUE_VERSION = 3


@dataclass(frozen=True)
class OffsetKey:
    """The key of an offset commit record."""

    group: str
    topic_partition: TopicPartition


@dataclass(frozen=True)
class GroupKey:
    """The key of a group metadata record."""

    group: str


def offset_commit_key(group: str, tp: TopicPartition) -> bytes:
    return _INT16.pack(1) + OFFSET_COMMIT_KEY.encode(
        1, {"group": group, "topic": tp.topic, "partition": tp.partition}
    )


def group_metadata_key(group: str) -> bytes:
    return _INT16.pack(2) + GROUP_METADATA_KEY.encode(2, {"group": group})


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """v1 when the commit carries an explicit expiry (OffsetCommit v2-v4 retention), else v3."""
    version = 1 if om.expire_timestamp is not None else 3
    value = {
        "offset": om.offset, "leader_epoch": om.leader_epoch, "metadata": om.metadata,
        "commit_timestamp": om.commit_timestamp,
        "expire_timestamp": om.expire_timestamp if om.expire_timestamp is not None else -1,
    }  # fmt: skip
    return _INT16.pack(version) + OFFSET_COMMIT_VALUE.encode(version, value)


def group_metadata_value(value: dict[str, Any]) -> bytes:
    """A group's record value (v3) from a dict in GROUP_METADATA_VALUE's shape."""
    return _INT16.pack(GROUP_METADATA_VALUE_VERSION) + GROUP_METADATA_VALUE.encode(
        GROUP_METADATA_VALUE_VERSION, value
    )


def read_key(key: bytes | memoryview) -> OffsetKey | GroupKey:
    """Decode a record key of __consumer_offsets; ValueError for an unknown key version."""
    (version,) = _INT16.unpack_from(key, 0)
    if version in (0, 1):
        k = OFFSET_COMMIT_KEY.decode(version, key, 2)
        return OffsetKey(k["group"], TopicPartition(k["topic"], k["partition"]))
    if version == 2:
        return GroupKey(GROUP_METADATA_KEY.decode(2, key, 2)["group"])
    raise ValueError(
        f"Unknown __consumer_offsets key version {version}; this broker reads versions 0 to 2."
    )


def read_offset_value(value: bytes | memoryview) -> OffsetAndMetadata:
    (version,) = _INT16.unpack_from(value, 0)
    if not 0 <= version <= 3:
        raise ValueError(
            f"Unknown offset commit value version {version}; this broker reads versions 0 to 3."
        )
    v = OFFSET_COMMIT_VALUE.decode(version, value, 2)
    expire = v["expire_timestamp"] if version == 1 else None
    return OffsetAndMetadata(v["offset"], v.get("leader_epoch", NO_LEADER_EPOCH), v["metadata"],
                             v["commit_timestamp"], expire)  # fmt: skip


def read_group_value(value: bytes | memoryview) -> dict[str, Any]:
    """A group's record value as a dict (every version normalised to v3's fields)."""
    (version,) = _INT16.unpack_from(value, 0)
    if not 0 <= version <= 3:
        raise ValueError(
            f"Unknown group metadata value version {version}; this broker reads versions 0 to 3."
        )
    v = GROUP_METADATA_VALUE.decode(version, value, 2)
    v.setdefault("current_state_timestamp", -1)
    for m in v["members"]:
        m.setdefault("group_instance_id", None)
        m["subscription"] = bytes(m["subscription"])
        m["assignment"] = bytes(m["assignment"])
        if version == 0:
            m["rebalance_timeout"] = m["session_timeout"]
    return v
