"""Kafka's text form of UUIDs: 22 characters of URL-safe base64, both ways."""

from __future__ import annotations

import uuid

import pytest

from kafpy.common.kafka_uuid import random_uuid, uuid_from_string, uuid_to_string


def test_round_trip_and_kafkas_form() -> None:
    # Kafka's Uuid(0x0123456789abcdef, 0xfedcba9876543210).toString()
    value = uuid.UUID("0123456789abcdef-fedcba9876543210".replace("-", ""))
    assert uuid_to_string(value) == "ASNFZ4mrze_-3LqYdlQyEA"
    assert uuid_from_string("ASNFZ4mrze_-3LqYdlQyEA") == value
    fresh = random_uuid()
    assert fresh.int != 0 and uuid_from_string(uuid_to_string(fresh)) == fresh


@pytest.mark.parametrize(
    "text", ["", "short", "ASNFZ4mrze_-3LqYdlQyEAAA", "ASNFZ4mrze_-3LqYdl!yEA"]
)
def test_not_a_uuid_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="is not a Kafka UUID"):
        uuid_from_string(text)
