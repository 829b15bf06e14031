"""confluent-kafka (librdkafka) against a real `kafpy server`: Producer with acks=1 and
acks=all, with and without idempotence, every codec; Consumer with assign and seek."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.fixtures.broker import KafpyBroker

N = 200


def produce(bootstrap: str, topic: str, **config: Any) -> list[tuple[int, int]]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    delivered: list[tuple[int, int]] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset()))

    for i in range(N):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i * 10, headers=[("i", str(i).encode())],
                         timestamp=1_700_000_000_000 + i, on_delivery=on_delivery)  # fmt: skip
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []
    return delivered


def consume(bootstrap: str, topic: str, offset: int, count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        out: list[Any] = []
        misses = 0
        while len(out) < count and misses < 20:
            msg = consumer.poll(1.0)
            if msg is None:
                misses += 1
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                continue
            out.append(msg)
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize(
    "config",
    [
        {"acks": "1", "enable.idempotence": False},
        {"acks": "all", "enable.idempotence": False},
        {"acks": "all", "enable.idempotence": True},
        {"acks": "1", "compression.type": "gzip"},
        {"acks": "1", "compression.type": "snappy"},
        {"acks": "1", "compression.type": "lz4"},
        {"acks": "all", "enable.idempotence": True, "compression.type": "zstd"},
    ],
    ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()),
)
def test_produce_and_consume(kafpy_module_broker: KafpyBroker, config: dict[str, Any]) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = f"ck-{uuid.uuid4().hex[:8]}"
    delivered = produce(bootstrap, topic, **config)
    assert sorted(delivered) == [(0, i) for i in range(N)]
    msgs = consume(bootstrap, topic, 0, N)
    assert [(m.offset(), m.key(), m.value()) for m in msgs] == [
        (i, b"k%d" % i, b"v%d" % i * 10) for i in range(N)
    ]
    assert [m.headers() for m in msgs] == [[("i", str(i).encode())] for i in range(N)]
    assert [m.timestamp()[1] for m in msgs] == [1_700_000_000_000 + i for i in range(N)]
    # assign with a starting offset in the middle (seek)
    assert [m.offset() for m in consume(bootstrap, topic, N - 5, 5)] == list(range(N - 5, N))


def test_watermarks_and_offsets_for_times(kafpy_module_broker: KafpyBroker) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = f"ckw-{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, acks="1")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, N)
        [found] = consumer.offsets_for_times(
            [TopicPartition(topic, 0, 1_700_000_000_000 + 120)], timeout=10
        )
        assert found.offset == 120
    finally:
        consumer.close()
