"""BatchProducer against FakeBrokers: partitioning, one request per leader, retries, acks."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kafpy.client.fetcher import LATEST_TIMESTAMP, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.partitioner import partition_for_key
from kafpy.client.producer import (
    BatchProducer,
    DeliveryTimeoutError,
    ProduceResult,
    RecordsNotDeliveredError,
    parse_acks,
)
from kafpy.common.errors import MessageTooLargeError, NotLeaderOrFollowerError
from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.common.wait import async_wait_until
from kafpy.protocol.api_keys import ApiKey
from kafpy.records.compression import CompressionType
from kafpy.records.memory_records import MemoryRecords
from tests.unit.client.fake_broker import NO_RESPONSE, FakeBroker, metadata_body


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


async def no_sleep(seconds: float) -> None:
    return None


class Brokers:
    """Two fake brokers keeping produced batches per partition."""

    def __init__(self, leaders: dict[int, int]) -> None:
        self.brokers = [FakeBroker(node_id=0), FakeBroker(node_id=1)]
        self.leaders = leaders
        self.topic_error = 0
        self.logs: dict[int, list[bytes]] = {}
        self.errors: dict[int, list[int]] = {}  # partition -> error codes of its next produces

    async def __aenter__(self) -> Brokers:
        for b in self.brokers:
            await b.start()
            b.handlers[ApiKey.METADATA] = self.metadata
            b.handlers[ApiKey.PRODUCE] = self.produce
        return self

    async def __aexit__(self, *exc: object) -> None:
        for b in self.brokers:
            await b.stop()

    def metadata(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        if body["topics"] == []:
            return metadata_body(self.brokers)
        if self.topic_error:
            code, self.topic_error = self.topic_error, 0
            return metadata_body(self.brokers, topic_errors={"t": code})
        return metadata_body(self.brokers, topics={"t": dict(self.leaders)})

    def produce(self, header: Any, body: dict[str, Any]) -> Any:
        if body["acks"] == 0:
            for p in body["topic_data"][0]["partition_data"]:
                self.logs.setdefault(p["index"], []).append(bytes(p["records"]))
            return NO_RESPONSE
        answers = []
        for p in body["topic_data"][0]["partition_data"]:
            queued = self.errors.get(p["index"])
            code = queued.pop(0) if queued else 0
            log = self.logs.setdefault(p["index"], [])
            base = sum(MemoryRecords(b).batches().__next__().record_count for b in log)
            if not code:
                log.append(bytes(p["records"]))
            answers.append({"index": p["index"], "error_code": code, "base_offset": base})
        return {"responses": [{"name": "t", "partition_responses": answers}]}

    def records(self, partition: int) -> list[tuple[bytes | None, bytes | None]]:
        return [
            (r.key, r.value)
            for data in self.logs.get(partition, [])
            for r in MemoryRecords(data).records()
        ]

    def client(self) -> KafkaClient:
        return KafkaClient(self.brokers[0].address, sleep=no_sleep, retries=3)


def test_keys_go_where_kafka_puts_them_one_request_per_leader() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0, 1: 1, 2: 0}) as b, b.client() as client:
            producer = BatchProducer(client)
            keys = [f"k{i}".encode() for i in range(12)]
            results = await producer.send("t", [(k, b"v" + k) for k in keys])
            for k in keys:
                assert (k, b"v" + k) in b.records(partition_for_key(k, 3))
            assert sum(r.record_count for r in results) == 12
            assert len(b.brokers[0].requests_of(ApiKey.PRODUCE)) == 1  # partitions 0 and 2
            assert len(b.brokers[1].requests_of(ApiKey.PRODUCE)) == 1
            again = await producer.send("t", [(keys[0], b"second")])
            p = partition_for_key(keys[0], 3)
            assert again == [ProduceResult(TopicPartition("t", p), len(b.records(p)) - 1, 1)]

    run(scenario())


def test_records_without_key_stick_to_one_partition_per_call() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0, 1: 0}) as b, b.client() as client:
            producer = BatchProducer(client, compression=CompressionType.GZIP)
            first = await producer.send("t", [(None, b"a"), (None, b"b")])
            second = await producer.send("t", [(None, b"c")])
            assert [r.tp.partition for r in first] == [0]
            assert [r.tp.partition for r in second] == [1]
            assert b.records(0) == [(None, b"a"), (None, b"b")]
            batch = next(MemoryRecords(b.logs[0][0]).batches())
            assert batch.compression_type is CompressionType.GZIP
            chosen = await producer.send("t", [(b"key", b"x")], partition=0)
            assert chosen[0].tp == TopicPartition("t", 0) and chosen[0].base_offset == 2

    run(scenario())


def test_retriable_partition_error_is_retried_after_metadata_refresh() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0, 1: 0}) as b, b.client() as client:
            b.errors[1] = [6]  # NOT_LEADER_OR_FOLLOWER once
            producer = BatchProducer(client)
            before = len(b.brokers[0].requests_of(ApiKey.METADATA))
            await producer.send("t", [(None, b"x")], partition=1)
            await producer.send("t", [(None, b"y")], partition=0)
            assert b.records(1) == [(None, b"x")]
            # one refresh to learn the topic, one before the retry
            assert len(b.brokers[0].requests_of(ApiKey.METADATA)) == before + 2
            # the retry carried only the failed partition
            produce = b.brokers[0].requests_of(ApiKey.PRODUCE)
            assert [len(r.body["topic_data"][0]["partition_data"]) for r in produce] == [1, 1, 1]

    run(scenario())


def test_errors_surface_with_the_partition_named() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0}) as b, b.client() as client:
            producer = BatchProducer(client)
            b.errors[0] = [10]
            with pytest.raises(
                RecordsNotDeliveredError, match="Producing to t-0: The request"
            ) as e:
                await producer.send("t", [(None, b"x" * 10)])
            assert [(i, type(err)) for i, err in e.value.errors] == [(0, MessageTooLargeError)]
            b.errors[0] = [6] * 4  # one more failure than retries
            with pytest.raises(RecordsNotDeliveredError, match="Producing to t-0") as e:
                await producer.send("t", [(None, b"x")])
            assert [(i, type(err)) for i, err in e.value.errors] == [(0, NotLeaderOrFollowerError)]
            assert b.errors[0] == [] and b.records(0) == []

    run(scenario())


def test_batches_are_cut_by_batch_size_and_requests_by_max_request_size() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0, 1: 0}) as b, b.client() as client:
            producer = BatchProducer(client, batch_size=1000, max_request_size=2500)
            records = [(None, b"%04d" % i + b"x" * 96) for i in range(40)]
            results = await producer.send("t", records, partition=0)
            batches = [next(MemoryRecords(data).batches()) for data in b.logs[0]]
            assert all(len(data) <= 1000 for data in b.logs[0]) and len(batches) > 4
            assert b.records(0) == records  # in order, none lost
            assert [r.record_count for r in results] == [x.record_count for x in batches]
            # two partitions' batches share a request only within max.request.size
            await producer.send_records(
                {TopicPartition("t", 0): records[:9], TopicPartition("t", 1): records[:9]}
            )
            last = b.brokers[0].requests_of(ApiKey.PRODUCE)[-1].body["topic_data"][0]
            assert len(last["partition_data"]) == 2
            await producer.send_records(
                {TopicPartition("t", 0): records[:20], TopicPartition("t", 1): records[:20]}
            )
            for request in b.brokers[0].requests_of(ApiKey.PRODUCE):
                parts = request.body["topic_data"][0]["partition_data"]
                assert sum(len(p["records"]) for p in parts) <= 2500

    run(scenario())


def test_a_record_too_large_fails_alone() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0}) as b, b.client() as client:
            producer = BatchProducer(client, max_request_size=3000)
            records = [(None, b"a"), (None, b"x" * 5000), (None, b"b")]
            with pytest.raises(RecordsNotDeliveredError, match="max.request.size") as e:
                await producer.send("t", records)
            assert [i for i, _ in e.value.errors] == [1]
            assert b.records(0) == [(None, b"a"), (None, b"b")]
            # the broker refusing a batch as too large: split, only the culprit fails
            b.errors[0] = [10, 0, 10]
            with pytest.raises(RecordsNotDeliveredError) as e:
                await producer.send("t", [(None, b"c"), (None, b"d" * 100)])
            assert [(i, type(err)) for i, err in e.value.errors] == [(1, MessageTooLargeError)]
            assert b.records(0)[2:] == [(None, b"c")]

    run(scenario())


def test_topic_coming_online_is_waited_for_with_auto_creation_allowed() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0}) as b, b.client() as client:
            await client.start()
            b.topic_error = 5  # LEADER_NOT_AVAILABLE while it is being created
            await BatchProducer(client).send("t", [(None, b"x")])
            asks = [r.body for r in b.brokers[0].requests_of(ApiKey.METADATA) if r.body["topics"]]
            assert asks and all(a["allow_auto_topic_creation"] for a in asks)
            assert b.records(0) == [(None, b"x")]

    run(scenario())


def test_acks_zero_expects_no_answer() -> None:
    async def scenario() -> None:
        async with Brokers({0: 0}) as b, b.client() as client:
            results = await BatchProducer(client, acks=0).send("t", [(None, b"x")])
            assert results == [ProduceResult(TopicPartition("t", 0), -1, 1)]
            while not b.logs:
                await asyncio.sleep(0)
            assert b.records(0) == [(None, b"x")]

    run(scenario())


def test_parse_acks() -> None:
    assert [parse_acks(v) for v in ("all", "-1", "0", "1", 1)] == [-1, -1, 0, 1, 1]
    with pytest.raises(ValueError, match="acks"):
        parse_acks("2")


def test_concurrent_idempotent_sends_to_one_partition_keep_its_sequence() -> None:
    """Sends run concurrently (as producer-perf-test's chunks) reach the broker in sequence
    order; before, they could overtake each other (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    from kafpy.testing import KafkaBroker

    with KafkaBroker() as broker:
        broker.create_topic("seq", partitions=1)

        async def go() -> None:
            async with KafkaClient(broker.bootstrap_servers) as client:
                producer = BatchProducer(client, acks=-1, batch_size=300)
                await producer.init_producer_id()
                sends = [
                    producer.send("seq", [(None, b"%d-%d" % (i, j)) for j in range(20)])
                    for i in range(8)
                ]
                await asyncio.gather(*sends)

        run(go())
        assert len(broker.consume("seq", 160)) == 160


def test_a_send_nowhere_to_go_fails_with_the_delivery_timeout() -> None:
    """No broker answering: the send waits (connection failures use no retry) until
    delivery.timeout.ms has passed since it began, then fails with Kafka's timeout, not
    the last connection error."""
    clock = MockTime()

    async def sleep(seconds: float) -> None:
        clock.advance(round(seconds * 1000))

    async def scenario() -> None:
        async with Brokers({0: 0}) as b:
            async with KafkaClient(b.brokers[0].address, sleep=sleep, retries=3) as client:
                producer = BatchProducer(client, delivery_timeout_ms=1000, time=clock)
                await producer.send("t", [(None, b"a")], partition=0)
                for broker in b.brokers:
                    await broker.stop()
                with pytest.raises(RecordsNotDeliveredError) as e:
                    await producer.send("t", [(None, b"x"), (None, b"y")], partition=0)
        assert str(e.value) == (
            "Expiring 2 record(s) for t-0:1000 ms has passed since batch creation "
            "(1 more record not delivered)"
        )
        assert [i for i, _ in e.value.errors] == [0, 1]
        assert all(type(err) is DeliveryTimeoutError for _, err in e.value.errors)
        assert e.value.retriable  # Kafka's TimeoutException is a RetriableException

    run(scenario())


def test_retriable_errors_past_the_delivery_timeout_expire_the_batch() -> None:
    """A partition error is retried while retries last and the deadline allows."""
    clock = MockTime()

    async def sleep(seconds: float) -> None:
        clock.advance(round(seconds * 1000))

    async def scenario() -> None:
        async with Brokers({0: 0}) as b:
            async with KafkaClient(b.brokers[0].address, sleep=sleep) as client:
                producer = BatchProducer(client, delivery_timeout_ms=250, retries=100, time=clock)
                b.errors[0] = [6] * 10  # NOT_LEADER_OR_FOLLOWER, more often than the time allows
                with pytest.raises(RecordsNotDeliveredError, match="Expiring 1 record") as e:
                    await producer.send("t", [(None, b"x")], partition=0)
                assert type(e.value.errors[0][1]) is DeliveryTimeoutError
                assert len(b.errors[0]) == 7  # tried at 0, 100 and 200 ms
                assert b.records(0) == []

    run(scenario())


def test_an_idempotent_send_survives_its_broker_restarting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The broker goes down before a send and comes back on its port while the send waits:
    every record is delivered, once."""
    from kafpy.testing import KafkaBroker

    records = [(None, b"r%03d" % i) for i in range(60)]
    with KafkaBroker() as broker:
        broker.create_topic("restart", partitions=1)

        async def go() -> int:
            async with KafkaClient(broker.bootstrap_servers, retries=1) as client:
                producer = BatchProducer(client, acks=-1, batch_size=300)
                await producer.init_producer_id()
                await producer.send("restart", [(None, b"before")])
                await asyncio.to_thread(broker.stop_broker, 0)
                with caplog.at_level(logging.DEBUG, logger="kafpy.client.producer"):
                    sending = asyncio.create_task(producer.send("restart", records))
                    await async_wait_until(
                        lambda: sending.done() or "waits for" in caplog.text,
                        what="the send waiting for the broker",
                    )
                    assert not sending.done(), sending
                await asyncio.to_thread(broker.start_broker, 0)
                results = await sending
                assert sum(r.record_count for r in results) == len(records)
                tp = TopicPartition("restart", 0)
                ends = await Fetcher(client).list_offsets([tp], LATEST_TIMESTAMP)
                return ends[tp]

        assert run(go()) == 1 + len(records)
        got = broker.consume("restart", 1 + len(records))
        assert [r.value for r in got] == [b"before"] + [v for _, v in records]
