"""Topic name rules: legal characters, length, '.'/'..', internal topics, collisions."""

from __future__ import annotations

import pytest

from kafpy.common import topic
from kafpy.common.errors import InvalidTopicError


@pytest.mark.parametrize(
    "name", ["a", "topic_a", "my.topic-1", "A" * 249, "__consumer_offsets", "..."]
)
def test_legal_names(name: str) -> None:
    topic.validate(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is illegal, it can't be empty"),
        (".", 'Topic name cannot be "." or ".."'),
        ("..", 'Topic name cannot be "." or ".."'),
        ("a" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic name: "),
        ("bad name", 'Topic name "bad name" is illegal, it contains a character other than ASCII'),
        ("bad/name", "is illegal, it contains a character other than ASCII alphanumerics"),
        ("ümlaut", "is illegal"),
    ],
)
def test_illegal_names(name: str, message: str) -> None:
    with pytest.raises(InvalidTopicError) as info:
        topic.validate(name)
    assert message in str(info.value)


def test_internal_topics() -> None:
    assert topic.is_internal("__consumer_offsets")
    assert topic.is_internal("__transaction_state")
    assert not topic.is_internal("_consumer_offsets")


def test_collisions() -> None:
    assert topic.has_collision_chars("a.b") and topic.has_collision_chars("a_b")
    assert not topic.has_collision_chars("a-b")
    assert topic.has_collision("a.b", "a_b")
    assert not topic.has_collision("a.b", "a-b")
