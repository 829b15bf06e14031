"""Tests of KafkaScheduler and MockScheduler."""

from __future__ import annotations

import threading

import pytest

from kafpy.common.scheduler import KafkaScheduler, MockScheduler
from kafpy.common.time import MockTime


def test_mock_scheduler_runs_one_shot_task_when_due() -> None:
    time = MockTime()
    sched = MockScheduler(time)
    ran: list[int] = []
    sched.schedule("one", lambda: ran.append(time.milliseconds()), delay_ms=100)
    time.advance(99)
    assert ran == []
    time.advance(1)
    assert ran == [time.milliseconds()]
    time.advance(1000)
    assert len(ran) == 1


def test_mock_scheduler_periodic_task_keeps_schedule_after_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    time = MockTime()
    sched = MockScheduler(time)
    calls: list[int] = []

    def flaky() -> None:
        calls.append(time.milliseconds())
        if len(calls) == 1:
            raise RuntimeError("boom")

    start = time.milliseconds()
    sched.schedule("kafka-log-retention", flaky, delay_ms=10, period_ms=50)
    time.advance(10)
    time.advance(50)
    time.advance(50)
    assert calls == [start + 10, start + 60, start + 110]
    assert "Uncaught exception in scheduled task 'kafka-log-retention'" in caplog.text


def test_mock_scheduler_large_advance_runs_each_period() -> None:
    time = MockTime()
    sched = MockScheduler(time)
    calls: list[int] = []
    sched.schedule("p", lambda: calls.append(1), delay_ms=0, period_ms=10)
    assert calls == [1]
    time.advance(35)
    assert len(calls) == 4


def test_cancelled_task_does_not_run() -> None:
    time = MockTime()
    sched = MockScheduler(time)
    calls: list[int] = []
    task = sched.schedule("p", lambda: calls.append(1), delay_ms=5, period_ms=10)
    task.cancel()
    time.advance(100)
    assert calls == []
    assert sched.task_names() == []


def test_kafka_scheduler_runs_tasks_on_named_threads() -> None:
    sched = KafkaScheduler(threads=2, thread_name_prefix="kafka-scheduler-")
    sched.startup()
    done = threading.Event()
    names: list[str] = []

    def task() -> None:
        names.append(threading.current_thread().name)
        done.set()

    sched.schedule("t", task, delay_ms=1)
    assert done.wait(5)
    sched.shutdown()
    assert names[0].startswith("kafka-scheduler-")
    with pytest.raises(RuntimeError, match="not running"):
        sched.schedule("late", task)


def test_kafka_scheduler_periodic_survives_exception() -> None:
    sched = KafkaScheduler(threads=1)
    sched.startup()
    count = 0
    enough = threading.Event()

    def task() -> None:
        nonlocal count
        count += 1
        if count >= 3:
            enough.set()
        raise ValueError("every time")

    sched.schedule("flaky", task, delay_ms=0, period_ms=1)
    assert enough.wait(5)
    sched.shutdown()
    assert count >= 3
