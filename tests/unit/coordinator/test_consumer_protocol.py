"""The consumer protocol readers against the bytes kafka-python's consumers write."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.consumer_protocol import assignment_partitions, subscription_topics


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
