"""Tests of DelayedOperationPurgatory: completion on check, expiry, leaving the watch lists,
shutdown."""

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


def test_completed_operations_leave_a_checked_key_at_once_and_the_others_at_a_purge() -> None:
    timer = ManualTimer()
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory(
        "test", timer=timer, purge_interval=1
    )
    ops = [Op() for _ in range(2)]
    for op in ops:
        p.try_complete_else_watch(op, ["a", "b"])
    assert p.watched_total == 4 and p.delayed == 2
    ops[0].ready = True
    p.check_and_complete("a")  # drops ops[0] from "a"; "b" keeps it until a purge
    assert p.watched_total == 3 and p.watched("b") == 1 and p.delayed == 1
    assert timer.fire_all() == 1  # ops[1] expires: 3 dead entries, none waiting: purged
    assert p.watched_total == 0 and p.delayed == 0


def test_many_operations_over_many_keys_do_not_stay_listed_once_completed() -> None:
    """A fetch watches every partition it asked for; completed by one partition or by its
    timeout, it must not stay listed under the others (it did until `purge_interval` more
    operations came: a consumer pass over thousands of partitions grew the broker's RSS).
    Dead entries never outnumber both the purge interval and the waiting ones."""
    timer = ManualTimer()
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("test", timer=timer)
    keys = [("topic", i) for i in range(2000)]
    ops = [Op() for _ in range(300)]
    for op in ops:
        p.try_complete_else_watch(op, keys)
    assert p.watched_total == 300 * 2000 and p.delayed == 300
    for op in ops[:150]:
        op.ready = True
    assert p.check_and_complete(keys[7]) == 150
    assert p.delayed == 150 and p.watched(keys[1999]) == 150
    assert p.watched_total <= 2 * 150 * 2000 + p.purge_interval
    for handle in list(timer.pending):  # the rest time out, one by one
        timer.pending.remove(handle)
        if not handle.cancelled:
            handle.fun()
        assert p.watched_total <= 2 * p.delayed * 2000 + p.purge_interval
    assert p.delayed == 0 and p.watched_total <= p.purge_interval and p.watched(keys[0]) == 0
    assert [op.completions for op in ops] == [1] * 300


def test_shutdown_completes_everything() -> None:
    p: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("test", timer=ManualTimer())
    ops = [Op(), Op()]
    p.try_complete_else_watch(ops[0], ["a"])
    p.try_complete_else_watch(ops[1], ["a", "b"])
    p.shutdown()
    assert [o.completions for o in ops] == [1, 1]
    assert p.delayed == 0
