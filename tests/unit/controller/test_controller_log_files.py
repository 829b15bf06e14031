"""controller.log and state-change.log receive the controller's and the state machines' lines."""

from __future__ import annotations

import logging
from pathlib import Path

from kafpy.controller.controller_log_files import (
    add_controller_log_files,
    remove_controller_log_files,
)
from kafpy.controller.state_change_logger import StateChangeLogger


def test_lines_land_in_their_files(tmp_path: Path) -> None:
    handlers = add_controller_log_files(tmp_path / "logs")
    try:
        logging.getLogger("kafpy.controller.KafkaController").warning(
            "[Controller id=0] New topics: [Set(t)]"
        )
        StateChangeLogger(0, True, 1).error("Partition t-0 should be in one of ...")
    finally:
        remove_controller_log_files(handlers)
    controller_log = (tmp_path / "logs" / "controller.log").read_text()
    state_change_log = (tmp_path / "logs" / "state-change.log").read_text()
    assert (
        "WARNING [Controller id=0] New topics: [Set(t)] (kafpy.controller.KafkaController)"
        in controller_log
    )
    assert "should be in one of" not in controller_log
    assert (
        "ERROR [Controller id=0 epoch=1] Partition t-0 should be in one of ... "
        "(kafpy.state.change.logger)"
    ) in state_change_log
    assert state_change_log.startswith("[")
