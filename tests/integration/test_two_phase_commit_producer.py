"""KIP-939 in kafpy's own producer (BatchProducer) against a running `kafpy server` with
`transaction.two.phase.commit.enable=true`: one producer prepares, another of the same
transactional id keeps the prepared transaction and completes it (commit when handed the
matching PreparedTxnState, abort otherwise); confluent-kafka's read_committed consumer is
the referee. A broker without the setting refuses enable_2pc with a sentence naming it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from kafpy.client.producer import BatchProducer
from kafpy.client.transaction_manager import PreparedTxnState, State, TransactionStateError
from kafpy.common.errors import Errors, InvalidTxnStateError, KafkaError, ProducerFencedError
from kafpy.common.topic_partition import TopicPartition
from tests.fixtures.broker import KafpyBroker, running_broker
from tests.fixtures.transactions import TWO_PC_OVERRIDES, TXN_OVERRIDES, read_values
from tests.integration.test_transactional_producer import KafpyProducer, _create


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    with running_broker(tmp_path_factory.mktemp("two-pc-producer-broker"), TWO_PC_OVERRIDES) as b:
        yield b


@pytest.fixture
def kafpy_producers() -> Iterator[Callable[..., KafpyProducer]]:
    """Transactional producers not yet initialized; closed after the test."""
    made: list[KafpyProducer] = []

    def make(broker: KafpyBroker, transactional_id: str) -> KafpyProducer:
        made.append(KafpyProducer(broker, transactional_id))
        return made[-1]

    yield make
    for p in made:
        p.close()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _prepare(make: Callable[..., KafpyProducer], broker: KafpyBroker, tid: str, topic: str,
             values: list[bytes]) -> tuple[KafpyProducer, PreparedTxnState]:  # fmt: skip
    p = make(broker, tid)
    p(lambda producer: producer.init_transactions(enable_2pc=True))

    async def run(producer: BatchProducer) -> PreparedTxnState:
        producer.begin_transaction()
        await producer.send(topic, [(None, v) for v in values], partition=0)
        await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 7}, f"g-{tid}")
        return await producer.prepare_transaction()

    state = p(run)
    assert p.producer.transaction_manager is not None
    assert p.producer.transaction_manager.state is State.PREPARED_TRANSACTION
    return p, state


def test_a_prepared_transaction_is_committed_by_the_next_owner(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic, tid = _name("2pc-commit"), _name("tid")
    _create(broker, topic)
    first, state = _prepare(kafpy_producers, broker, tid, topic, [b"a", b"b"])
    assert state == PreparedTxnState(first.producer.producer_id, first.producer.producer_epoch)
    assert PreparedTxnState.parse(str(state)) == state
    # prepared, not committed: a read_committed reader sees nothing yet
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == []
    second = kafpy_producers(broker, tid)
    kept = second(lambda p: p.init_transactions(enable_2pc=True, keep_prepared_txn=True))
    assert kept == state
    assert second.producer.producer_epoch == state.epoch + 1
    assert second(lambda p: p.complete_transaction(state)) is True
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [b"a", b"b"]
    # the first owner is fenced
    with pytest.raises(ProducerFencedError):
        first(lambda p: p.commit_transaction())


def test_a_prepared_transaction_not_matching_is_aborted(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic, tid = _name("2pc-abort"), _name("tid")
    _create(broker, topic)
    _, state = _prepare(kafpy_producers, broker, tid, topic, [b"x"])
    owner = kafpy_producers(broker, tid)
    owner(lambda p: p.init_transactions(enable_2pc=True, keep_prepared_txn=True))
    stale = PreparedTxnState(state.producer_id, state.epoch - 1)
    assert owner(lambda p: p.complete_transaction(stale)) is False
    # an empty topic ends at the LSO only once the abort marker is written
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == []
    # nothing left to complete: KIP-939's InvalidTxnStateException
    again = kafpy_producers(broker, tid)
    assert (
        again(lambda p: p.init_transactions(enable_2pc=True, keep_prepared_txn=True))
        == PreparedTxnState()
    )
    with pytest.raises(InvalidTxnStateError, match="no transaction has been prepared"):
        again(lambda p: p.complete_transaction(state))


def test_a_plain_init_aborts_a_prepared_transaction(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    topic, tid = _name("2pc-plain"), _name("tid")
    _create(broker, topic)
    _prepare(kafpy_producers, broker, tid, topic, [b"gone"])
    p = kafpy_producers(broker, tid)
    assert p(lambda producer: producer.init_transactions(enable_2pc=True)) == PreparedTxnState()
    p.transaction(topic, [b"kept"])
    assert read_values(broker.bootstrap, [(topic, 0)], "read_committed") == [b"kept"]


def test_prepare_needs_two_phase_commit(
    broker: KafpyBroker, kafpy_producers: Callable[..., KafpyProducer]
) -> None:
    p = kafpy_producers(broker, _name("tid"))
    with pytest.raises(TransactionStateError, match="keep_prepared_txn needs enable_2pc"):
        p(lambda producer: producer.init_transactions(keep_prepared_txn=True))
    p.init()
    p.producer.begin_transaction()
    with pytest.raises(InvalidTxnStateError, match="2PC is not enabled"):
        p(lambda producer: producer.prepare_transaction())


def test_a_broker_without_two_phase_commit_refuses_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    b = KafpyBroker(tmp_path_factory.mktemp("no-2pc-broker"), TXN_OVERRIDES).start()
    try:
        p = KafpyProducer(b, _name("tid"))
        try:
            with pytest.raises(
                KafkaError, match="enable transaction.two.phase.commit.enable on the brokers"
            ) as refused:
                p(lambda producer: producer.init_transactions(enable_2pc=True))
            assert refused.value.code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        finally:
            p.close()
    finally:
        b.stop()
