"""TopicPartition: the (topic, partition) pair that names a partition everywhere."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic; `str()` gives Kafka's `topic-partition` form."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, name: str) -> TopicPartition:
        """Parse `topic-partition`; the topic itself may contain `-`.

        Raises ValueError naming the string when it has no `-<int>` suffix or an empty topic.
        """
        topic, sep, part = name.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise ValueError(
                f"'{name}' is not of the form topic-partition (a topic name, '-', a partition number)"
            )
        return cls(topic, int(part))
