"""The `kafpy server` command's process settings."""

from __future__ import annotations

from pathlib import Path

from kafpy.cli.server import LOG_CONFIG_ENV
from kafpy.common.properties import load_properties

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_the_systemd_unit_runs_kafpy_server_with_the_environment_it_reads() -> None:
    unit = (DEPLOY / "systemd" / "kafpy-server.service").read_text()
    assert "ExecStart=/opt/kafpy/bin/kafpy server /etc/kafpy/server.properties\n" in unit
    assert "KillSignal=SIGTERM\n" in unit and "Restart=on-failure\n" in unit
    environment = load_properties(DEPLOY / "systemd" / "kafpy-server.env")
    # the variables `kafpy server` reads for its logging configuration and log files
    assert set(environment) == {LOG_CONFIG_ENV, "LOG_DIR"}
