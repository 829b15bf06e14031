"""kafpy.testing.wait: where application test suites find kafpy.common.wait's helpers."""

from __future__ import annotations

import kafpy.common.wait
import kafpy.testing.wait


def test_the_helpers_are_kafpy_common_waits() -> None:
    for name in ("WaitTimeout", "async_wait_until", "wait_until"):
        assert getattr(kafpy.testing.wait, name) is getattr(kafpy.common.wait, name)
    assert kafpy.testing.wait.__all__ == ["WaitTimeout", "async_wait_until", "wait_until"]
