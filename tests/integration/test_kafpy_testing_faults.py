"""Real clients against kafpy.testing brokers with injected faults: they react as they
would against Kafka (retries, metadata refresh, reconnects) and lose or duplicate nothing.
Also the broker as a child process (mode="subprocess")."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafpy.testing import KafkaBroker

N = 50


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as b:
        yield b


@pytest.fixture
def topic(broker: KafkaBroker) -> Iterator[str]:
    name = f"faults-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name)
    yield name
    broker.faults.clear()


def _produce(bootstrap: str, topic: str, **config: Any) -> list[Any]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i in range(N):
        producer.produce(topic, value=b"v%d" % i, on_delivery=on_delivery)
    assert producer.flush(60) == 0
    return errors


@pytest.mark.parametrize("idempotence", [False, True])
def test_confluent_producer_retries_through_not_leader_and_writes_each_record_once(
    broker: KafkaBroker, topic: str, idempotence: bool
) -> None:
    broker.faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=3)
    errors = _produce(broker.bootstrap_servers, topic, **{"enable.idempotence": idempotence})
    assert errors == []
    assert broker.faults.fired("Produce") == 3
    values = [r.value for r in broker.consume(topic, N)]
    assert sorted(v or b"" for v in values) == sorted(b"v%d" % i for i in range(N))
    with pytest.raises(TimeoutError, match=f"Consumed {N} of {N + 1}"):
        broker.consume(topic, N + 1, timeout=1.0)  # nothing written twice


def test_confluent_consumer_survives_delayed_fetches(broker: KafkaBroker, topic: str) -> None:
    broker.produce(topic, [b"m%d" % i for i in range(N)])
    broker.faults.delay("Fetch", ms=500)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes | None] = []
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == N:
                break
    finally:
        consumer.close()
    assert got == [b"m%d" % i for i in range(N)]
    assert broker.faults.fired("Fetch") > 0


def test_confluent_consumer_reconnects_after_dropped_connections(
    broker: KafkaBroker, topic: str
) -> None:
    broker.produce(topic, [b"before"])
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes | None] = []

        def poll_until(n: int) -> None:
            for _ in range(120):
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
                if len(got) == n:
                    return

        poll_until(1)
        broker.faults.drop_connections()
        broker.produce(topic, [b"after"])
        poll_until(2)
    finally:
        consumer.close()
    assert got == [b"before", b"after"]


def test_aiokafka_producer_retries_through_not_leader(broker: KafkaBroker, topic: str) -> None:
    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            for i in range(N):
                await producer.send_and_wait(topic, b"a%d" % i)
        finally:
            await producer.stop()

    broker.faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
    asyncio.run(produce())
    assert broker.faults.fired("Produce") == 2
    assert [r.value for r in broker.consume(topic, N)] == [b"a%d" % i for i in range(N)]


def test_kafka_python_producer_retries_through_not_enough_replicas(
    broker: KafkaBroker, topic: str
) -> None:
    from kafka import KafkaProducer  # type: ignore[import-untyped]

    broker.faults.fail_next("Produce", "NOT_ENOUGH_REPLICAS", count=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, retries=5)
    try:
        for i in range(N):
            producer.send(topic, b"k%d" % i).get(timeout=30)
    finally:
        producer.close()
    assert broker.faults.fired("Produce") == 2
    assert [r.value for r in broker.consume(topic, N)] == [b"k%d" % i for i in range(N)]


def test_confluent_group_consumer_rejoins_after_rebalance_in_progress(
    broker: KafkaBroker, topic: str
) -> None:
    broker.produce(topic, [b"r%d" % i for i in range(N)])
    broker.faults.fail_next("Heartbeat", "REBALANCE_IN_PROGRESS", count=1)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "heartbeat.interval.ms": 100,
            "max.poll.interval.ms": 60000,
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes | None] = []
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) >= N and broker.faults.fired("Heartbeat") == 1:
                break
    finally:
        consumer.close()
    assert broker.faults.fired("Heartbeat") == 1
    # after the rejoin the consumer goes on from its position: nothing lost
    assert set(got) == {b"r%d" % i for i in range(N)}


def test_a_throttled_client_sees_the_throttle_and_others_do_not(
    broker: KafkaBroker, topic: str
) -> None:
    events: dict[str, list[int]] = {"slow": [], "fast": []}

    def produce(client_id: str) -> None:
        assert not _produce(broker.bootstrap_servers, topic, **{
            "client.id": client_id,
            "throttle_cb": lambda e: events[client_id].append(e.throttle_time),
        })  # fmt: skip

    broker.faults.throttle("slow", 300, count=3)
    produce("slow")
    produce("fast")
    assert 0.3 in events["slow"]  # librdkafka reports the broker's 300 ms, in seconds
    assert not [t for t in events["fast"] if t > 0]
    assert len(broker.consume(topic, 2 * N)) == 2 * N  # throttled, never lost
    with pytest.raises(ValueError, match="ms 0 for throttle"):
        broker.faults.throttle("x", 0)


def test_subprocess_broker_serves_real_clients_and_leaves_no_process() -> None:
    with KafkaBroker(mode="subprocess") as broker:
        process = broker._node(0).process
        assert process is not None
        broker.create_topic("sub")
        assert _produce(broker.bootstrap_servers, "sub") == []
        assert len(broker.consume("sub", N)) == N
        data_dir = broker.data_dir
        assert data_dir is not None
    assert process.poll() is not None
    assert not data_dir.exists()


def test_faults_reach_a_child_process_broker() -> None:
    with KafkaBroker(mode="subprocess") as broker:
        name = f"child-faults-{uuid.uuid4().hex[:8]}"
        broker.create_topic(name)
        broker.faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
        assert _produce(broker.bootstrap_servers, name, retries=5) == []
        assert broker.faults.fired("Produce") == 2  # counted in the child
        events: list[float] = []
        broker.faults.throttle("throttled", 200, count=1)
        assert not _produce(broker.bootstrap_servers, name, **{
            "client.id": "throttled", "throttle_cb": lambda e: events.append(e.throttle_time)})  # fmt: skip
        assert 0.2 in events
        broker.faults.drop_connections()
        with pytest.raises(ValueError, match="Kafka does not answer Produce with"):
            broker.faults.fail_next("Produce", "GROUP_AUTHORIZATION_FAILED")
        broker.faults.clear()
        assert broker.faults.fired("Produce") == 0
        assert len(broker.consume(name, 2 * N)) == 2 * N


def test_clients_follow_a_moved_leader() -> None:
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    from kafpy.testing import KafkaCluster

    with KafkaCluster(3) as cluster:
        name = f"moved-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(name, partitions=1, replication_factor=2)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

        def leader() -> int:
            return int(admin.list_topics(name, timeout=10).topics[name].partitions[0].leader)

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": name,
                             "enable.auto.commit": False})  # fmt: skip
        try:
            consumer.assign([CkTopicPartition(name, 0, 0)])

            def read(n: int) -> list[bytes]:
                got: list[bytes] = []
                while len(got) < n:
                    msg = consumer.poll(10)
                    assert msg is not None, f"only {len(got)} of {n} records arrived"
                    assert msg.error() is None, msg.error()
                    got.append(msg.value())
                return got

            assert _produce(cluster.bootstrap_servers, name) == []
            assert len(read(N)) == N  # the consumer fetches from the first leader
            before = leader()
            target = next(b for b in (0, 1, 2) if b != before)
            cluster.faults.move_leader(name, 0, to=target)
            assert leader() == target
            # the same consumer follows the leader to its new broker
            assert _produce(cluster.bootstrap_servers, name) == []
            assert len(read(N)) == N
        finally:
            consumer.close()
        with pytest.raises(ValueError, match="does not exist"):
            cluster.faults.move_leader(name, 5, to=target)
