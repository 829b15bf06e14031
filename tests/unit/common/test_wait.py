"""Tests of kafpy.common.wait (kafpy.testing.wait to users): polling until a condition
holds, failing with a sentence."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from kafpy.common.wait import WaitTimeout, async_wait_until, wait_until


def _answers(*values: object) -> Callable[[], object]:
    """A condition answering `values` in turn (raising those that are exceptions)."""
    it: Iterator[object] = iter(values)

    def condition() -> object:
        value = next(it)
        if isinstance(value, BaseException):
            raise value
        return value

    return condition


def test_returns_the_first_truthy_value() -> None:
    assert wait_until(_answers(None, 0, [], {"leader": 1}), 30, interval_s=0) == {"leader": 1}


def test_fails_with_what_was_awaited_the_last_value_and_the_context() -> None:
    with pytest.raises(WaitTimeout) as failed:
        wait_until(lambda: [], 0, "a leader", context=lambda: "--- broker 0 log")
    assert str(failed.value) == (
        "Timed out after 0 s waiting for a leader; last seen: []\n--- broker 0 log"
    )
    assert isinstance(failed.value, AssertionError)  # a test failure, not an error


def test_exceptions_named_in_retry_on_mean_not_yet_and_others_are_raised() -> None:
    condition = _answers(ConnectionError("refused"), KeyError("node"), True)
    assert wait_until(condition, 30, interval_s=0, retry_on=(ConnectionError, KeyError))
    with pytest.raises(ValueError, match="bad"):
        wait_until(_answers(ValueError("bad")), 30, retry_on=(ConnectionError,))
    with pytest.raises(WaitTimeout, match=r"last seen: ConnectionError\('refused'\)"):
        wait_until(_answers(ConnectionError("refused")), 0, retry_on=(ConnectionError,))


def test_on_timeout_replaces_the_failure() -> None:
    class Mine(Exception):
        pass

    def give_up() -> None:
        raise Mine("the broker did not start")

    with pytest.raises(Mine):
        wait_until(lambda: False, 0, on_timeout=give_up)
    # should it return, the wait still fails
    with pytest.raises(WaitTimeout):
        wait_until(lambda: False, 0, on_timeout=lambda: None)


def test_async_wait_until_awaits_coroutine_conditions_and_plain_ones() -> None:
    answers = _answers(None, ConnectionError("refused"), "ready")

    async def condition() -> object:
        await asyncio.sleep(0)
        return answers()

    async def main() -> None:
        got = await async_wait_until(condition, 30, interval_s=0, retry_on=(ConnectionError,))
        assert got == "ready"
        assert await async_wait_until(_answers(0, 7), 30, interval_s=0) == 7
        with pytest.raises(WaitTimeout, match="waiting for the ISR to shrink; last seen: 0"):
            await async_wait_until(lambda: 0, 0, "the ISR to shrink")

    asyncio.run(main())
