"""LoopLagProbe: a deliberate blocking call on the loop is reported with its stack."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

import pytest

from kafpy.server.loop_lag_probe import LoopLagProbe


class _WarnSeen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.set()


def block_the_loop_until(event: threading.Event) -> None:
    """A blocking call on the loop thread: it returns only once the probe has reported."""
    assert event.wait(60), "the probe never reported the blocked loop"


def test_a_blocking_call_is_reported_with_its_stack(caplog: pytest.LogCaptureFixture) -> None:
    warn_seen = _WarnSeen()
    logger = logging.getLogger("kafpy.server.loop_lag_probe")
    logger.addHandler(warn_seen)

    async def scenario() -> LoopLagProbe:
        probe = LoopLagProbe.start(7)
        await asyncio.sleep(0.05)
        block_the_loop_until(warn_seen.seen)
        await asyncio.sleep(0.05)
        await probe.stop()
        return probe

    try:
        with caplog.at_level(logging.INFO, logger="kafpy.server.loop_lag_probe"):
            probe = asyncio.run(scenario())
    finally:
        logger.removeHandler(warn_seen)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    message = warnings[0].getMessage()
    assert message.startswith("[LoopLagProbe id=7] Event loop blocked for ")
    assert "block_the_loop_until" in message
    assert "scenario" in message
    assert warnings[1].getMessage().startswith("[LoopLagProbe id=7] Event loop was blocked for ")
    assert probe.stalls == 1
    summary = [r.getMessage() for r in caplog.records if "Event loop lag over" in r.getMessage()]
    assert len(summary) == 1
    assert "; 1 stalls over 50 ms" in summary[0]


def test_the_summary_gives_ordered_percentiles(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> LoopLagProbe:
        probe = LoopLagProbe.start()
        await asyncio.sleep(0.1)
        await probe.stop()
        return probe

    with caplog.at_level(logging.INFO, logger="kafpy.server.loop_lag_probe"):
        probe = asyncio.run(scenario())
    assert probe.percentile_ms(0.5) <= probe.percentile_ms(1.0)
    assert [r.getMessage() for r in caplog.records if "Event loop lag over" in r.getMessage()]


def test_full_garbage_collections_are_counted(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> LoopLagProbe:
        probe = LoopLagProbe.start()
        gc.collect()
        await probe.stop()
        gc.collect()  # after stop: not counted
        return probe

    with caplog.at_level(logging.INFO, logger="kafpy.server.loop_lag_probe"):
        probe = asyncio.run(scenario())
    assert probe.full_collections >= 1
    (summary,) = [r.getMessage() for r in caplog.records if "Event loop lag over" in r.getMessage()]
    assert f"{probe.full_collections} generation-2 garbage collections, the longest" in summary


def test_the_probe_stops_when_its_event_is_set(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        until = asyncio.Event()
        LoopLagProbe.start(until=until)
        await asyncio.sleep(0.03)
        until.set()
        (task,) = [t for t in asyncio.all_tasks() if t.get_name() == "loop-lag-probe"]
        await asyncio.wait_for(task, 30)

    with caplog.at_level(logging.INFO, logger="kafpy.server.loop_lag_probe"):
        asyncio.run(scenario())
    assert [r for r in caplog.records if "Event loop lag over" in r.getMessage()]
