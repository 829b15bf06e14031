"""Replication in a 3-broker kafpy.testing cluster: stopping a follower never stalls
acks=all produces on the replicas left (their fetchers move to the new leader epoch and
keep fetching)."""

from __future__ import annotations

import asyncio

from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer
from kafpy.common.topic_partition import TopicPartition
from kafpy.testing import KafkaCluster

PARTITIONS = 3
# far below replica.lag.time.max.ms (30 s): a follower whose fetcher stopped would only
# leave the ISR after that, so an acks=all produce would not be acknowledged within this
ACK_TIMEOUT_MS = 10000


def test_acks_all_produce_right_after_a_follower_stops_is_acknowledged() -> None:
    with KafkaCluster(3) as cluster:
        cluster.create_topic("t", partitions=PARTITIONS, replication_factor=3)
        cluster.produce("t", [b"before"], partition=0)
        cache = cluster.server(0).metadata_cache
        assert cache is not None
        info = cache.get_partition_info(TopicPartition("t", 0))
        assert info is not None
        follower = next(b for b in (0, 1, 2) if b != info.leader and b != _controller(cluster))
        cluster.stop_broker(follower)

        async def produce() -> None:
            async with KafkaClient(
                cluster.bootstrap_servers, request_timeout_ms=ACK_TIMEOUT_MS + 5000, retries=0
            ) as client:
                producer = BatchProducer(client, acks=-1, timeout_ms=ACK_TIMEOUT_MS)
                for p in range(PARTITIONS):
                    await producer.send("t", [(None, b"after")], partition=p)

        asyncio.run(asyncio.wait_for(produce(), ACK_TIMEOUT_MS / 1000))
        assert [r.value for r in cluster.consume("t", 2, partition=0)] == [b"before", b"after"]


def _controller(cluster: KafkaCluster) -> int:
    for b in cluster.broker_ids:
        controller = cluster.server(b).controller
        if controller is not None and controller.is_active:
            return b
    raise AssertionError("no active controller")
