"""Tests of LogDirFailureHandler: a broker that cannot tell the controller of a failed log
dir within log.dir.failure.timeout.ms halts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from tests.unit.server.fixtures import Broker


class _UnreachableStore:
    """A metadata store whose writes fail, as ZooKeeper does when it cannot be reached."""

    def __init__(self) -> None:
        self.attempts = 0

    async def create(self, *args: Any, **kwargs: Any) -> str:
        self.attempts += 1
        raise ConnectionError("ZooKeeper is not reachable")


def test_log_dir_failure_halts_when_the_controller_cannot_be_told(tmp_path: Path) -> None:
    """log.dir.failure.timeout.ms: the notification is retried, then the broker halts."""
    b = Broker(tmp_path)
    try:
        b.lead("t", 1)
        halted: list[int] = []
        store = _UnreachableStore()
        rm = b.replica_manager
        rm.zk_client = type("Zk", (), {"store": store})()
        rm.log_dir_failure_timeout_ms = 1500
        rm.log_dir_failure_handler.halt = halted.append
        log = b.log_manager.get_log(TopicPartition("t", 0))
        assert log is not None

        async def fail_and_advance() -> None:
            task = asyncio.get_running_loop().create_task(rm.handle_log_dir_failure(log.dir.parent))
            while not task.done():
                await asyncio.sleep(0.01)
                b.time.sleep(100)  # MockTime: the deadline passes without waiting for it

        asyncio.run(fail_and_advance())
        assert halted == [1]
        assert store.attempts >= 2
    finally:
        b.stop()
