"""read_to_log_end over a real Log: every batch from the log start to the log end offset
loading began with, across chunks smaller than the log."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kafpy.coordinator.internal_topic_loader import read_to_log_end
from kafpy.storage.log_config import LogConfig
from tests.unit.storage.segment_fixtures import Clock, fill, open_log


def test_reads_every_batch_from_the_log_start_to_the_log_end(tmp_path: Path) -> None:
    log = open_log(tmp_path / "__consumer_offsets-0", Clock(), LogConfig(segment_bytes=400))
    try:
        firsts = fill(log, 12)
        log.maybe_increment_log_start_offset(firsts[2])

        async def read() -> list[int]:
            return [b.base_offset async for b in read_to_log_end(log, 150)]

        assert asyncio.run(read()) == firsts[2:]
    finally:
        log.close()


def test_an_empty_log_has_no_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path / "__transaction_state-0", Clock())
    try:

        async def read() -> list[int]:
            return [b.base_offset async for b in read_to_log_end(log, 1024)]

        assert asyncio.run(read()) == []
    finally:
        log.close()
