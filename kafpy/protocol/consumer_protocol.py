"""The "consumer" embedded protocol: subscription and assignment bytes a consumer group's
members exchange through JoinGroup and SyncGroup (Kafka's ConsumerProtocol).

Subscription: int16 version, [topic string], user data bytes (v1+ adds owned partitions,
which the readers here skip). Assignment: int16 version, [topic string, [int32
partition]], user data bytes. The group coordinator only reads them (for DescribeGroups
tools and the topics a group subscribes to); members (kafpy's ConsumerCoordinator among
them) write them.
"""

from __future__ import annotations

import struct

from kafpy.common.topic_partition import TopicPartition

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = _INT16.unpack_from(buf, pos)
    pos += 2
    if n < 0 or pos + n > len(buf):
        raise ValueError("consumer protocol: bad string length")
    return buf[pos : pos + n].decode("utf-8"), pos + n


def subscription_topics(data: bytes) -> list[str]:
    """The topics of a consumer subscription; ValueError when the bytes do not parse."""
    buf = bytes(data)
    try:
        pos = 2
        (count,) = _INT32.unpack_from(buf, pos)
        pos += 4
        topics = []
        for _ in range(max(count, 0)):
            topic, pos = _string(buf, pos)
            topics.append(topic)
        return topics
    except struct.error as e:
        raise ValueError(f"consumer protocol: truncated subscription ({e})") from e


def assignment_partitions(data: bytes) -> list[TopicPartition]:
    """The partitions of a consumer assignment (empty bytes: none)."""
    return read_assignment(data)[0]


def read_assignment(data: bytes) -> tuple[list[TopicPartition], bytes | None]:
    """A consumer assignment's partitions and user data (empty bytes: none, no user
    data)."""
    buf = bytes(data)
    if not buf:
        return [], None
    try:
        pos = 2
        (count,) = _INT32.unpack_from(buf, pos)
        pos += 4
        out = []
        for _ in range(max(count, 0)):
            topic, pos = _string(buf, pos)
            (n,) = _INT32.unpack_from(buf, pos)
            pos += 4
            for _ in range(max(n, 0)):
                (p,) = _INT32.unpack_from(buf, pos)
                pos += 4
                out.append(TopicPartition(topic, p))
        user_data = None
        if pos + 4 <= len(buf):
            (length,) = _INT32.unpack_from(buf, pos)
            if length >= 0:
                user_data = buf[pos + 4 : pos + 4 + length]
        return out, user_data
    except struct.error as e:
        raise ValueError(f"consumer protocol: truncated assignment ({e})") from e


def encode_assignment(partitions: list[TopicPartition], version: int = 0) -> bytes:
    """Assignment bytes: what a group leader hands each member in SyncGroup."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(_INT16.pack(version) + _INT32.pack(len(by_topic)))
    for topic, parts in by_topic.items():
        name = topic.encode()
        out += _INT16.pack(len(name)) + name + _INT32.pack(len(parts))
        for p in parts:
            out += _INT32.pack(p)
    out += _INT32.pack(-1)  # no user data
    return bytes(out)


def encode_subscription(topics: list[str], version: int = 0) -> bytes:
    """Subscription bytes: the topics a member wants, no user data."""
    out = bytearray(_INT16.pack(version) + _INT32.pack(len(topics)))
    for t in topics:
        name = t.encode()
        out += _INT16.pack(len(name)) + name
    out += _INT32.pack(-1)
    return bytes(out)
