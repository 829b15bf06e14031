"""Transactions through a running broker with real clients: confluent-kafka's and aiokafka's
transactional producers, read_committed and read_uncommitted consumers, fencing, the
broker aborting a transaction past its timeout, and Kafka's error codes for bad input with
nothing written (requests sent with kafpy's own BrokerConnection)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, running_broker
from tests.fixtures.transactions import (
    TXN_OVERRIDES,
    WAIT_S,
    ExactlyOnceCopier,
    produce_numbered,
    read_values,
    unique_name,
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    with running_broker(tmp_path_factory.mktemp("txn-broker"), TXN_OVERRIDES) as b:
        yield b


_name = unique_name


def _producer(broker: KafpyBroker, tid: str, **extra: Any) -> Producer:
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid, **extra})
    p.init_transactions(WAIT_S)
    return p


def _read(broker: KafpyBroker, partitions: list[tuple[str, int]], isolation: str) -> list[bytes]:
    return read_values(broker.bootstrap, partitions, isolation)


def _create(broker: KafpyBroker, topic: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(WAIT_S)


async def _send(
    broker: KafpyBroker, api: ApiKey, body: dict[str, Any], version: int
) -> dict[str, Any]:
    conn = BrokerConnection(broker.host, broker.port)
    try:
        await conn.connect()
        return await conn.send(api, body, version)
    finally:
        await conn.close()


def _request(
    broker: KafpyBroker, api: ApiKey, body: dict[str, Any], version: int
) -> dict[str, Any]:
    return asyncio.run(_send(broker, api, body, version))


def _fetch(broker: KafpyBroker, topic: str, isolation: int) -> dict[str, Any]:
    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                    "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": "",
    }  # fmt: skip
    return dict(_request(broker, ApiKey.FETCH, body, 11)["responses"][0]["partitions"][0])


def _txn_log_end(broker: KafpyBroker) -> list[int]:
    """The end offsets of every __transaction_state partition (to see that nothing was written)."""
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "__transaction_state", "partitions": [
            {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1} for p in range(4)]}]}  # fmt: skip
    r = _request(broker, ApiKey.LIST_OFFSETS, body, 5)
    return [p["offset"] for p in r["topics"][0]["partitions"]]


def test_read_committed_sees_a_transaction_only_once_committed(broker: KafpyBroker) -> None:
    t1, t2 = _name("out"), _name("side")
    _create(broker, t1, 2)
    _create(broker, t2)
    p = _producer(broker, _name("tx"))
    p.begin_transaction()
    for i in range(3):
        p.produce(t1, f"a{i}".encode(), partition=i % 2)
    p.produce(t2, b"b0")
    p.flush(WAIT_S)
    partitions = [(t1, 0), (t1, 1), (t2, 0)]
    assert len(_read(broker, partitions, "read_uncommitted")) == 4
    open_fetch = _fetch(broker, t2, isolation=1)
    assert open_fetch["high_watermark"] == 1 and open_fetch["last_stable_offset"] == 0
    assert _read(broker, partitions, "read_committed") == []
    p.commit_transaction(WAIT_S)
    assert _read(broker, partitions, "read_committed") == [b"a0", b"a1", b"a2", b"b0"]


def test_aborted_records_are_hidden_from_read_committed_only(broker: KafpyBroker) -> None:
    topic = _name("abort")
    _create(broker, topic)
    p = _producer(broker, _name("tx"))
    p.begin_transaction()
    p.produce(topic, b"aborted")
    p.flush(WAIT_S)
    p.abort_transaction(WAIT_S)
    p.begin_transaction()
    p.produce(topic, b"committed")
    p.commit_transaction(WAIT_S)
    assert _read(broker, [(topic, 0)], "read_committed") == [b"committed"]
    assert _read(broker, [(topic, 0)], "read_uncommitted") == [b"aborted", b"committed"]


def test_a_transaction_goes_on_in_sequence_after_delete_records(broker: KafpyBroker) -> None:
    """librdkafka's 0103 (fatal_idempo_error_without_kip360): records of a committed
    transaction deleted while the next one is open; the producer goes on at its next
    sequence, where the broker used to forget it and refuse that as out of order."""
    topic = _name("deleted")
    _create(broker, topic)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    p = _producer(broker, _name("tx"), **{"batch.num.messages": 1})
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"a%d" % i, partition=0)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    (deleted,) = admin.delete_records([TopicPartition(topic, 0, 6)]).values()
    assert deleted.result(WAIT_S).low_watermark == 6
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": _name("g")})

    def watermarks() -> tuple[int, int]:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), WAIT_S)
        return low, high

    # the commit marker (offset 6) lands after the log start moved past the data
    wait_until(lambda: watermarks() == (6, 7), WAIT_S)
    for i in range(4):
        p.produce(topic, b"b%d" % i, partition=0)
    p.commit_transaction(WAIT_S)  # a fatal OUT_OF_ORDER_SEQUENCE_NUMBER raised here
    wait_until(lambda: watermarks() == (6, 12), WAIT_S)  # 4 records and their marker
    consumer.close()


def test_a_second_producer_with_the_same_id_fences_the_first(broker: KafpyBroker) -> None:
    topic, tid = _name("fence"), _name("tx")
    _create(broker, topic)
    first = _producer(broker, tid)
    first.begin_transaction()
    first.produce(topic, b"zombie")
    first.flush(WAIT_S)
    second = _producer(broker, tid)  # aborts the first one's transaction
    second.begin_transaction()
    second.produce(topic, b"live")
    second.commit_transaction(WAIT_S)
    with pytest.raises(KafkaException) as fenced:
        first.produce(topic, b"late")
        first.commit_transaction(WAIT_S)
    assert fenced.value.args[0].fatal() or "fenced" in str(fenced.value).lower()
    assert _read(broker, [(topic, 0)], "read_committed") == [b"live"]


def test_the_broker_aborts_a_transaction_left_open_past_its_timeout(broker: KafpyBroker) -> None:
    topic = _name("timeout")
    _create(broker, topic)
    p = _producer(broker, _name("tx"), **{"transaction.timeout.ms": 1000})
    p.begin_transaction()
    p.produce(topic, b"forgotten")
    p.flush(WAIT_S)
    wait_until(
        lambda: _fetch(broker, topic, isolation=1)["last_stable_offset"] >= 2,  # data + marker
        WAIT_S,
        "the open transaction to be aborted",
        interval_s=0.2,
    )
    fetched = _fetch(broker, topic, isolation=1)
    assert [a["producer_id"] for a in fetched["aborted_transactions"] or []]
    assert _read(broker, [(topic, 0)], "read_committed") == []
    with pytest.raises(KafkaException):
        p.commit_transaction(WAIT_S)


def test_send_offsets_to_transaction_commits_the_groups_offsets_with_it(
    broker: KafpyBroker,
) -> None:
    versions = _request(broker, ApiKey.API_VERSIONS, {}, 0)
    if ApiKey.TXN_OFFSET_COMMIT not in {e["api_key"] for e in versions["api_keys"]}:
        pytest.skip(
            "TxnOffsetCommit (the group side, issue 15 wp-a) is not served by this build yet"
        )
    source, sink, group = _name("in"), _name("copy"), _name("copier")
    _create(broker, source)
    _create(broker, sink)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        plain.produce(source, f"r{i}".encode())
    plain.flush(WAIT_S)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})  # fmt: skip
    try:
        c.assign([TopicPartition(source, 0, 0)])
        got = []

        def five_read() -> bool:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
            return len(got) >= 5

        wait_until(five_read, WAIT_S, "5 records of the source", interval_s=0)
        p = _producer(broker, _name("tx"))
        p.begin_transaction()
        for m in got:
            p.produce(sink, m.value())
        p.send_offsets_to_transaction(
            [TopicPartition(source, 0, got[-1].offset() + 1)], c.consumer_group_metadata(), WAIT_S
        )
        p.commit_transaction(WAIT_S)
        committed = c.committed([TopicPartition(source, 0)], WAIT_S)
        assert committed[0].offset == 5
    finally:
        c.close()
    assert _read(broker, [(sink, 0)], "read_committed") == [f"r{i}".encode() for i in range(5)]


def test_aiokafka_transactional_producer_round_trips(broker: KafpyBroker) -> None:
    from aiokafka import AIOKafkaProducer

    topic = _name("aio")
    _create(broker, topic)

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, transactional_id=_name("aio-tx")
        )
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"aio-1")
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"aio-aborted")
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    assert _read(broker, [(topic, 0)], "read_committed") == [b"aio-1"]


def test_bad_input_gets_kafkas_codes_and_writes_nothing(broker: KafpyBroker) -> None:
    tid = _name("bad")
    real = _name("real")
    _create(broker, real)
    p = _producer(broker, tid)  # makes the coordinator's partitions exist and loaded
    before = _txn_log_end(broker)
    end = _request(broker, ApiKey.END_TXN, {"transactional_id": _name("unknown"), "producer_id": 4242,
                                            "producer_epoch": 0, "committed": True}, 3)  # fmt: skip
    assert end["error_code"] == Errors.INVALID_PRODUCER_ID_MAPPING
    add = _request(broker, ApiKey.ADD_PARTITIONS_TO_TXN, {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": 0, "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": _name("missing"), "partitions": [0]},
                                {"name": real, "partitions": [0]}],
    }, 1)  # fmt: skip
    codes = {r["name"].split("-")[0]: r["results_by_partition"][0]["partition_error_code"]
             for r in add["results_by_topic_v3_and_below"]}  # fmt: skip
    assert codes == {
        "missing": Errors.UNKNOWN_TOPIC_OR_PARTITION,
        "real": Errors.OPERATION_NOT_ATTEMPTED,  # a topic that exists, not attempted
    }
    too_long = _request(
        broker,
        ApiKey.INIT_PRODUCER_ID,
        {"transactional_id": tid, "transaction_timeout_ms": 900001},
        1,
    )
    assert too_long["error_code"] == Errors.INVALID_TRANSACTION_TIMEOUT
    # a stale epoch: INVALID_PRODUCER_EPOCH before EndTxn v2, PRODUCER_FENCED from v2
    init = _request(
        broker,
        ApiKey.INIT_PRODUCER_ID,
        {"transactional_id": tid, "transaction_timeout_ms": 60000},
        1,
    )
    assert init["error_code"] == Errors.NONE
    after_init = _txn_log_end(broker)
    stale = {"transactional_id": tid, "producer_id": init["producer_id"],
             "producer_epoch": init["producer_epoch"] - 1, "committed": False}  # fmt: skip
    assert _request(broker, ApiKey.END_TXN, stale, 1)["error_code"] == Errors.INVALID_PRODUCER_EPOCH
    assert _request(broker, ApiKey.END_TXN, stale, 2)["error_code"] == Errors.PRODUCER_FENCED
    assert _txn_log_end(broker) == after_init
    assert sum(after_init) == sum(before) + 1  # only the InitProducerId was written
    del p


def test_no_transaction_state_topic_while_fewer_brokers_than_its_replication_factor(
    tmp_path: Path,
) -> None:
    b = KafpyBroker(tmp_path, {"transaction.state.log.replication.factor": "3"})
    b.start()
    try:
        for _ in range(2):
            r = _request(b, ApiKey.FIND_COORDINATOR, {"key": "tx", "key_type": 1}, 2)
            assert r["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE
        meta = _request(b, ApiKey.METADATA, {"topics": [{"name": "__transaction_state"}]}, 1)
        assert meta["topics"][0]["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert "does not meet the required replication factor '3'" in b.log_path.read_text()
    finally:
        b.stop()


def test_transactions_tool_lists_and_describes(broker: KafpyBroker) -> None:
    from click.testing import CliRunner

    from kafpy.cli.transactions import command

    topic, tid = _name("tool"), _name("tool-tx")
    _create(broker, topic)
    p = _producer(broker, tid)
    p.begin_transaction()
    p.produce(topic, b"open")
    p.flush(WAIT_S)
    runner = CliRunner()
    listed = runner.invoke(command, ["--bootstrap-server", broker.bootstrap, "--list"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert all(line.endswith("\t") for line in lines)  # a tab after every column, as Kafka
    assert lines[0].split() == [
        "TransactionalId",
        "Coordinator",
        "ProducerId",
        "TransactionState",
    ]
    ours = [line.split() for line in lines[1:] if line.startswith(tid)]
    assert len(ours) == 1 and ours[0][1] == "0" and ours[0][3] == "Ongoing"
    described = runner.invoke(
        command, ["--bootstrap-server", broker.bootstrap, "--describe", "--transactional-id", tid]
    )
    assert described.exit_code == 0, described.output
    header, row = described.output.splitlines()
    assert header.split() == [
        "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
        "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
    ]  # fmt: skip
    cells = row.split()
    assert (cells[0], cells[1], cells[4], cells[5], cells[8]) == (
        "0",
        tid,
        "Ongoing",
        "60000",
        f"{topic}-0",
    )
    p.commit_transaction(WAIT_S)
    missing = runner.invoke(
        command,
        ["--bootstrap-server", broker.bootstrap, "--describe", "--transactional-id", "nope"],
    )
    assert missing.exit_code == 1
    assert "Failed to describe transaction state of transactional-id `nope`" in missing.output


def test_after_a_kill_the_reloaded_coordinator_aborts_the_open_transaction(
    kafpy_broker_factory: Any,
) -> None:
    b: KafpyBroker = kafpy_broker_factory(TXN_OVERRIDES, name="killed")
    topic = _name("failover")
    _create(b, topic)
    done = _producer(b, _name("done"))
    done.begin_transaction()
    done.produce(topic, b"committed")
    done.commit_transaction(WAIT_S)
    tid = _name("open")
    left_open = _producer(b, tid, **{"transaction.timeout.ms": 2000})
    left_open.begin_transaction()
    left_open.produce(topic, b"in flight")
    left_open.flush(WAIT_S)
    b.kill()
    b.start()

    # loaded from __transaction_state as Ongoing: aborted once past its timeout
    def aborted() -> bool:
        f = _fetch(b, topic, isolation=1)
        return f["last_stable_offset"] >= f["high_watermark"] and f["high_watermark"] >= 4

    wait_until(
        aborted,
        WAIT_S,
        "the open transaction to be aborted",
        interval_s=0.2,
        context=lambda: str(_fetch(b, topic, isolation=1)),
    )
    assert _read(b, [(topic, 0)], "read_committed") == [b"committed"]
    again = _producer(b, tid)  # the id lives on, at a new epoch
    again.begin_transaction()
    again.produce(topic, b"after")
    again.commit_transaction(WAIT_S)
    assert _read(b, [(topic, 0)], "read_committed") == [b"after", b"committed"]


def test_exactly_once_copy_survives_two_broker_kills(kafpy_broker_factory: Any) -> None:
    total = 100_000
    b: KafpyBroker = kafpy_broker_factory(TXN_OVERRIDES, name="eos")
    source, sink = _name("eos-in"), _name("eos-out")
    _create(b, source)
    _create(b, sink)
    produce_numbered(b.bootstrap, source, total, WAIT_S)
    copier = ExactlyOnceCopier(b.bootstrap, source, sink, total, _name("eos-copier"))
    thread = copier.start()
    try:
        for fraction in (0.3, 0.6):
            copier.wait_copied(fraction, context=f":\n{b.log_tail(30)}")
            assert copier.copied_offset < total  # the kill lands mid-run
            b.kill()
            b.start()
        thread.join(180)
        assert not thread.is_alive(), (
            f"the copier did not finish: at {copier.copied_offset} of {total}"
        )
    finally:
        copier.stop = True
    values = _read(b, [(sink, 0)], "read_committed")
    assert len(values) == total, f"{len(values) - len(set(values))} duplicates"
    assert sorted(int(v) for v in values) == list(range(total))


def test_find_hanging_reports_open_transactions_no_coordinator_knows(broker: KafpyBroker) -> None:
    from click.testing import CliRunner

    from kafpy.cli.transactions import command
    from kafpy.records import RecordBatchBuilder

    topic = _name("hanging")
    _create(broker, topic)
    # a transactional batch from a producer id no coordinator handed out: nothing will end it
    builder = RecordBatchBuilder(
        producer_id=987654, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    builder.append(int(time.time() * 1000), None, b"stuck")
    produced = _request(broker, ApiKey.PRODUCE, {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": builder.build()}]}]}, 8)  # fmt: skip
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == Errors.NONE
    p = _producer(broker, _name("known"))  # an open transaction its coordinator knows
    p.begin_transaction()
    p.produce(topic, b"open")
    p.flush(WAIT_S)
    time.sleep(0.01)
    args = ["--bootstrap-server", broker.bootstrap, "--find-hanging", "--broker-id", "0",
            "--topic", topic, "--max-transaction-timeout", "0"]  # fmt: skip
    found = CliRunner().invoke(command, args)
    assert found.exit_code == 0, found.output
    header, *rows = found.output.splitlines()
    assert header.split() == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                              "StartOffset", "LastTimestamp", "Duration(min)"]  # fmt: skip
    assert [r.split()[:6] for r in rows] == [[topic, "0", "987654", "0", "-1", "0"]]
    p.abort_transaction(WAIT_S)
