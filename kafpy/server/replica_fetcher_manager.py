"""ReplicaFetcherManager: which fetcher fetches which followed partition (Kafka's AbstractFetcherManager).

A broker follows partitions of several leaders; it runs `num.replica.fetchers` fetchers
per leader, and a partition always goes to the same one (Kafka's
`abs(31 * topic.hashCode + partition) % num.replica.fetchers`). Adding a partition whose
leader changed moves it to the new leader's fetcher; fetchers left with no partitions
are shut down.

Every change to `fetchers` happens in one step with no await in between (on the one
event loop that is what Kafka's fetcher-manager lock gives): shutting idle fetchers down
first takes them all out of the map, then awaits them, so a LeaderAndIsr handled
meanwhile never hands a partition to a fetcher on its way out, and a fetcher found shut
down is replaced by a new one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from kafpy.client.connection import BrokerConnection
from kafpy.cluster.partition import Partition
from kafpy.common.java_hash import java_string_hash
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.server.replica_fetcher_thread import (
    BrokerEndPoint,
    FetcherChannel,
    ReplicaFetcherConfig,
    ReplicaFetcherThread,
)
from kafpy.server.replication_quota_manager import ReplicationQuotaManager


def fetcher_id_for(tp: TopicPartition, num_fetchers: int) -> int:
    value = (31 * java_string_hash(tp.topic) + tp.partition) & 0xFFFFFFFF
    if value >= 1 << 31:
        value -= 1 << 32
    # Kafka's Utils.abs: Integer.MIN_VALUE maps to 0
    return (0 if value == -(1 << 31) else abs(value)) % num_fetchers


class ReplicaFetcherManager:
    """Runs this broker's replica fetchers, keyed by (leader, fetcher id)."""

    def __init__(
        self,
        broker_id: int,
        config: ReplicaFetcherConfig,
        partition_of: Callable[[TopicPartition], Partition | None],
        on_appended: Callable[[TopicPartition], None] = lambda tp: None,
        connect: Callable[[BrokerEndPoint], FetcherChannel] | None = None,
        quota: ReplicationQuotaManager | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.quota = quota or ReplicationQuotaManager("Follower")
        self.config = config
        self._partition_of = partition_of
        self._on_appended = on_appended
        self._connect = connect or self._default_connect
        self.fetchers: dict[tuple[BrokerEndPoint, int], ReplicaFetcherThread] = {}
        self.log = component_logger(
            "kafpy.server.ReplicaFetcherManager", f"ReplicaFetcherManager on broker {broker_id}"
        )

    def _default_connect(self, endpoint: BrokerEndPoint) -> FetcherChannel:
        return BrokerConnection(
            endpoint.host, endpoint.port, client_id=f"broker-{self.broker_id}-fetcher",
            request_timeout_ms=self.config.socket_timeout_ms, node_id=endpoint.id,
            connect_timeout_ms=min(self.config.socket_timeout_ms, 5000),
            security=self.config.security,
        )  # fmt: skip

    def add_fetcher_for_partitions(
        self, partitions: Mapping[TopicPartition, tuple[BrokerEndPoint, int, int]]
    ) -> None:
        """Fetch `tp -> (leader, initial offset, leader epoch)`; each starts by truncating."""
        self.remove_fetcher_for_partitions(partitions)
        grouped: dict[tuple[BrokerEndPoint, int], dict[TopicPartition, tuple[int, int]]] = {}
        for tp, (leader, offset, epoch) in partitions.items():
            key = (leader, fetcher_id_for(tp, self.config.num_replica_fetchers))
            grouped.setdefault(key, {})[tp] = (offset, epoch)
        for key, states in grouped.items():
            fetcher = self.fetchers.get(key)
            if fetcher is None or not fetcher.is_running:
                leader, fid = key
                fetcher = ReplicaFetcherThread(
                    f"ReplicaFetcherThread-{fid}-{leader.id}", fid, self.broker_id, leader, self.config,
                    self._partition_of, self._connect, self._on_appended, self.quota,
                )  # fmt: skip
                self.fetchers[key] = fetcher
                fetcher.start()
            fetcher.add_partitions(states)
        self.log.info(
            "Added fetcher for partitions %s",
            ", ".join(
                f"{tp} -> (leader {leader.id}, offset {off})"
                for tp, (leader, off, _) in partitions.items()
            ),
        )

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(tps)

    async def resize_thread_pool(self, new_size: int) -> None:
        """Run `new_size` fetchers per leader (Kafka's resizeThreadPool, for a dynamic
        num.replica.fetchers): every partition moves, from where it has got to, to the
        fetcher its id maps to under the new count; fetchers left without partitions stop."""
        current = self.config.num_replica_fetchers
        self.log.info("Resizing fetcher thread pool size from %d to %d", current, new_size)
        self.config = dataclasses.replace(self.config, num_replica_fetchers=new_size)
        if new_size != current:
            moved = {
                tp: (leader, state.fetch_offset, state.current_leader_epoch)
                for (leader, _), fetcher in list(self.fetchers.items())
                for tp, state in list(fetcher.partition_states.items())
            }
            if moved:
                self.add_fetcher_for_partitions(moved)
        await self.shutdown_idle_fetcher_threads()

    async def shutdown_idle_fetcher_threads(self) -> None:
        """Shut down the fetchers that have no partition left (Kafka's shutdownIdleFetcherThreads)."""
        idle = [
            self.fetchers.pop(k) for k, f in list(self.fetchers.items()) if f.partition_count == 0
        ]
        for fetcher in idle:
            await fetcher.shutdown()

    async def shutdown(self) -> None:
        self.log.info("shutting down")
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        for fetcher in fetchers:
            await fetcher.shutdown()
        self.log.info("shutdown completed")
