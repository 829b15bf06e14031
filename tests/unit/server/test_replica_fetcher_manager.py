"""ReplicaFetcherManager: adding partitions and shutting idle fetchers down never lose one."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Mapping
from typing import Any, cast

from kafpy.cluster.partition import Partition
from kafpy.common.topic_partition import TopicPartition
from kafpy.server.replica_fetcher_manager import ReplicaFetcherManager
from kafpy.server.replica_fetcher_thread import BrokerEndPoint, FetcherChannel, ReplicaFetcherConfig

LEADER_0 = BrokerEndPoint(0, "127.0.0.1", 1)
LEADER_2 = BrokerEndPoint(2, "127.0.0.1", 3)


class SilentLeader:
    """A leader that never answers: the fetchers keep their partitions and just wait."""

    async def connect(self) -> None:
        await asyncio.Event().wait()

    async def send(
        self, api_key: int, body: Mapping[str, Any], version: int | None = None,
        *, timeout_ms: int | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        raise AssertionError("never connected")

    def close(self) -> None:
        pass


def partition_of(tp: TopicPartition) -> Partition | None:
    return cast(Partition, types.SimpleNamespace(log=object(), latest_epoch=0))


def connect(endpoint: BrokerEndPoint) -> FetcherChannel:
    return SilentLeader()


def test_a_partition_re_added_while_idle_fetchers_shut_down_keeps_being_fetched() -> None:
    # A LeaderAndIsr handled while the previous one's shutdown_idle_fetcher_threads is
    # awaiting a fetcher's shutdown must not hand its partition to a fetcher that is
    # about to be shut down: that partition would never be fetched again.
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)

    async def go() -> None:
        manager = ReplicaFetcherManager(1, ReplicaFetcherConfig(), partition_of, connect=connect)
        try:
            manager.add_fetcher_for_partitions({a: (LEADER_0, 0, 1), b: (LEADER_2, 0, 1)})
            await asyncio.sleep(0)
            manager.remove_fetcher_for_partitions([a, b])
            shutting_down = asyncio.create_task(manager.shutdown_idle_fetcher_threads())
            await asyncio.sleep(0)  # it is now awaiting the first idle fetcher's shutdown
            manager.add_fetcher_for_partitions({b: (LEADER_2, 0, 2)})
            await shutting_down
            fetcher = manager.fetchers.get((LEADER_2, 0))
            assert fetcher is not None and fetcher.is_running
            assert b in fetcher.partition_states
        finally:
            await manager.shutdown()

    asyncio.run(go())


def test_adding_to_a_shut_down_fetcher_starts_a_new_one() -> None:
    a = TopicPartition("a", 0)

    async def go() -> None:
        manager = ReplicaFetcherManager(1, ReplicaFetcherConfig(), partition_of, connect=connect)
        try:
            manager.add_fetcher_for_partitions({a: (LEADER_0, 0, 1)})
            old = manager.fetchers[(LEADER_0, 0)]
            await old.shutdown()
            manager.add_fetcher_for_partitions({a: (LEADER_0, 0, 2)})
            new = manager.fetchers[(LEADER_0, 0)]
            assert new is not old and new.is_running
            assert new.partition_states[a].current_leader_epoch == 2
        finally:
            await manager.shutdown()

    asyncio.run(go())
