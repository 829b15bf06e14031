"""An application's tests against a real Kafka broker, with kafpy.testing's pytest fixtures.

The application below publishes orders with confluent-kafka and totals them with
aiokafka. Its tests get a broker from the kafpy plugin, which pytest loads by itself once
kafpy is installed:

    pip install kafpy confluent-kafka aiokafka
    pytest examples/test_with_kafpy.py                        # broker in this process
    pytest examples/test_with_kafpy.py --kafpy-mode=subprocess  # or as a child process

`kafka_broker` is one broker for the whole run, `kafka_topic` a fresh topic per test,
`kafka_faults` makes the broker misbehave the way Kafka does, and `kafka_cluster` gives a
test three brokers of its own.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]
from confluent_kafka import Producer

from kafpy.testing import FaultInjector, KafkaBroker, KafkaCluster

# -- the application ------------------------------------------------------------------------


def publish_orders(bootstrap: str, topic: str, orders: list[dict[str, int]]) -> None:
    """Publish each order once, keyed by its id (an idempotent producer)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    failures: list[object] = []
    for order in orders:
        producer.produce(
            topic,
            key=str(order["id"]).encode(),
            value=json.dumps(order).encode(),
            on_delivery=lambda err, _msg: failures.append(err) if err else None,
        )
    undelivered = producer.flush(30)
    if failures or undelivered:
        raise RuntimeError(f"orders not delivered: {failures or undelivered}")


async def total_of_orders(bootstrap: str, topic: str, count: int, group: str) -> int:
    """Read `count` orders as a member of consumer group `group`; the sum of amounts."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        heartbeat_interval_ms=100,
    )
    await consumer.start()
    try:
        total = seen = 0
        while seen < count:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    total += json.loads(record.value)["amount"]
                    seen += 1
        return total
    finally:
        await consumer.stop()


ORDERS = [{"id": i, "amount": 10 * i} for i in range(1, 21)]


# -- its tests -------------------------------------------------------------------------------


def test_orders_are_published_once_each(
    kafka_broker: KafkaBroker,
    kafka_bootstrap: str,
    kafka_topic: str,
) -> None:
    publish_orders(kafka_bootstrap, kafka_topic, ORDERS)
    records = kafka_broker.consume(kafka_topic, len(ORDERS))
    assert sorted(int(r.key or b"") for r in records) == [o["id"] for o in ORDERS]


def test_publishing_retries_when_the_leader_moves(
    kafka_broker: KafkaBroker,
    kafka_bootstrap: str,
    kafka_topic: str,
    kafka_faults: FaultInjector,
) -> None:
    # the next three Produce requests are answered "not the leader any more"
    kafka_faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=3)
    publish_orders(kafka_bootstrap, kafka_topic, ORDERS)
    assert kafka_faults.fired("Produce") == 3
    records = kafka_broker.consume(kafka_topic, len(ORDERS))
    assert len({r.key for r in records}) == len(ORDERS)  # retried, never duplicated
    with pytest.raises(TimeoutError):
        kafka_broker.consume(kafka_topic, len(ORDERS) + 1, timeout=1)


def test_totals_survive_a_rebalance_and_slow_fetches(
    kafka_broker: KafkaBroker,
    kafka_bootstrap: str,
    kafka_topic: str,
    kafka_faults: FaultInjector,
) -> None:
    kafka_broker.produce(kafka_topic, records=[(None, json.dumps(o).encode()) for o in ORDERS])
    # the coordinator asks the group to rebalance, and every fetch is slow
    kafka_faults.fail_next("Heartbeat", "REBALANCE_IN_PROGRESS", count=1)
    kafka_faults.delay("Fetch", ms=200)
    total = asyncio.run(total_of_orders(kafka_bootstrap, kafka_topic, len(ORDERS), "totals"))
    assert total == sum(o["amount"] for o in ORDERS)


@pytest.mark.kafpy_topic(replication_factor=3)
def test_totals_survive_losing_a_broker(
    kafka_cluster: KafkaCluster,
    kafka_bootstrap: str,
    kafka_topic: str,
    kafka_faults: FaultInjector,
) -> None:
    publish_orders(kafka_bootstrap, kafka_topic, ORDERS)
    kafka_faults.stop_broker(2)  # its leaderships move to the other two
    total = asyncio.run(
        total_of_orders(kafka_cluster.bootstrap_servers, kafka_topic, len(ORDERS), "totals")
    )
    assert total == sum(o["amount"] for o in ORDERS)
