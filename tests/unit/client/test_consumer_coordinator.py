"""ConsumerCoordinator's range assignor (the group protocol itself runs against real
brokers in tests/integration/test_console_tools.py)."""

from __future__ import annotations

from kafpy.client.consumer_coordinator import range_assign
from kafpy.common.topic_partition import TopicPartition


def tps(topic: str, *partitions: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


def test_range_assign_splits_each_topic_in_contiguous_ranges() -> None:
    # Kafka's RangeAssignor: 5 partitions over 2 members -> 3 + 2, the first member by id
    # taking the extra one; a topic only goes to the members subscribed to it
    assigned = range_assign({"m2": ["a", "b"], "m1": ["a"]}, {"a": 5, "b": 2})
    assert assigned == {"m1": tps("a", 0, 1, 2), "m2": tps("a", 3, 4) + tps("b", 0, 1)}
    assert range_assign({"m1": ["a"], "m2": ["a"], "m3": ["a"]}, {"a": 2}) == {
        "m1": tps("a", 0),
        "m2": tps("a", 1),
        "m3": [],
    }
