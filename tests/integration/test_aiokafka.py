"""aiokafka against a real `kafpy server`: producer (every codec) and consumer with assign/seek."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.fixtures.broker import KafpyBroker

N = 100


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume(kafpy_module_broker: KafpyBroker, compression: str | None) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = f"aio-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type=compression, acks="all"
        )
        await producer.start()
        try:
            batch = [
                producer.send(topic, b"v%d" % i, key=b"k%d" % i, headers=[("i", str(i).encode())],
                              timestamp_ms=1_700_000_000_000 + i)
                for i in range(N)
            ]  # fmt: skip
            metas = await asyncio.gather(*[await f for f in batch])
        finally:
            await producer.stop()
        assert [m.offset for m in metas] == list(range(N))

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got = []
            while len(got) < N:
                records = await consumer.getmany(tp, timeout_ms=5000)
                assert records, f"no records after {len(got)}"
                got += records[tp]
            assert [(m.offset, m.key, m.value) for m in got] == [
                (i, b"k%d" % i, b"v%d" % i) for i in range(N)
            ]
            assert [list(m.headers) for m in got] == [[("i", str(i).encode())] for i in range(N)]
            assert [m.timestamp for m in got] == [1_700_000_000_000 + i for i in range(N)]
            consumer.seek(tp, N - 3)
            tail = (await consumer.getmany(tp, timeout_ms=5000))[tp]
            assert [m.offset for m in tail] == [N - 3, N - 2, N - 1]
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(scenario(), 60))
