"""Incremental fetch sessions (KIP-227) against a real `kafpy server`: kafka-python
consumers fetch in a session (the broker's FetchSessionCache metrics show it) and consume
every record; librdkafka (confluent-kafka), which sends every Fetch sessionless (session
id 0, epoch -1: it implements no fetch sessions), consumes every record and opens none;
raw Fetch v11 requests with a stale epoch or an unknown session id get
INVALID_FETCH_SESSION_EPOCH and FETCH_SESSION_ID_NOT_FOUND."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, free_port
from tests.integration.test_broker_metrics import scrape

PARTITIONS = 4
SESSIONS = "kafka_server_fetchsessioncache_numincrementalfetchsessions"
CACHED = "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"


class SessionBroker(KafpyBroker):
    """A `kafpy server` serving metrics on a free loopback port."""

    def __init__(self, data_dir: Path) -> None:
        self.metrics_port = free_port()
        super().__init__(data_dir, {
            "kafpy.metrics.listener": f"http://127.0.0.1:{self.metrics_port}",
            "offsets.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        })  # fmt: skip

    def gauge(self, name: str) -> float:
        return scrape(f"http://127.0.0.1:{self.metrics_port}/metrics").get((name, ()), 0.0)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionBroker]:
    b = SessionBroker(tmp_path_factory.mktemp("fetch-sessions"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


def new_topic(broker: SessionBroker) -> str:
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    return topic


def produce(broker: SessionBroker, topic: str, count: int, tag: str) -> set[bytes]:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    values = {f"{tag}-{i}".encode() for i in range(count)}
    for i, v in enumerate(sorted(values)):
        producer.produce(topic, value=v, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


def test_librdkafka_consumes_with_sessionless_fetches(broker: SessionBroker) -> None:
    topic = new_topic(broker)
    sent = produce(broker, topic, 200, "a")
    sessions_before = broker.gauge(SESSIONS)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})  # fmt: skip
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    try:
        got: set[bytes] = set()

        def poll_until(wanted: set[bytes]) -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.add(msg.value())
            return wanted <= got

        wait_until(lambda: poll_until(sent), 30, "librdkafka consumed every record")
        # librdkafka's fetches carry epoch -1: the broker keeps no session for them
        assert broker.gauge(SESSIONS) == sessions_before
        more = produce(broker, topic, 40, "b")
        wait_until(lambda: poll_until(sent | more), 30, "librdkafka consumed the new records")
        assert got == sent | more
    finally:
        consumer.close()


def test_kafka_python_consumes_in_a_fetch_session(broker: SessionBroker) -> None:
    topic = new_topic(broker)
    sent = produce(broker, topic, 200, "a")
    sessions_before = broker.gauge(SESSIONS)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             fetch_max_wait_ms=100)  # fmt: skip
    consumer.assign([KpTopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    try:
        got: set[bytes] = set()

        def poll_until(wanted: set[bytes]) -> bool:
            for records in consumer.poll(200).values():
                got.update(r.value for r in records)
            return wanted <= got

        wait_until(lambda: poll_until(sent), 30, "kafka-python consumed every record")
        # the consumer's session, with its partitions, is in the broker's cache
        assert broker.gauge(SESSIONS) == sessions_before + 1
        assert broker.gauge(CACHED) >= PARTITIONS
        # idle, then new records: they arrive in incremental answers
        time.sleep(0.5)
        more = produce(broker, topic, 40, "b")
        wait_until(lambda: poll_until(sent | more), 30, "kafka-python consumed the new records")
        assert got == sent | more
    finally:
        consumer.close()


def test_kafka_python_long_poll_in_an_idle_session_is_woken_by_new_records(
    broker: SessionBroker,
) -> None:
    # the broker reads none of an idle session's partitions: the consumer's long poll
    # (60 s) waits for them under the session's key, and must be answered when records
    # arrive on them, long before its deadline
    topic = new_topic(broker)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})

    def produce_to(partitions: range, tag: str) -> set[bytes]:
        values = {f"{tag}-{p}".encode() for p in partitions}
        for p in partitions:
            producer.produce(topic, value=f"{tag}-{p}".encode(), partition=p)
        assert producer.flush(30) == 0
        return values

    # records on partition 0 only: the full fetch that opens the session answers at once
    early = produce_to(range(1), "early")
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             fetch_max_wait_ms=60_000, request_timeout_ms=180_000)  # fmt: skip
    consumer.assign([KpTopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    try:
        got: set[bytes] = set()

        def poll_until(wanted: set[bytes]) -> bool:
            for records in consumer.poll(200).values():
                got.update(r.value for r in records)
            return wanted <= got

        wait_until(lambda: poll_until(early), 30, "kafka-python read partition 0")
        # its next fetch names partition 0 (a new offset); 1 to 3 are idle, not read; it
        # waits in the broker (kafka-python sends it from poll, and no other meanwhile)
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            poll_until(early)
        late = produce_to(range(1, PARTITIONS), "late")
        wait_until(
            lambda: poll_until(early | late), 30, "the long poll answered with the new records"
        )
        assert got == early | late
    finally:
        consumer.close()


def fetch_v11(
    topic: str, session_id: int, epoch: int, partitions: range, offset: int = 2
) -> dict[str, Any]:
    """A Fetch v11 body at `offset` of each partition (8 records make every one end at 2)."""
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": topic, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 16} for p in partitions]}]
            if partitions else [],
            "forgotten_topics_data": [], "rack_id": ""}  # fmt: skip


def test_session_errors_over_the_wire(broker: SessionBroker) -> None:
    topic = new_topic(broker)
    produce(broker, topic, 8, "a")

    async def scenario() -> None:
        conn = BrokerConnection(broker.host, broker.port)
        await conn.connect()
        try:
            full = await conn.send(ApiKey.FETCH, fetch_v11(topic, 0, 0, range(PARTITIONS)), 11)
            session_id = full["session_id"]
            assert full["error_code"] == 0 and session_id > 0
            assert sum(len(t["partitions"]) for t in full["responses"]) == PARTITIONS
            idle = await conn.send(ApiKey.FETCH, fetch_v11(topic, session_id, 1, range(0)), 11)
            assert (idle["error_code"], idle["session_id"], idle["responses"]) == (
                0,
                session_id,
                [],
            )
            stale = await conn.send(ApiKey.FETCH, fetch_v11(topic, session_id, 1, range(0)), 11)
            assert (stale["error_code"], stale["session_id"], stale["responses"]) == (
                Errors.INVALID_FETCH_SESSION_EPOCH, 0, [])  # fmt: skip
            unknown = await conn.send(
                ApiKey.FETCH, fetch_v11(topic, session_id ^ 1, 1, range(0)), 11
            )
            assert (unknown["error_code"], unknown["responses"]) == (
                Errors.FETCH_SESSION_ID_NOT_FOUND, [])  # fmt: skip
            # epoch -1 closes the session and answers sessionless
            final = await conn.send(ApiKey.FETCH, fetch_v11(topic, session_id, -1, range(1)), 11)
            assert (final["error_code"], final["session_id"]) == (0, 0)
            gone = await conn.send(ApiKey.FETCH, fetch_v11(topic, session_id, 2, range(0)), 11)
            assert gone["error_code"] == Errors.FETCH_SESSION_ID_NOT_FOUND
        finally:
            await conn.close()

    asyncio.run(scenario())
