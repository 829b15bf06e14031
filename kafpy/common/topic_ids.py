"""TopicIds: topic names and their KIP-516 topic ids, both ways (Kafka's topicIds and
topicNames maps), as the controller's context and a broker's metadata cache keep them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping


class TopicIds:
    """The id of each topic that has one, and the topic of each id."""

    def __init__(self) -> None:
        self._by_name: dict[str, uuid.UUID] = {}
        self._by_id: dict[uuid.UUID, str] = {}

    @property
    def by_name(self) -> Mapping[str, uuid.UUID]:
        return self._by_name

    @property
    def by_id(self) -> Mapping[uuid.UUID, str]:
        return self._by_id

    def set(self, topic: str, topic_id: uuid.UUID) -> None:
        """Record a topic's id (a topic deleted and created again comes with a new one)."""
        previous = self._by_name.get(topic)
        if previous is not None and previous != topic_id:
            del self._by_id[previous]
        self._by_name[topic] = topic_id
        self._by_id[topic_id] = topic

    def remove(self, topic: str) -> None:
        topic_id = self._by_name.pop(topic, None)
        if topic_id is not None:
            self._by_id.pop(topic_id, None)
