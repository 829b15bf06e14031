"""The "consumer" embedded protocol's subscription and assignment bytes, and the readers
against the bytes kafka-python's consumers write."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.consumer_protocol import (
    assignment_partitions,
    encode_assignment,
    encode_subscription,
    read_assignment,
    subscription_topics,
)


def test_subscription_and_assignment_bytes() -> None:
    assert encode_subscription(["t"]) == b"\x00\x00" + b"\x00\x00\x00\x01\x00\x01t" + b"\xff" * 4
    assert subscription_topics(encode_subscription(["a", "bc"])) == ["a", "bc"]
    tps = [TopicPartition("a", 1), TopicPartition("a", 3), TopicPartition("b", 0)]
    assert assignment_partitions(encode_assignment(tps)) == tps
    assert assignment_partitions(b"") == []


def test_assignment_user_data() -> None:
    tp = TopicPartition("a", 0)
    plain = encode_assignment([tp])
    assert read_assignment(plain) == ([tp], None)
    with_data = plain[:-4] + b"\x00\x00\x00\x02\x01\x02"
    assert read_assignment(with_data) == ([tp], b"\x01\x02")


def test_subscription_topics() -> None:
    data = ConsumerProtocolSubscription(0, ["orders", "payments"], b"user").encode()
    assert subscription_topics(data) == ["orders", "payments"]


def test_assignment_partitions() -> None:
    data = ConsumerProtocolAssignment(0, [("a", [0, 1]), ("b", [2])], b"").encode()
    assert assignment_partitions(data) == [
        TopicPartition("a", 0),
        TopicPartition("a", 1),
        TopicPartition("b", 2),
    ]
    assert assignment_partitions(b"") == []


def test_truncated_bytes_are_refused() -> None:
    data = ConsumerProtocolAssignment(0, [("a", [0, 1])], b"").encode()
    with pytest.raises(ValueError, match="truncated assignment"):
        assignment_partitions(data[:12])
    with pytest.raises(ValueError, match="bad string length"):
        subscription_topics(ConsumerProtocolSubscription(0, ["orders"], b"").encode()[:9])
