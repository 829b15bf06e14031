"""ControllerEventManager: events run one at a time in order, failures do not stop the queue,
and each event is logged with its name and duration."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kafpy.controller.controller_event_manager import ControllerEvent, ControllerEventManager
from kafpy.controller.controller_state import ControllerState


def test_events_run_one_at_a_time_in_order(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        manager = ControllerEventManager(0)
        manager.start()
        trace: list[str] = []
        running = 0

        def event(name: str, fail: bool = False) -> ControllerEvent:
            async def process() -> None:
                nonlocal running
                running += 1
                assert running == 1
                trace.append(f"start {name}")
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                trace.append(f"end {name}")
                running -= 1
                if fail:
                    raise ValueError("boom")

            return ControllerEvent(name, ControllerState.TOPIC_CHANGE, process)

        with caplog.at_level(logging.DEBUG, logger="kafpy.controller"):
            manager.put(event("A", fail=True))
            manager.put(event("B"))
            for _ in range(50):
                await asyncio.sleep(0)
            assert manager.is_idle and manager.state is ControllerState.IDLE
            await manager.close()
        assert trace == ["start A", "end A", "start B", "end B"]
        assert "Processing event A" in caplog.text
        assert "Error processing event A" in caplog.text
        assert "Processed event B in" in caplog.text

    asyncio.run(main())


def test_clear_and_put_drops_queued_events() -> None:
    async def main() -> None:
        manager = ControllerEventManager(0)
        seen: list[str] = []

        def event(name: str) -> ControllerEvent:
            async def process() -> None:
                seen.append(name)

            return ControllerEvent(name, ControllerState.CONTROLLER_CHANGE, process)

        manager.put(event("old1"))
        manager.put(event("old2"))
        manager.clear_and_put(event("new"))
        manager.start()
        for _ in range(20):
            await asyncio.sleep(0)
        await manager.close()
        assert seen == ["new"]

    asyncio.run(main())
