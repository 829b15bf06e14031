"""Kafka's text form of a UUID (org.apache.kafka.common.Uuid): the 16 bytes in URL-safe base64
without padding, 22 characters. Topic ids (KIP-516) and cluster ids are written this way in
ZooKeeper, in `partition.metadata` and by the tools."""

from __future__ import annotations

import base64
import binascii
import uuid


def uuid_to_string(value: uuid.UUID) -> str:
    """The 22-character form Kafka prints and stores."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_string(text: str) -> uuid.UUID:
    """Parse Kafka's form; ValueError naming the text when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"{text!r} is not a Kafka UUID (22 characters of URL-safe base64)") from e
    if len(text) != 22 or len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka UUID (22 characters of URL-safe base64)")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """A new random id, never the all-zero one (which means "no id") as Kafka's Uuid.randomUuid."""
    while True:
        value = uuid.uuid4()
        if value.int != 0:
            return value
