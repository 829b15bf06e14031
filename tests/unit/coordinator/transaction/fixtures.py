"""A transaction coordinator over an in-memory __transaction_state (FakeOffsetsLog), a mock
clock and marker channels that record each WriteTxnMarkers request and answer it as the
test says."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_config import TransactionConfig
from kafpy.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from kafpy.coordinator.transaction.transaction_marker_channel_manager import (
    Destination,
    LeaderEndpoint,
    TransactionMarkerChannelManager,
)
from kafpy.coordinator.transaction.transaction_state_manager import TransactionStateManager
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import async_wait_until
from tests.unit.coordinator.fakes import FakeOffsetsLog

T = TypeVar("T")
TXN_PARTITIONS = 4


class RecordingChannel:
    """A connection to one broker: records requests, answers each partition with the next
    code queued for it in `cluster.answers` (NONE when none is queued)."""

    def __init__(self, cluster: FakeCluster, broker_id: int) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.connected = False

    async def connect(self) -> None:
        self.connected = True

    def pick_version(self, api_key: int) -> int:
        return 1

    async def send(
        self, api_key: int, body: dict[str, Any], version: int | None = None
    ) -> dict[str, Any]:
        self.cluster.requests.append((self.broker_id, body))
        markers = []
        for m in body["markers"]:
            topics = []
            for t in m["topics"]:
                parts = []
                for p in t["partition_indexes"]:
                    queued = self.cluster.answers.get(TopicPartition(t["name"], p))
                    parts.append(
                        {"partition_index": p, "error_code": queued.pop(0) if queued else 0}
                    )
                topics.append({"name": t["name"], "partitions": parts})
            markers.append({"producer_id": m["producer_id"], "topics": topics})
        return {"markers": markers}

    def close(self) -> None:
        self.connected = False


class FakeCluster:
    """Leaders per partition (`leaders`), queued answers, and every request sent."""

    def __init__(self) -> None:
        self.leaders: dict[TopicPartition, int] = {}
        self.answers: dict[TopicPartition, list[int]] = {}
        self.requests: list[tuple[int, dict[str, Any]]] = []

    def leader_for(self, tp: TopicPartition) -> LeaderEndpoint | Destination:
        leader = self.leaders.get(tp)
        if leader is None:
            return Destination.GONE
        if leader < 0:
            return Destination.NO_LEADER
        return LeaderEndpoint(leader, "127.0.0.1", 9000 + leader)

    def marked(self) -> list[tuple[int, TopicPartition, bool, int]]:
        """(broker, partition, commit?, producer epoch) of every marker sent."""
        return [
            (broker, TopicPartition(t["name"], p), m["transaction_result"], m["producer_epoch"])
            for broker, body in self.requests
            for m in body["markers"]
            for t in m["topics"]
            for p in t["partition_indexes"]
        ]


class Ids:
    def __init__(self) -> None:
        self._next = itertools.count(1000)

    async def generate_producer_id(self) -> int:
        return next(self._next)


class TxnHarness:
    """Everything a coordinator test needs, built on the running loop."""

    def __init__(self, config: TransactionConfig | None = None) -> None:
        self.config = config or TransactionConfig(transaction_log_num_partitions=TXN_PARTITIONS)
        self.time = MockTime()
        self.log = FakeOffsetsLog()
        self.cluster = FakeCluster()
        self.state_manager = TransactionStateManager(0, self.config, self.log, self.time)
        self.markers = TransactionMarkerChannelManager(
            0, self.state_manager, self.cluster.leader_for,
            lambda broker_id, host, port: RecordingChannel(self.cluster, broker_id),
            retry_backoff_s=0.001,
        )  # fmt: skip
        self.coordinator = TransactionCoordinator(
            0, self.config, self.state_manager, self.markers, Ids(), self.time
        )

    async def own_all(self, epoch: int = 0) -> None:
        for p in range(self.config.transaction_log_num_partitions):
            self.coordinator.on_election(p, epoch)
        await async_wait_until(
            lambda: not self.state_manager.loading_partitions, 5.0, interval_s=0.001
        )

    async def settle(self) -> None:
        """Wait until every marker is sent and every transaction completed."""
        await async_wait_until(
            lambda: not self.markers.pending_transactional_ids(), 5.0, interval_s=0.001
        )

    async def close(self) -> None:
        await self.coordinator.shutdown()


def run(test: Callable[[TxnHarness], Awaitable[T]], config: TransactionConfig | None = None) -> T:
    async def main() -> T:
        harness = TxnHarness(config)
        try:
            return await test(harness)
        finally:
            await harness.close()

    return asyncio.run(main())


__all__ = ["Errors", "TxnHarness", "run"]
