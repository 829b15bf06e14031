"""Waiting in tests for something that happens eventually: `wait_until` and its async twin.

A test that starts brokers waits for what they do in their own time (a leader elected, a
segment deleted, a registration gone). `wait_until(condition, timeout_s)` polls
`condition` every `interval_s` until it returns something truthy, which it returns; when
`timeout_s` passes first it fails with what was awaited and the last value (or exception)
seen, or calls `on_timeout` for a failure of the caller's own. The timeout bounds the
wait and is never what a test asserts. `async_wait_until` does the same on an event loop
(`condition` may be a coroutine function or a plain one).

This is the one polling helper of kafpy: of its own tests, of kafpy.testing, of the
broker launcher and of `kafpy cluster`. Application test suites use it as
`kafpy.testing.wait` (as Kafka's TestUtils.waitUntilTrue).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar, cast, overload

__all__ = ["WaitTimeout", "async_wait_until", "wait_until"]

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """What `wait_until` waited for did not happen in time (a test failure)."""


def wait_until(
    condition: Callable[[], T | None],
    timeout_s: float = 30.0,
    what: str = "the condition",
    *,
    interval_s: float = 0.1,
    retry_on: tuple[type[BaseException], ...] = (),
    context: Callable[[], str] | None = None,
    on_timeout: Callable[[], object] | None = None,
) -> T:
    """Poll `condition` until it returns something truthy, and return that.

    Parameters:
        timeout_s: how long to wait before failing.
        what: what is awaited, for the failure message.
        interval_s: the pause between two polls.
        retry_on: exceptions of `condition` that mean "not yet" (any other is raised).
        context: called on timeout; its text ends the failure message (e.g. a log tail).
        on_timeout: called on timeout instead of raising WaitTimeout (it should raise);
            WaitTimeout is raised should it return.
    """
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = condition()
        except retry_on as e:
            last = e
        else:
            if last:
                return cast(T, last)
        if time.monotonic() > deadline:
            _timed_out(timeout_s, what, last, context, on_timeout)
        time.sleep(interval_s)


@overload
async def async_wait_until(
    condition: Callable[[], Awaitable[T | None]],
    timeout_s: float = 30.0,
    what: str = "the condition",
    *,
    interval_s: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = (),
    context: Callable[[], str] | None = None,
    on_timeout: Callable[[], object] | None = None,
) -> T: ...


@overload
async def async_wait_until(
    condition: Callable[[], T | None],
    timeout_s: float = 30.0,
    what: str = "the condition",
    *,
    interval_s: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = (),
    context: Callable[[], str] | None = None,
    on_timeout: Callable[[], object] | None = None,
) -> T: ...


async def async_wait_until(
    condition: Callable[[], Any],
    timeout_s: float = 30.0,
    what: str = "the condition",
    *,
    interval_s: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = (),
    context: Callable[[], str] | None = None,
    on_timeout: Callable[[], object] | None = None,
) -> Any:
    """`wait_until` on the running event loop: the pauses are `asyncio.sleep`s, and a
    coroutine `condition` is awaited."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = condition()
            if inspect.isawaitable(last):
                last = await last
        except retry_on as e:
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            _timed_out(timeout_s, what, last, context, on_timeout)
        await asyncio.sleep(interval_s)


def _timed_out(
    timeout_s: float,
    what: str,
    last: object,
    context: Callable[[], str] | None,
    on_timeout: Callable[[], object] | None,
) -> NoReturn:
    if on_timeout is not None:
        on_timeout()
    message = f"Timed out after {timeout_s:g} s waiting for {what}; last seen: {last!r}"
    if context is not None:
        message += f"\n{context()}"
    raise WaitTimeout(message)
