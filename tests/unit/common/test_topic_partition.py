"""Tests of TopicPartition naming."""

from __future__ import annotations

import pytest

from kafpy.common.topic_partition import TopicPartition


def test_str_and_parse_round_trip_with_dashes_in_topic() -> None:
    tp = TopicPartition("my-topic-x", 12)
    assert str(tp) == "my-topic-x-12"
    assert TopicPartition.parse("my-topic-x-12") == tp


@pytest.mark.parametrize("bad", ["topic", "-1", "topic-", "topic-x", ""])
def test_parse_rejects_names_without_partition(bad: str) -> None:
    with pytest.raises(ValueError, match="topic-partition"):
        TopicPartition.parse(bad)
