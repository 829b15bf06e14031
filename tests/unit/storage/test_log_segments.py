"""LogSegments: the segment map a Log and its LogLoader share, looked up by base offset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafpy.common.time import MockTime
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_segment import LogSegment
from kafpy.storage.log_segments import LogSegments
from tests.unit.storage.segment_fixtures import T0


@pytest.fixture
def segments(tmp_path: Path) -> Iterator[LogSegments]:
    held = LogSegments()
    for base in (30, 0, 10):  # added out of order
        held.add(LogSegment.open(tmp_path, base, LogConfig(), MockTime(T0)))
    yield held
    for segment in held.values():
        segment.close_handlers()


def bases(segments: list[LogSegment]) -> list[int]:
    return [s.base_offset for s in segments]


def test_segments_are_held_in_base_offset_order(segments: LogSegments) -> None:
    assert bases(segments.values()) == [0, 10, 30]
    assert segments.base_offsets == [0, 10, 30]
    assert len(segments) == 3
    assert segments.active_segment.base_offset == 30
    first = segments.first_segment
    assert first is not None and first.base_offset == 0
    assert 10 in segments and 11 not in segments


def test_floor_and_higher_segments(segments: LogSegments) -> None:
    floor = segments.floor_segment(29)
    assert floor is not None and floor.base_offset == 10
    higher = segments.higher_segment(10)
    assert higher is not None and higher.base_offset == 30
    assert segments.higher_segment(30) is None
    assert bases(segments.in_range(15, 31)) == [10, 30]
    assert bases(segments.in_range(0, 10)) == [0]
    assert bases(segments.from_base(10)) == [10, 30]


def test_removing_the_last_segment_makes_the_previous_one_active(segments: LogSegments) -> None:
    active = segments.active_segment
    assert segments.holds(active)
    segments.remove(30)
    assert not segments.holds(active)
    assert segments.active_segment.base_offset == 10
    segments.remove(30)  # not there: nothing happens
    assert len(segments) == 2
    active.close_handlers()


def test_an_empty_map_has_no_active_segment() -> None:
    held = LogSegments()
    assert held.is_empty
    assert held.floor_segment(5) is None
    with pytest.raises(LookupError):
        held.active_segment  # noqa: B018
