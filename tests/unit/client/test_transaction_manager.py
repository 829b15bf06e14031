"""TransactionManager: Kafka's state machine of a transactional producer, driven through
BatchProducer against a real in-process broker (kafpy.testing), its coordinators' answers
bent with kafpy.testing's faults where the case needs an error the broker would not give
on its own (a coordinator moving, a busy coordinator, a stale member)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from kafpy.client.consumer_group_metadata import ConsumerGroupMetadata
from kafpy.client.fetcher import Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer, RecordsNotDeliveredError
from kafpy.client.transaction_manager import (
    VALID_PREVIOUS_STATES,
    State,
    TransactionStateError,
)
from kafpy.common.errors import (
    KafkaError,
    MessageTooLargeError,
    ProducerFencedError,
    RequestTimedOutError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.testing import KafkaBroker

TOPIC = "txn"
READ_BACK = "txn-read-back"  # one test writes to each of its partitions
_ids = itertools.count()


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as b:
        b.create_topic(TOPIC, partitions=3)
        b.create_topic(READ_BACK, partitions=2)
        yield b


@pytest.fixture(autouse=True)
def no_faults_left(broker: KafkaBroker) -> Iterator[None]:
    yield
    broker.faults.clear()


class Spy:
    """Records the API of every request the client sends to a node (the requests go out
    unchanged)."""

    def __init__(self, client: KafkaClient) -> None:
        self.apis: list[ApiKey] = []
        send = client.send_to_node

        async def recording(node: int, api: int, body: Any, *args: Any, **kwargs: Any) -> Any:
            self.apis.append(ApiKey(api))
            return await send(node, api, body, *args, **kwargs)

        client.send_to_node = recording  # type: ignore[method-assign]

    def count(self, api: ApiKey) -> int:
        return self.apis.count(api)


def run(
    broker: KafkaBroker,
    body: Callable[[BatchProducer], Awaitable[None]],
    **producer: Any,
) -> None:
    """Run `body` with a transactional producer of a new transactional id."""

    async def go() -> None:
        async with KafkaClient(broker.bootstrap_servers, retry_backoff_ms=10) as client:
            producer.setdefault("transactional_id", f"tid-{next(_ids)}")
            await body(BatchProducer(client, **producer))

    asyncio.run(asyncio.wait_for(go(), 60))


def read_committed(broker: KafkaBroker, tp: TopicPartition) -> list[bytes | None]:
    """The values a read_committed consumer reads of `tp` (up to its last stable offset)."""

    async def go() -> list[bytes | None]:
        async with KafkaClient(broker.bootstrap_servers) as client:
            fetcher = Fetcher(client, isolation_level=1, max_wait_ms=50)
            fetcher.assign({tp: 0})
            values: list[bytes | None] = []
            while batch := await fetcher.fetch():
                values.extend(r.value for r in batch)
            return values

    return asyncio.run(asyncio.wait_for(go(), 30))


def records(n: int = 3) -> list[tuple[bytes | None, bytes | None]]:
    return [(None, b"v%d" % i) for i in range(n)]


def test_the_transition_table_is_kafkas() -> None:
    s = State
    assert VALID_PREVIOUS_STATES[s.IN_TRANSACTION] == {s.READY}
    # KIP-939: a prepared transaction (prepared here, or kept at initialization) completes
    assert VALID_PREVIOUS_STATES[s.ABORTING_TRANSACTION] == {
        s.IN_TRANSACTION, s.PREPARED_TRANSACTION, s.ABORTABLE_ERROR
    }  # fmt: skip
    assert VALID_PREVIOUS_STATES[s.PREPARED_TRANSACTION] == {s.IN_TRANSACTION, s.INITIALIZING}
    assert VALID_PREVIOUS_STATES[s.COMMITTING_TRANSACTION] == {
        s.IN_TRANSACTION, s.PREPARED_TRANSACTION
    }  # fmt: skip
    assert s.FATAL_ERROR not in VALID_PREVIOUS_STATES[s.READY]
    assert VALID_PREVIOUS_STATES[s.FATAL_ERROR] == set(State)


def test_transactional_methods_need_a_transactional_id(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        with pytest.raises(TransactionStateError, match="by setting the transactional.id"):
            p.begin_transaction()
        with pytest.raises(TransactionStateError, match="by setting the transactional.id"):
            await p.init_transactions()

    run(broker, body, transactional_id=None)


def test_calls_out_of_order_are_refused_with_kafkas_sentences(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        with pytest.raises(TransactionStateError, match="before completing a call to initTrans"):
            await p.send(TOPIC, records())
        with pytest.raises(
            TransactionStateError,
            match="Invalid transition attempted from state UNINITIALIZED to state IN_TRANSACTION",
        ):
            p.begin_transaction()
        await p.init_transactions()
        with pytest.raises(TransactionStateError, match="Cannot call send in state READY"):
            await p.send(TOPIC, records())
        with pytest.raises(TransactionStateError, match="not in an active transaction"):
            await p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 1}, "g")
        with pytest.raises(TransactionStateError, match="from state READY to state COMMITTING"):
            await p.commit_transaction()
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.READY

    run(broker, body)


def test_init_gives_a_producer_id_and_a_second_init_bumps_the_epoch(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        assert (p.producer_id, p.producer_epoch) == (-1, -1)
        await p.init_transactions()
        assert p.producer_id >= 0 and p.producer_epoch >= 0
        again = BatchProducer(p.client, transactional_id=p.transactional_id)
        await again.init_transactions()
        assert again.producer_id == p.producer_id
        assert again.producer_epoch == p.producer_epoch + 1

    run(broker, body)


def test_commit_adds_each_partition_once_in_one_request_then_ends(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        spy = Spy(p.client)
        await p.init_transactions()
        p.begin_transaction()
        tps = [TopicPartition(TOPIC, i) for i in range(3)] + [TopicPartition(READ_BACK, 0)]
        await p.send_records({tp: records() for tp in tps})
        await p.send_records({tp: records() for tp in tps})
        assert p.transaction_manager is not None
        assert p.transaction_manager.partitions_in_transaction == set(tps)
        await p.commit_transaction()
        assert spy.count(ApiKey.ADD_PARTITIONS_TO_TXN) == 1
        assert spy.count(ApiKey.END_TXN) == 1
        assert p.transaction_manager.state is State.READY
        assert p.transaction_manager.partitions_in_transaction == frozenset()

    run(broker, body)
    assert read_committed(broker, TopicPartition(READ_BACK, 0)) == [b"v0", b"v1", b"v2"] * 2


def test_an_empty_transaction_sends_no_end_txn(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        await p.init_transactions()
        broker.faults.fail_next("EndTxn", "PRODUCER_FENCED")
        p.begin_transaction()
        await p.commit_transaction()
        p.begin_transaction()
        await p.abort_transaction()

    run(broker, body)
    assert broker.faults.fired("EndTxn") == 0


@pytest.mark.parametrize("error", ["CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS"])
def test_a_busy_coordinator_is_asked_again(broker: KafkaBroker, error: str) -> None:
    async def body(p: BatchProducer) -> None:
        broker.faults.fail_next("InitProducerId", error, 2)
        await p.init_transactions()
        p.begin_transaction()
        broker.faults.fail_next("AddPartitionsToTxn", error, 2)
        await p.send(TOPIC, records())
        broker.faults.fail_next("EndTxn", error, 2)
        await p.commit_transaction()

    run(broker, body)
    for api in ("InitProducerId", "AddPartitionsToTxn", "EndTxn"):
        assert broker.faults.fired(api) == 2


@pytest.mark.parametrize("error", ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"])
def test_a_moved_coordinator_is_found_again(broker: KafkaBroker, error: str) -> None:
    async def body(p: BatchProducer) -> None:
        spy = Spy(p.client)
        await p.init_transactions()
        p.begin_transaction()
        broker.faults.fail_next("AddPartitionsToTxn", error)
        broker.faults.fail_next("EndTxn", error)
        await p.send(TOPIC, records())
        await p.commit_transaction()
        assert spy.count(ApiKey.ADD_PARTITIONS_TO_TXN) == 2
        assert spy.count(ApiKey.END_TXN) == 2

    run(broker, body)
    assert broker.faults.fired("AddPartitionsToTxn") == 1
    assert broker.faults.fired("EndTxn") == 1


def test_a_fenced_producer_fails_every_later_call(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(TOPIC, records(), partition=0)
        newer = BatchProducer(p.client, transactional_id=p.transactional_id)
        await newer.init_transactions()  # aborts p's transaction, bumps the epoch
        with pytest.raises(ProducerFencedError):
            await p.send(TOPIC, records(), partition=1)
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.FATAL_ERROR
        for call in (p.commit_transaction(), p.abort_transaction()):
            with pytest.raises(ProducerFencedError, match="old epoch"):
                await call
        with pytest.raises(ProducerFencedError):
            p.begin_transaction()
        newer.begin_transaction()
        await newer.send(TOPIC, records(), partition=1)
        await newer.commit_transaction()

    run(broker, body)


def test_a_fenced_produce_is_fatal(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(TOPIC, records(), partition=2)
        newer = BatchProducer(p.client, transactional_id=p.transactional_id)
        await newer.init_transactions()
        with pytest.raises(ProducerFencedError):  # the partition is in: Produce is refused
            await p.send(TOPIC, records(), partition=2)
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.FATAL_ERROR

    run(broker, body)


@pytest.mark.parametrize("api", ["InitProducerId", "AddPartitionsToTxn", "EndTxn"])
def test_fencing_answers_of_the_coordinator_are_fatal(broker: KafkaBroker, api: str) -> None:
    async def body(p: BatchProducer) -> None:
        broker.faults.fail_next(api, "INVALID_PRODUCER_EPOCH")
        with pytest.raises(ProducerFencedError):
            await p.init_transactions()
            p.begin_transaction()
            await p.send(TOPIC, records())
            await p.commit_transaction()
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.FATAL_ERROR

    run(broker, body)


def test_a_failed_send_leaves_only_abort_which_bumps_the_epoch(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        await p.init_transactions()
        epoch = p.producer_epoch
        p.begin_transaction()
        await p.send(READ_BACK, [(None, b"aborted")], partition=1)
        with pytest.raises(RecordsNotDeliveredError) as e:
            await p.send(READ_BACK, [(None, b"x" * 2000)], partition=1)
        assert isinstance(e.value.errors[0][1], MessageTooLargeError)
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.ABORTABLE_ERROR
        with pytest.raises(TransactionStateError, match="error state") as refused:
            await p.commit_transaction()
        assert isinstance(refused.value.__cause__, MessageTooLargeError)
        with pytest.raises(TransactionStateError, match="Cannot perform send"):
            await p.send(TOPIC, records())
        await p.abort_transaction()
        assert p.transaction_manager.state is State.READY
        assert p.producer_epoch == epoch + 1
        p.begin_transaction()
        await p.send(READ_BACK, [(None, b"after")], partition=1)
        await p.commit_transaction()

    run(broker, body, max_request_size=1000)
    assert read_committed(broker, TopicPartition(READ_BACK, 1)) == [b"after"]


def test_offsets_sent_to_a_stale_member_make_the_transaction_abortable(
    broker: KafkaBroker,
) -> None:
    async def body(p: BatchProducer) -> None:
        await p.init_transactions()
        p.begin_transaction()
        broker.faults.fail_next("TxnOffsetCommit", "ILLEGAL_GENERATION")
        group = ConsumerGroupMetadata("g-stale", generation_id=3, member_id="m")
        with pytest.raises(KafkaError, match="consumer group metadata mismatch"):
            await p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 5}, group)
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.ABORTABLE_ERROR
        await p.abort_transaction()

    run(broker, body)


def test_an_operation_past_max_block_ms_times_out_and_can_resume(broker: KafkaBroker) -> None:
    async def body(p: BatchProducer) -> None:
        broker.faults.fail_next("InitProducerId", "COORDINATOR_LOAD_IN_PROGRESS", 1000)
        with pytest.raises(
            RequestTimedOutError,
            match="Timeout expired after 300 milliseconds while awaiting InitProducerId",
        ):
            await p.init_transactions()
        assert p.transaction_manager is not None
        assert p.transaction_manager.state is State.INITIALIZING
        broker.faults.clear()
        await p.init_transactions()
        assert p.transaction_manager.state is State.READY

    run(broker, body, max_block_ms=300)
