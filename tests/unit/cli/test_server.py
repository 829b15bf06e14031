"""The `kafpy server` command's process settings."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafpy.cli.server import GENERATION_2_THRESHOLD, LOG_CONFIG_ENV, settle_garbage_collector
from kafpy.common.properties import load_properties


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


DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_the_systemd_unit_runs_kafpy_server_with_the_environment_it_reads() -> None:
    unit = (DEPLOY / "systemd" / "kafpy-server.service").read_text()
    assert "ExecStart=/opt/kafpy/bin/kafpy server /etc/kafpy/server.properties\n" in unit
    assert "KillSignal=SIGTERM\n" in unit and "Restart=on-failure\n" in unit
    environment = load_properties(DEPLOY / "systemd" / "kafpy-server.env")
    # the variables `kafpy server` reads for its logging configuration and log files
    assert set(environment) == {LOG_CONFIG_ENV, "LOG_DIR"}
