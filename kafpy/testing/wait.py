"""`wait_until` and `async_wait_until` for application test suites (kafpy.common.wait).

A test that starts brokers waits for what they do in their own time: `wait_until(condition,
timeout_s, what)` polls `condition` until it returns something truthy and returns that, or
fails with WaitTimeout (an AssertionError) naming what was awaited and the last value seen.
The helper lives in kafpy.common.wait, below the broker launcher and `kafpy cluster`,
which poll with it too; this module is where application tests find it.
"""

from __future__ import annotations

from kafpy.common.wait import WaitTimeout, async_wait_until, wait_until

__all__ = ["WaitTimeout", "async_wait_until", "wait_until"]
