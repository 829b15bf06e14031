"""TopicIds keeps names and ids in step both ways."""

from __future__ import annotations

from kafpy.common.kafka_uuid import random_uuid
from kafpy.common.topic_ids import TopicIds


def test_ids_both_ways_through_recreation_and_removal() -> None:
    ids = TopicIds()
    first, second = random_uuid(), random_uuid()
    ids.set("t", first)
    assert (dict(ids.by_name), dict(ids.by_id)) == ({"t": first}, {first: "t"})
    ids.set("t", second)  # deleted and created again: the old id names nothing any more
    assert (dict(ids.by_name), dict(ids.by_id)) == ({"t": second}, {second: "t"})
    ids.remove("t")
    ids.remove("never-there")
    assert (dict(ids.by_name), dict(ids.by_id)) == ({}, {})
