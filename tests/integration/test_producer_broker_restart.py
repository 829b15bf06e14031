"""kafpy's own producer (BatchProducer) across a `kafpy server` killed (SIGKILL) and
started again on its port: a send begun while the broker is down waits for it, within
delivery.timeout.ms, and delivers every record once."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from kafpy.client.fetcher import LATEST_TIMESTAMP, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer
from kafpy.common.topic_partition import TopicPartition
from kafpy.common.wait import async_wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.transactions import read_values


def test_an_idempotent_send_survives_a_killed_broker_started_again(
    kafpy_broker: KafpyBroker, caplog: pytest.LogCaptureFixture
) -> None:
    topic = f"restart-{uuid.uuid4().hex[:8]}"
    values = [b"v%04d" % i for i in range(200)]

    async def go() -> int:
        async with KafkaClient(kafpy_broker.bootstrap) as client:
            # Kafka's retries are unbounded within delivery.timeout.ms: the restarted broker
            # answers NOT_LEADER_OR_FOLLOWER until it leads its partitions again (that
            # waiting for an unreachable broker uses no retry, tests/unit/client shows)
            producer = BatchProducer(client, acks=-1, batch_size=1000, retries=2**31 - 1)
            await producer.init_producer_id()
            await producer.send(topic, [(None, b"before")], partition=0)  # creates the topic
            kafpy_broker.kill()
            with caplog.at_level(logging.DEBUG, logger="kafpy.client.producer"):
                sending = asyncio.create_task(
                    producer.send(topic, [(None, v) for v in values], partition=0)
                )
                await async_wait_until(
                    lambda: sending.done() or "waits for" in caplog.text,
                    what="the send waiting for the broker",
                )
                assert not sending.done(), sending
            await asyncio.to_thread(kafpy_broker.start)
            results = await sending
            assert sum(r.record_count for r in results) == len(values)
            tp = TopicPartition(topic, 0)
            return (await Fetcher(client).list_offsets([tp], LATEST_TIMESTAMP))[tp]

    assert asyncio.run(asyncio.wait_for(go(), 120)) == 1 + len(values)
    read = read_values(kafpy_broker.bootstrap, [(topic, 0)], "read_uncommitted")
    assert read == sorted([b"before", *values])
