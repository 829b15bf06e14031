"""The heap settled after start-up: frozen, and generation 2 collected rarely."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kafpy.common.event_loop import GENERATION_2_THRESHOLD, settle_garbage_collector


@pytest.fixture
def collector_restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("collector_restored")
def test_start_up_objects_are_frozen_and_generation_2_runs_rarely() -> None:
    kept = [[i] for i in range(1000)]  # what start-up built, still referenced
    gc.set_threshold(700, 10, 10)
    frozen_before = gc.get_freeze_count()
    settle_garbage_collector()
    assert gc.get_freeze_count() >= frozen_before + len(kept)
    assert gc.get_threshold() == (700, 10, GENERATION_2_THRESHOLD)
    assert GENERATION_2_THRESHOLD > 10
