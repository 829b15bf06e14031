"""kafpy's own transactional producer (BatchProducer with a transactional.id) against a
running `kafpy server`, judged by the real clients: commits are what confluent-kafka reads
with isolation.level=read_committed, aborts are not; kafka-python's read_uncommitted reads
both and never a marker; fencing works both ways between kafpy's and confluent-kafka's
producers; offsets sent to the transaction are the group's only once it commits; a restarted
coordinator is found again; and `kafpy producer-perf-test --transaction-duration-ms`
commits everything it sends."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonTopicPartition

from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer
from kafpy.client.transaction_manager import State
from kafpy.common.errors import KafkaError, ProducerFencedError
from kafpy.common.topic_partition import TopicPartition
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, running_broker
from tests.fixtures.transactions import (
    TXN_OVERRIDES,
    WAIT_S,
    read_values,
    unique_name,
)

T = TypeVar("T")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    with running_broker(tmp_path_factory.mktemp("txn-producer-broker"), TXN_OVERRIDES) as b:
        yield b


_name = unique_name


def _create(broker: KafpyBroker, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(WAIT_S)


class KafpyProducer:
    """kafpy's transactional producer on an event loop of its own, called from the test."""

    def __init__(self, broker: KafpyBroker, transactional_id: str, **settings: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = KafkaClient(broker.bootstrap, retry_backoff_ms=50)
        self.producer = BatchProducer(self.client, transactional_id=transactional_id, **settings)

    def __call__(self, step: Callable[[BatchProducer], Coroutine[Any, Any, T]]) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(step(self.producer), 60))

    def init(self) -> KafpyProducer:
        self(lambda p: p.init_transactions())
        return self

    def transaction(self, topic: str, values: list[bytes], *, commit: bool = True) -> None:
        async def run(p: BatchProducer) -> None:
            p.begin_transaction()
            await p.send(topic, [(None, v) for v in values], partition=0)
            await (p.commit_transaction() if commit else p.abort_transaction())

        self(run)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


@pytest.fixture
def kafpy_producers() -> Iterator[Callable[..., KafpyProducer]]:
    made: list[KafpyProducer] = []

    def make(broker: KafpyBroker, transactional_id: str, **settings: Any) -> KafpyProducer:
        made.append(KafpyProducer(broker, transactional_id, **settings))
        return made[-1].init()

    yield make
    for p in made:
        p.close()


def _kafka_python_values(broker: KafpyBroker, topic: str, expected: int) -> list[bytes]:
    """What kafka-python's consumer (read_uncommitted, its only level) reads of partition 0."""
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                      consumer_timeout_ms=3000)  # fmt: skip
    try:
        tp = KafkaPythonTopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        values: list[bytes] = []
        for m in c:
            values.append(m.value)
            if len(values) >= expected:
                break
        return values
    finally:
        c.close()


def test_a_commit_is_read_committed_and_an_abort_is_not(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic = _name("commit")
    _create(broker, topic)
    p = kafpy_producers(broker, _name("tx"))
    p.transaction(topic, [b"c1", b"c2"])
    p.transaction(topic, [b"a1", b"a2"], commit=False)
    p.transaction(topic, [b"c3"])
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [b"c1", b"c2", b"c3"]
    # read_uncommitted reads the aborted records too, and no marker as a record
    assert read_values(broker.bootstrap, [(topic, 0)], "read_uncommitted") == [
        b"a1", b"a2", b"c1", b"c2", b"c3"]  # fmt: skip
    assert _kafka_python_values(broker, topic, 5) == [b"c1", b"c2", b"a1", b"a2", b"c3"]


def test_a_second_kafpy_producer_fences_the_first(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic, tid = _name("fence"), _name("tx")
    _create(broker, topic)
    first = kafpy_producers(broker, tid)

    async def open_transaction(p: BatchProducer) -> None:
        p.begin_transaction()
        await p.send(topic, [(None, b"zombie")], partition=0)

    first(open_transaction)
    second = kafpy_producers(broker, tid)  # aborts the first one's transaction
    second.transaction(topic, [b"live"])
    with pytest.raises(ProducerFencedError):
        first(lambda p: p.commit_transaction())
    assert first.producer.transaction_manager is not None
    assert first.producer.transaction_manager.state is State.FATAL_ERROR
    with pytest.raises(ProducerFencedError):
        first(lambda p: p.abort_transaction())
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [b"live"]


def test_kafpy_and_confluent_producers_fence_each_other(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic, tid = _name("cross-fence"), _name("tx")
    _create(broker, topic)
    ours = kafpy_producers(broker, tid)
    theirs = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    theirs.init_transactions(WAIT_S)  # fences ours
    with pytest.raises(ProducerFencedError):
        ours.transaction(topic, [b"ours"])
    ours_again = kafpy_producers(broker, tid)  # fences theirs
    with pytest.raises(KafkaException) as fenced:
        theirs.begin_transaction()
        theirs.produce(topic, b"theirs")
        theirs.commit_transaction(WAIT_S)
    assert fenced.value.args[0].fatal()
    ours_again.transaction(topic, [b"ours again"])
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [b"ours again"]


def test_kafpy_and_confluent_transactions_interleave_on_one_partition(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic = _name("interleave")
    _create(broker, topic)
    ours = kafpy_producers(broker, _name("ours"))
    theirs = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": _name("theirs")})
    theirs.init_transactions(WAIT_S)
    theirs.begin_transaction()
    theirs.produce(topic, b"theirs-aborted", partition=0)
    theirs.flush(WAIT_S)

    async def send_open(p: BatchProducer) -> None:
        p.begin_transaction()
        await p.send(topic, [(None, b"ours-committed")], partition=0)

    ours(send_open)
    theirs.abort_transaction(WAIT_S)
    ours(lambda p: p.commit_transaction())
    theirs.begin_transaction()
    theirs.produce(topic, b"theirs-committed", partition=0)
    theirs.commit_transaction(WAIT_S)
    ours.transaction(topic, [b"ours-aborted"], commit=False)
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [
        b"ours-committed", b"theirs-committed"]  # fmt: skip
    assert sorted(_kafka_python_values(broker, topic, 4)) == [
        b"ours-aborted", b"ours-committed", b"theirs-aborted", b"theirs-committed"]  # fmt: skip


def test_offsets_sent_to_the_transaction_are_committed_only_with_it(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    source, sink, group = _name("in"), _name("out"), _name("group")
    _create(broker, source)
    _create(broker, sink)
    p = kafpy_producers(broker, _name("tx"))
    tp = TopicPartition(source, 0)

    def transaction(offset: int, *, commit: bool) -> None:
        async def run(producer: BatchProducer) -> None:
            producer.begin_transaction()
            await producer.send(sink, [(None, b"copied %d" % offset)], partition=0)
            await producer.send_offsets_to_transaction({tp: offset}, group)
            await (producer.commit_transaction() if commit else producer.abort_transaction())

        p(run)

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "enable.auto.commit": False})  # fmt: skip
    try:
        transaction(5, commit=False)
        (committed,) = c.committed([ConfluentTopicPartition(source, 0)], WAIT_S)
        assert committed.offset < 0  # none
        transaction(7, commit=True)
        (committed,) = c.committed([ConfluentTopicPartition(source, 0)], WAIT_S)
        assert committed.offset == 7
    finally:
        c.close()
    assert read_values(broker.bootstrap, [(sink, 0)], "read_committed") == [b"copied 7"]


def test_a_restarted_coordinator_is_found_again(
    kafpy_broker_factory: Callable[..., KafpyBroker],
    kafpy_producers: Callable[..., KafpyProducer],
) -> None:
    broker = kafpy_broker_factory(TXN_OVERRIDES)
    topic = _name("restart")
    _create(broker, topic)
    p = kafpy_producers(broker, _name("tx"), max_block_ms=int(WAIT_S * 1000))
    p.transaction(topic, [b"before"])

    async def open_transaction(producer: BatchProducer) -> None:
        producer.begin_transaction()
        await producer.send(topic, [(None, b"across the restart")], partition=0)

    p(open_transaction)
    broker.restart()  # the connection drops; __transaction_state is loaded again
    p(lambda producer: producer.commit_transaction())
    p.transaction(topic, [b"after"])
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [
        b"across the restart", b"after", b"before"]  # fmt: skip


def test_producer_perf_test_commits_every_transaction(broker: KafpyBroker) -> None:
    topic = _name("perf")
    _create(broker, topic)
    r = subprocess.run(
        [sys.executable, "-m", "kafpy", "producer-perf-test", "--topic", topic,
         "--num-records", "3000", "--record-size", "10", "--throughput", "-1",
         "--transaction-duration-ms", "20", "--transactional-id", _name("perf-tx"),
         "--producer-props", f"bootstrap.servers={broker.bootstrap}", "batch.size=2000"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("3000 records sent, ")
    assert len(read_values(broker.bootstrap, [(topic, 0)], "read_committed")) == 3000


def test_a_coordinator_moving_to_another_broker_is_followed() -> None:
    """Three brokers (kafpy.testing, in this process): the coordinator of the
    transactional id stops mid-transaction; the commit goes to the broker that takes
    its __transaction_state partition over."""
    from kafpy.testing import KafkaCluster

    with KafkaCluster(size=3) as cluster:
        cluster.create_topic("moving", partitions=1, replication_factor=3)

        async def go() -> tuple[int, int]:
            async with KafkaClient(cluster.bootstrap_servers, retry_backoff_ms=50) as client:
                p = BatchProducer(client, transactional_id=_name("tx"))
                await p.init_transactions()
                assert p.transaction_manager is not None
                before = await p.transaction_manager.coordinator()
                p.begin_transaction()
                await p.send("moving", [(None, b"across the move")])
                await asyncio.to_thread(cluster.faults.stop_broker, before)
                await p.commit_transaction()
                return before, await p.transaction_manager.coordinator()

        before, after = asyncio.run(asyncio.wait_for(go(), 60))
        assert after != before
        # EndTxn answers before the markers are written: read_committed sees it once they land
        wait_until(
            lambda: read_values(cluster.bootstrap_servers, [("moving", 0)], "read_committed")
            == [b"across the move"],
            30, "the committed record read_committed",
        )  # fmt: skip


async def _committed_once_markers_land(member: Any, tp: TopicPartition) -> int:
    """The group's offset of `tp` once the commit's marker reached __consumer_offsets
    (EndTxn answers before the markers are written)."""
    for _ in range(100):
        found: dict[TopicPartition, int] = await member.committed([tp])
        if tp in found:
            return found[tp]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no committed offset of {tp} after 10 s")


def test_a_members_offsets_are_fenced_by_its_generation(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    """KIP-447 with kafpy's own consumer coordinator: offsets sent with the member's group
    metadata commit; with a generation the group never had, the group coordinator refuses
    them (ILLEGAL_GENERATION) and the transaction can only be aborted."""
    from kafpy.client.consumer_coordinator import ConsumerCoordinator
    from kafpy.client.consumer_group_metadata import ConsumerGroupMetadata

    source, group = _name("member-in"), _name("member-group")
    _create(broker, source)
    p = kafpy_producers(broker, _name("tx"))
    tp = TopicPartition(source, 0)

    async def run(producer: BatchProducer) -> tuple[int, State]:
        member = ConsumerCoordinator(producer.client, group, [source])
        try:
            await member.ensure_active_group()
            metadata = member.group_metadata()
            producer.begin_transaction()
            await producer.send_offsets_to_transaction({tp: 3}, metadata)
            await producer.commit_transaction()
            committed = await _committed_once_markers_land(member, tp)
            stale = ConsumerGroupMetadata(group, metadata.generation_id + 5, metadata.member_id)
            producer.begin_transaction()
            with pytest.raises(KafkaError, match="consumer group metadata mismatch"):
                await producer.send_offsets_to_transaction({tp: 9}, stale)
            assert producer.transaction_manager is not None
            state = producer.transaction_manager.state
            await producer.abort_transaction()
            return committed, state
        finally:
            await member.close()

    committed, state = p(run)
    assert (committed, state) == (3, State.ABORTABLE_ERROR)


def test_transaction_timeout_ms_is_the_coordinators_limit(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    """The coordinator aborts a transaction open longer than transaction.timeout.ms (and
    bumps the epoch, so the late commit is fenced); a timeout above the broker's
    transaction.max.timeout.ms is refused at init."""
    topic = _name("txn-timeout")
    _create(broker, topic)
    p = kafpy_producers(broker, _name("tx"), transaction_timeout_ms=1000)

    async def forgotten(producer: BatchProducer) -> None:
        producer.begin_transaction()
        await producer.send(topic, [(None, b"forgotten")], partition=0)
        await asyncio.sleep(3)  # past the timeout and the 200 ms abort check

    p(forgotten)
    with pytest.raises(ProducerFencedError):
        p(lambda producer: producer.commit_transaction())
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == []
    too_long = KafpyProducer(broker, _name("tx"), transaction_timeout_ms=900001)
    try:
        with pytest.raises(KafkaError, match="transaction.max.timeout.ms"):
            too_long.init()
        assert too_long.producer.transaction_manager is not None
        assert too_long.producer.transaction_manager.state is State.FATAL_ERROR
    finally:
        too_long.close()
