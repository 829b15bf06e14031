"""The controller's log files: controller.log and state-change.log in the broker's logs dir.

As Kafka's log4j.properties routes `kafka.controller` to controller.log and
`state.change.logger` to state-change.log: `add_controller_log_files(logs_dir)` attaches
file handlers in Kafka's line format to `kafpy.controller` and `kafpy.state.change.logger`.
Their records still reach the `kafpy` logger's own handlers (stderr, server.log).
"""

from __future__ import annotations

import logging
from pathlib import Path

from kafpy.common.logger import KafkaLogFormatter
from kafpy.controller.state_change_logger import STATE_CHANGE_LOGGER_NAME

CONTROLLER_LOGGER_NAME = "kafpy.controller"
CONTROLLER_LOG_FILE = "controller.log"
STATE_CHANGE_LOG_FILE = "state-change.log"


def add_controller_log_files(logs_dir: Path | str) -> list[logging.Handler]:
    """Write controller.log and state-change.log under `logs_dir` (created if needed).

    Returns the handlers, to be passed to `remove_controller_log_files` at shutdown.
    """
    directory = Path(logs_dir)
    directory.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = []
    for logger_name, file_name in (
        (CONTROLLER_LOGGER_NAME, CONTROLLER_LOG_FILE),
        (STATE_CHANGE_LOGGER_NAME, STATE_CHANGE_LOG_FILE),
    ):
        handler = logging.FileHandler(directory / file_name, encoding="utf-8")
        handler.setFormatter(KafkaLogFormatter())
        logging.getLogger(logger_name).addHandler(handler)
        handlers.append(handler)
    return handlers


def remove_controller_log_files(handlers: list[logging.Handler]) -> None:
    for logger_name in (CONTROLLER_LOGGER_NAME, STATE_CHANGE_LOGGER_NAME):
        logger = logging.getLogger(logger_name)
        for handler in handlers:
            if handler in logger.handlers:
                logger.removeHandler(handler)
    for handler in handlers:
        handler.close()
