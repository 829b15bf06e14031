"""Tests of DelayedOperationPurgatory: completion on check, expiry, purge, shutdown."""

from __future__ import annotations

from kafpy.common.delayed_operation import DelayedOperation, DelayedOperationPurgatory
from tests.unit.server.fixtures import ManualTimer


class Op(DelayedOperation):
    def __init__(self, delay_ms: int = 100) -> None:
        super().__init__(delay_ms)
        self.ready = False
        self.completions = 0
        self.expired = False

    def try_complete(self) -> bool:
        return self.force_complete() if self.ready else False

    def on_complete(self) -> None:
        self.completions += 1

    def on_expiration(self) -> None:
        self.expired = True


def test_completes_at_once_when_ready() -> None:
    timer = ManualTimer()
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("test", timer=timer)
    op = Op()
    op.ready = True
    assert p.try_complete_else_watch(op, ["a"])
    assert op.completions == 1 and p.delayed == 0 and not timer.pending


def test_watched_operation_completes_on_check_of_any_key() -> None:
    timer = ManualTimer()
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("test", timer=timer)
    op = Op()
    assert not p.try_complete_else_watch(op, ["a", "b"])
    assert p.watched("a") == 1 and p.watched("b") == 1 and p.delayed == 1
    assert p.check_and_complete("a") == 0
    op.ready = True
    assert p.check_and_complete("b") == 1
    assert op.completions == 1 and not op.expired
    assert p.check_and_complete("a") == 0  # already completed: skipped, dropped
    assert p.watched("a") == 0 and p.delayed == 0
    assert timer.fire_all() == 0  # the timer was cancelled


def test_expiry_completes_once_and_calls_on_expiration() -> None:
    timer = ManualTimer()
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("test", timer=timer)
    op = Op(delay_ms=250)
    p.try_complete_else_watch(op, ["a"])
    assert timer.pending[0].delay_ms == 250
    assert timer.fire_all() == 1
    assert op.completions == 1 and op.expired
    op.ready = True
    assert p.check_and_complete("a") == 0
    assert op.completions == 1


def test_purge_drops_completed_operations_from_other_keys() -> None:
    timer = ManualTimer()
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory(
        "test", timer=timer, purge_interval=3
    )
    ops = [Op() for _ in range(2)]
    for op in ops:
        p.try_complete_else_watch(op, ["a", "b"])
    ops[0].ready = True
    p.check_and_complete("a")
    assert len(p._watchers["b"]) == 2  # still listed under b
    p.try_complete_else_watch(Op(), ["c"])  # the third add triggers a purge
    assert len(p._watchers["b"]) == 1


def test_shutdown_completes_everything() -> None:
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("test", timer=ManualTimer())
    ops = [Op(), Op()]
    p.try_complete_else_watch(ops[0], ["a"])
    p.try_complete_else_watch(ops[1], ["a", "b"])
    p.shutdown()
    assert [o.completions for o in ops] == [1, 1]
    assert p.delayed == 0
