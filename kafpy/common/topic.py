"""Topic names: Kafka's rules for legal names, internal topics and metric-name collisions.

After Kafka's `org.apache.kafka.common.internals.Topic`.
"""

from __future__ import annotations

import re

from kafpy.common.errors import InvalidTopicError

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
INTERNAL_TOPICS: frozenset[str] = frozenset(
    {GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME}
)

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")

COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
    "could collide. To avoid issues it is best to use either, but not both."
)


def validate(topic: str) -> None:
    """Raise InvalidTopicError, saying which rule is broken, unless `topic` is a legal name."""
    if not topic:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(topic) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {topic}"
        )
    if not _LEGAL.fullmatch(topic):
        raise InvalidTopicError(
            f'Topic name "{topic}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def validate_topic_partition(topic: str, partition: int) -> None:
    """Raise InvalidTopicError unless `topic` is a legal name and `partition` is >= 0:
    what a log directory `<topic>-<partition>` may be made of."""
    validate(topic)
    if partition < 0:
        raise InvalidTopicError(
            f"Partition {partition} of topic {topic} is illegal: partitions are numbered from 0"
        )


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS


def has_collision_chars(topic: str) -> bool:
    """True if the name has '.' or '_', which metric names do not tell apart."""
    return "_" in topic or "." in topic


def unify_collision_chars(topic: str) -> str:
    return topic.replace(".", "_")


def has_collision(topic_a: str, topic_b: str) -> bool:
    """True if the two names are the same once '.' and '_' are treated as one character."""
    return unify_collision_chars(topic_a) == unify_collision_chars(topic_b)
