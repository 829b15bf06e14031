"""StateChangeLogger: the `state-change.log` of partition and replica transitions.

As Kafka's `kafka.controller.StateChangeLogger`: one logger (here
`kafpy.state.change.logger`) for every state change the controller makes and every
LeaderAndIsr/UpdateMetadata/StopReplica it sends, prefixed with the controller's id and
epoch: `[Controller id=0 epoch=3] Changed partition t-0 from NewPartition to ...`.
"""

from __future__ import annotations

import logging

STATE_CHANGE_LOGGER_NAME = "kafpy.state.change.logger"


class StateChangeLogger:
    """Writes state-change lines for one controller (or broker) and epoch."""

    def __init__(
        self, broker_id: int, in_controller_context: bool, epoch: int | None = None
    ) -> None:
        self.broker_id = broker_id
        self.in_controller_context = in_controller_context
        self.epoch = epoch
        self.logger = logging.getLogger(STATE_CHANGE_LOGGER_NAME)

    def with_controller_epoch(self, epoch: int) -> StateChangeLogger:
        return StateChangeLogger(self.broker_id, self.in_controller_context, epoch)

    def _prefix(self) -> str:
        kind = "Controller" if self.in_controller_context else "Broker"
        epoch = f" epoch={self.epoch}" if self.epoch is not None else ""
        return f"[{kind} id={self.broker_id}{epoch}] "

    def trace(self, msg: str) -> None:
        # Kafka logs routine transitions at TRACE; Python's lowest standard level is DEBUG
        if self.logger.isEnabledFor(logging.DEBUG):
            self.logger.debug("%s%s", self._prefix(), msg)

    def info(self, msg: str) -> None:
        self.logger.info("%s%s", self._prefix(), msg)

    def warn(self, msg: str) -> None:
        self.logger.warning("%s%s", self._prefix(), msg)

    def error(self, msg: str, exc: BaseException | None = None) -> None:
        if exc is not None:
            self.logger.error("%s%s: %s", self._prefix(), msg, exc)
        else:
            self.logger.error("%s%s", self._prefix(), msg)
