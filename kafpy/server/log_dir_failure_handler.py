"""LogDirFailureHandler: takes each log dir that failed with an I/O error offline.

It takes the dirs the LogDirFailureChannel queued, one at a time, and handles each as
Kafka's ReplicaManager.handleLogDirFailure: the replicas in the dir stop being served
(their fetchers stop, they answer KAFKA_STORAGE_ERROR from now on), LogManager closes
their logs, and the controller learns of it through /log_dir_event_notification (it then
moves leadership to other replicas). A broker that cannot tell the controller within
log.dir.failure.timeout.ms halts, so that its leaders of the failed dir's partitions move
elsewhere instead of staying unavailable here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafpy.metadata.zk_data import LogDirEventNotificationSequenceZNode

if TYPE_CHECKING:
    from kafpy.server.replica_manager import ReplicaManager

# log.dir.failure.timeout.ms: how long a broker keeps trying to tell the controller of a
# failed log dir before it halts
LOG_DIR_FAILURE_TIMEOUT_MS = 30000


def _halt(status: int) -> None:
    """End the process at once (Kafka's Exit.halt), after writing out the log lines."""
    logging.shutdown()
    os._exit(status)


class LogDirFailureHandler:
    """Takes the failed log dirs of `replica_manager`'s LogDirFailureChannel offline (Kafka's
    LogDirFailureHandler), and `halt`s the process when the controller cannot be told."""

    def __init__(
        self, replica_manager: ReplicaManager, halt: Callable[[int], None] | None = None
    ) -> None:
        self.replica_manager = replica_manager
        self.halt = halt or _halt

    async def run(self) -> None:
        """Handle each dir reported to the channel, until cancelled."""
        rm = self.replica_manager
        while True:
            d = await rm.log_dir_failure_channel.take_next_offline_log_dir()
            try:
                await self.handle_log_dir_failure(d)
            except asyncio.CancelledError:
                raise
            except Exception:
                rm.log.exception("Error while handling the failure of log dir %s", d)

    async def handle_log_dir_failure(self, d: Path, send_zk_notification: bool = True) -> None:
        """Stop serving the replicas in `d` (Kafka's ReplicaManager.handleLogDirFailure):
        their fetchers stop, they answer KAFKA_STORAGE_ERROR from now on, LogManager
        closes their logs, and the controller learns of it through
        /log_dir_event_notification."""
        rm = self.replica_manager
        d = Path(d)
        if not rm.log_manager.is_log_dir_online(d):
            return
        rm.log.warning("Stopping serving replicas in dir %s", d)
        offline = [
            tp
            for tp, p in rm.partitions.items()
            if p.log is not None and Path(p.log.dir).parent == d
        ]
        rm.replica_fetcher_manager.remove_fetcher_for_partitions(offline)
        for tp in offline:
            rm.mark_partition_offline(tp)
        rm.high_watermark_checkpoints.forget(d)
        rm.log.warning(
            "Broker %d stopped fetcher for partitions %s because they are in the failed log "
            "directory %s.",
            rm.broker_id,
            ",".join(map(str, offline)),
            d,
        )
        rm.log_manager.handle_log_dir_failure(d)
        for tp in offline:
            rm.complete_delayed_requests(tp)
        if send_zk_notification and rm.zk_client is not None:
            await self._notify_controller(d)
        rm.log.warning("Stopped serving replicas in dir %s", d)

    async def _notify_controller(self, d: Path) -> None:
        """Write /log_dir_event_notification, retrying for log.dir.failure.timeout.ms; halt
        when that time ran out."""
        rm = self.replica_manager
        assert rm.zk_client is not None
        timeout_ms = rm.log_dir_failure_timeout_ms
        deadline = rm.time.milliseconds() + timeout_ms
        while True:
            remaining_ms = deadline - rm.time.milliseconds()
            try:
                await asyncio.wait_for(
                    rm.zk_client.store.create(
                        LogDirEventNotificationSequenceZNode.path(),
                        LogDirEventNotificationSequenceZNode.encode(rm.broker_id),
                        sequential=True,
                        make_parents=True,
                    ),
                    max(remaining_ms, 1) / 1000,
                )
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if rm.time.milliseconds() >= deadline:
                    rm.log.critical(
                        "Shutdown broker because the controller could not be told of the failure "
                        "of log dir %s within log.dir.failure.timeout.ms=%d: %s",
                        d,
                        timeout_ms,
                        e or type(e).__name__,
                    )
                    self.halt(1)
                    return
                rm.log.warning("Retrying the notification of the failure of log dir %s: %s", d, e)
                await asyncio.sleep(min(remaining_ms, 1000) / 1000)
