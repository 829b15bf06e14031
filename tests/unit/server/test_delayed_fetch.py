"""Tests of DelayedFetch in the fetch purgatory: consumer fetches parked on many partitions
complete (by an append or by their timeout) and leave no trace in the watch lists."""

from __future__ import annotations

import asyncio
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.records.builder import build_batch
from kafpy.server.replica_manager import FetchParams, PartitionFetchInfo
from tests.unit.server.fixtures import Broker

PARTITIONS = 200
FETCHES = 60


def test_completed_fetches_over_many_partitions_are_not_kept_by_the_watch_lists(
    broker: Broker,
) -> None:
    broker.lead("t", PARTITIONS)
    rm = broker.replica_manager
    purgatory = rm.delayed_fetch_purgatory
    tps = [TopicPartition("t", p) for p in range(PARTITIONS)]
    params = FetchParams(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20)

    async def park() -> list[asyncio.Future[Any]]:
        fetches = [
            asyncio.ensure_future(
                rm.fetch_messages(params, [(tp, PartitionFetchInfo(0, 1 << 20)) for tp in tps])
            )
            for _ in range(FETCHES)
        ]
        await asyncio.sleep(0)
        assert purgatory.delayed == FETCHES
        assert purgatory.watched_total == FETCHES * PARTITIONS
        return fetches

    async def scenario() -> None:
        # an append to one partition completes every fetch watching it
        woken = await park()
        data = memoryview(bytearray(build_batch([b"x"])))
        await rm.append_records(1000, 1, {tps[7]: data})
        for f in woken:
            records = (await f)[7][1].records
            assert records is not None and len(records) > 0
        assert purgatory.delayed == 0 and purgatory.watched(tps[0]) == 0
        assert purgatory.watched_total <= purgatory.purge_interval  # was 11,940

        # fetches past the end wait, then time out: nothing stays listed either
        past_end = FetchParams(replica_id=-1, max_wait_ms=500, min_bytes=10_000, max_bytes=1 << 20)
        expiring = [
            asyncio.ensure_future(
                rm.fetch_messages(past_end, [(tp, PartitionFetchInfo(0, 1 << 20)) for tp in tps])
            )
            for _ in range(FETCHES)
        ]
        await asyncio.sleep(0)
        assert purgatory.watched_total == FETCHES * PARTITIONS
        assert broker.timer.fire_all() == FETCHES
        for f in expiring:
            await f
        assert purgatory.delayed == 0 and purgatory.watched_total <= purgatory.purge_interval

    asyncio.run(scenario())
