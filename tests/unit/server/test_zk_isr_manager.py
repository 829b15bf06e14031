"""Tests of ZkIsrManager's isr-change-propagation: /isr_change_notification written on
Kafka's schedule (a lone change after the blackout, a storm every max interval), through
ReplicaManager on MockTime with an in-memory metadata store."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from kafpy.common.topic_partition import TopicPartition

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class _Propagation:
    """A ReplicaManager on MockTime with an in-memory metadata store, to watch
    isr-change-propagation write /isr_change_notification nodes."""

    def __init__(self, tmp_path: Path, **kw: Any) -> None:
        from kafpy.common.scheduler import MockScheduler
        from kafpy.common.time import MockTime
        from kafpy.metadata.embedded_store import EmbeddedStore
        from kafpy.metadata.kafka_zk_client import KafkaZkClient
        from kafpy.server.metadata_cache import MetadataCache
        from kafpy.server.replica_manager import ReplicaManager
        from kafpy.storage.log_manager import LogManager

        self.time = MockTime()
        self.store = EmbeddedStore(None, time=self.time)
        self.zk = KafkaZkClient(self.store)
        log_manager = LogManager(
            [tmp_path / "d"], scheduler=MockScheduler(self.time), time=self.time
        )
        self.rm = ReplicaManager(0, log_manager, MetadataCache(0), MockScheduler(self.time), self.time,
                                 zk_client=self.zk, **kw)  # fmt: skip

    async def start(self) -> None:
        await self.store.start()
        await self.zk.make_sure_persistent_paths_exist()

    async def notifications(self) -> list[set[TopicPartition]]:
        from kafpy.metadata.zk_data import IsrChangeNotificationSequenceZNode as Node

        children = sorted(await self.store.get_children("/isr_change_notification"))
        return [
            Node.decode((await self.store.get(f"/isr_change_notification/{c}"))[0])
            for c in children
        ]

    async def tick(self, ms: int) -> list[set[TopicPartition]]:
        """Advance the clock, run one round of isr-change-propagation; the nodes so far."""
        self.time.advance(ms)
        await self.rm.maybe_propagate_isr_changes()
        return await self.notifications()


def test_isr_change_propagation_defaults_are_kafkas(tmp_path: Path) -> None:
    p = _Propagation(tmp_path)
    assert (
        p.rm.isr_change_propagation_blackout_ms,
        p.rm.isr_change_propagation_max_interval_ms,
    ) == (5000, 60000)
    assert p.rm.isr_change_propagation_check_ms == 2500


def test_a_lone_isr_change_is_announced_after_the_blackout(tmp_path: Path) -> None:
    p = _Propagation(tmp_path)
    a, b, c = TopicPartition("a", 0), TopicPartition("b", 1), TopicPartition("c", 2)

    async def scenario() -> None:
        await p.start()
        assert await p.tick(2500) == []  # nothing changed: nothing written
        p.rm.record_isr_change(a)
        assert await p.tick(2500) == []  # within the blackout
        p.rm.record_isr_change(b)  # restarts the blackout
        assert await p.tick(2500) == []
        assert await p.tick(2500) == []  # 5000 ms after the last change: not yet (strictly after)
        assert await p.tick(1) == [{a, b}]  # one node for both
        assert not p.rm.isr_change_set
        assert await p.tick(70_000) == [{a, b}]  # nothing new: nothing written
        # the last announcement is over 60 s old: the next round announces at once
        p.rm.record_isr_change(c)
        assert await p.tick(1) == [{a, b}, {c}]

    run(scenario())


def test_a_storm_of_isr_changes_is_announced_every_max_interval(tmp_path: Path) -> None:
    p = _Propagation(tmp_path)

    async def scenario() -> list[int]:
        await p.start()
        written_at: list[int] = []
        start = p.time.milliseconds()
        for i in range(150):  # a change every second for 150 s: the blackout never passes
            p.rm.record_isr_change(TopicPartition("t", i))
            if len(await p.tick(1000)) > len(written_at):
                written_at.append(p.time.milliseconds() - start)
        return written_at

    # the last announcement (or start-up) more than 60 s ago
    assert run(scenario()) == [61_000, 122_000]


def test_isr_change_propagation_timings_are_configurable(tmp_path: Path) -> None:
    p = _Propagation(tmp_path, isr_change_propagation_blackout_ms=300,
                     isr_change_propagation_max_interval_ms=3000)  # fmt: skip
    assert p.rm.isr_change_propagation_check_ms == 150
    tp = TopicPartition("t", 0)

    async def scenario() -> None:
        await p.start()
        p.rm.record_isr_change(tp)
        assert await p.tick(300) == []
        assert await p.tick(1) == [{tp}]

    run(scenario())
