"""Topics stored in message format v0/v1 (`message.format.version` below 0.11.0) against a
real `kafpy server`, with confluent-kafka and kafka-python as the referees.

The mixed-format test follows librdkafka's 0092_mixed_msgver: one partition written while
its message.format.version moves 2.8 -> 0.10.0 -> 0.9.0 -> 2.8 holds v2 batches, v1 and
v0 messages side by side, and a consumer reads them in one go, in order.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafpy.records.memory_records import MemoryRecords
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker

T0 = 1_700_000_000_000
PER_STEP = 20
STEPS = [("2.8", None), ("0.10.0", "gzip"), ("0.10.0", None), ("0.9.0", "lz4"), ("0.9.0", None),
         ("2.8", "snappy")]  # fmt: skip
MAGIC_OF = {"2.8": 2, "0.10.0": 1, "0.9.0": 0}


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, 1, 1, config=config or {})])
    futures[name].result(30)


def set_message_format(bootstrap: str, topic: str, version: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("message.format.version", version,
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)


def stored_magics(broker: KafpyBroker, topic: str) -> list[int]:
    """The magic of every entry (batch or message) in the partition's segment files."""
    data = b"".join(
        p.read_bytes() for p in sorted((broker.data_dir / "logs" / f"{topic}-0").glob("*.log"))
    )
    return [b.magic for b in MemoryRecords(data).batches()]


def produce(bootstrap: str, topic: str, first: int, n: int, compression: str | None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50,
                         "compression.codec": compression or "none"})  # fmt: skip
    errors: list[object] = []
    for i in range(first, first + n):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0,
                         timestamp=T0 + i, on_delivery=lambda e, m: e and errors.append(e))  # fmt: skip
    assert producer.flush(30) == 0
    assert not errors


def expected_timestamp(version: str, i: int) -> int | None:
    """v0 messages have no timestamp; v1 and v2 keep the producer's CreateTime."""
    return None if MAGIC_OF[version] == 0 else T0 + i


def old_consumer(bootstrap: str, api_version: tuple[int, ...]) -> KafkaConsumer:
    """A kafka-python consumer speaking an old client's protocol, reading from the start and
    stopping after 10 s without records."""
    return KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version,
                         enable_auto_commit=False, consumer_timeout_ms=10000,
                         auto_offset_reset="earliest")  # fmt: skip


def test_mixed_message_formats_in_one_partition(kafpy_broker: KafpyBroker) -> None:
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("mixed")
    create_topic(bootstrap, topic)
    expected = []
    for step, (version, compression) in enumerate(STEPS):
        set_message_format(bootstrap, topic, version)
        first = step * PER_STEP
        produce(bootstrap, topic, first, PER_STEP, compression)
        expected += [(first + j, b"k%d" % (first + j), b"v%d" % (first + j),
                      expected_timestamp(version, first + j)) for j in range(PER_STEP)]  # fmt: skip
    total = len(expected)
    # every format is on disk, in the order it was written
    magics = stored_magics(kafpy_broker, topic)
    assert [m for i, m in enumerate(magics) if i == 0 or magics[i - 1] != m] == [2, 1, 0, 2]

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})  # fmt: skip
    try:
        consumer.assign([CkTopicPartition(topic, 0, 0)])
        got = []
        while len(got) < total:
            msgs = consumer.consume(total, timeout=10)
            assert msgs, f"confluent-kafka read {len(got)} of {total}"
            for m in msgs:
                assert m.error() is None, m.error()
                ts_type, ts = m.timestamp()
                got.append((m.offset(), m.key(), m.value(), ts if ts_type else None))
    finally:
        consumer.close()
    assert got == expected

    kp = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                       consumer_timeout_ms=10000, auto_offset_reset="earliest")  # fmt: skip
    try:
        kp.assign([TopicPartition(topic, 0)])
        got = []
        for msg in kp:
            got.append((msg.offset, msg.key, msg.value,
                        None if msg.timestamp in (None, -1) else msg.timestamp))  # fmt: skip
            if len(got) == total:
                break
    finally:
        kp.close()
    assert got == expected


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_kafka_python_0_10_on_a_v1_topic(
    kafpy_broker: KafpyBroker, compression: str | None
) -> None:
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("v1")
    create_topic(bootstrap, topic, {"message.format.version": "0.10.2"})
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=(0, 10),
                             compression_type=compression, linger_ms=100)  # fmt: skip
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0,
                             timestamp_ms=T0 + i) for i in range(30)]  # fmt: skip
    producer.flush(30)
    assert [f.get(10).offset for f in futures] == list(range(30))
    producer.close()
    assert set(stored_magics(kafpy_broker, topic)) == {1}
    consumer = old_consumer(bootstrap, (0, 10))
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        for msg in consumer:
            got.append((msg.offset, msg.key, msg.value, msg.timestamp))
            if len(got) == 30:
                break
    finally:
        consumer.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i, T0 + i) for i in range(30)]


def test_idempotent_producer_is_refused_on_a_v1_topic(kafpy_broker: KafpyBroker) -> None:
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("idem")
    create_topic(bootstrap, topic, {"message.format.version": "0.10.0"})
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "message.timeout.ms": 10000})  # fmt: skip
    errors: list[object] = []
    producer.produce(topic, b"v", partition=0, on_delivery=lambda e, m: errors.append(e))
    producer.flush(15)
    assert len(errors) == 1
    error = errors[0]
    assert isinstance(error, KafkaError)
    assert error.code() == KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT, error


def test_records_with_headers_are_refused_by_a_v1_topic(kafpy_broker: KafpyBroker) -> None:
    # Kafka's builder throws IllegalArgumentException("Magic v1 does not support record
    # headers"), which the produce answers as UNKNOWN_SERVER_ERROR; nothing is written
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("headers")
    create_topic(bootstrap, topic, {"message.format.version": "0.10.0"})
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000,
                         "retries": 0})  # fmt: skip
    errors: list[object] = []
    producer.produce(topic, b"v", partition=0, headers=[("h", b"1")],
                     on_delivery=lambda e, m: errors.append(e))  # fmt: skip
    producer.flush(15)
    assert len(errors) == 1
    error = errors[0]
    assert isinstance(error, KafkaError)
    assert error.code() == KafkaError.UNKNOWN, error
    assert stored_magics(kafpy_broker, topic) == []
    produce(bootstrap, topic, 0, 3, None)  # records without headers go in
    assert stored_magics(kafpy_broker, topic) == [1, 1, 1]


@pytest.mark.parametrize(("api_version", "fetch_magic"), [((0, 9), 0), ((0, 10, 1), 1)])
def test_old_consumers_read_a_mixed_log(
    kafpy_broker: KafpyBroker, api_version: tuple[int, ...], fetch_magic: int
) -> None:
    # Fetch v0-1 (magic 0) and v2-3 (magic 1): stored messages of the fetch's magic or
    # older go out as they are, newer ones are converted down
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("old-mixed")
    create_topic(bootstrap, topic)
    expected = []
    for step, (version, compression) in enumerate(STEPS):
        set_message_format(bootstrap, topic, version)
        first = step * PER_STEP
        produce(bootstrap, topic, first, PER_STEP, compression)
        has_ts = fetch_magic == 1 and MAGIC_OF[version] > 0
        expected += [(first + j, b"k%d" % (first + j), b"v%d" % (first + j),
                      T0 + first + j if has_ts else None) for j in range(PER_STEP)]  # fmt: skip
    consumer = old_consumer(bootstrap, api_version)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        for msg in consumer:
            got.append((msg.offset, msg.key, msg.value,
                        None if msg.timestamp in (None, -1) else msg.timestamp))  # fmt: skip
            if len(got) == len(expected):
                break
    finally:
        consumer.close()
    assert got == expected


def test_kafka_python_0_9_on_a_v0_topic(kafpy_broker: KafpyBroker) -> None:
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("v0")
    create_topic(bootstrap, topic, {"message.format.version": "0.9.0", "compression.type": "gzip"})
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=(0, 9), linger_ms=100)
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
               for i in range(25)]  # fmt: skip
    producer.flush(30)
    assert [f.get(10).offset for f in futures] == list(range(25))
    producer.close()
    assert set(stored_magics(kafpy_broker, topic)) == {0}
    consumer = old_consumer(bootstrap, (0, 9))
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = [(m.offset, m.key, m.value) for _, m in zip(range(25), consumer, strict=False)]
    finally:
        consumer.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(25)]
    # a v0 log has no timestamps: ListOffsets by time is refused as Kafka refuses it
    ck = Consumer({"bootstrap.servers": bootstrap, "group.id": topic})
    try:
        with pytest.raises(KafkaException) as info:
            ck.offsets_for_times([CkTopicPartition(topic, 0, T0)], 10)
    finally:
        ck.close()
    assert info.value.args[0].code() == KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT


def test_a_v1_log_recovers_after_kill_9(kafpy_broker: KafpyBroker) -> None:
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("kill")
    create_topic(bootstrap, topic, {"message.format.version": "0.10.2"})
    produce(bootstrap, topic, 0, 30, None)
    produce(bootstrap, topic, 30, 30, "gzip")
    kafpy_broker.kill()
    segment = next((kafpy_broker.log_dir / f"{topic}-0").glob("*.log"))
    whole = segment.read_bytes()
    segment.write_bytes(whole + whole[:20])  # a message torn by the kill
    kafpy_broker.start()
    bootstrap = kafpy_broker.bootstrap
    assert segment.read_bytes() == whole
    produce(bootstrap, topic, 60, 10, None)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.assign([CkTopicPartition(topic, 0, 0)])
        got: list[int] = []
        while len(got) < 70:
            msgs = consumer.consume(70, timeout=10)
            assert msgs, f"read {len(got)} of 70"
            got += [m.offset() for m in msgs if m.error() is None]
        offsets = consumer.offsets_for_times([CkTopicPartition(topic, 0, T0 + 45)], 10)
    finally:
        consumer.close()
    assert got == list(range(70))
    assert offsets[0].offset == 45


def test_a_broker_at_log_message_format_version_0_10_keeps_group_offsets(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    # the broker-wide default reaches every topic, __consumer_offsets included: the
    # group's offsets are stored as v1 messages, and read back after a restart
    broker = kafpy_broker_factory({"log.message.format.version": "0.10.0"})
    topic = topic_name("broker-wide")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, 0, 10, None)
    assert set(stored_magics(broker, topic)) == {1}
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + topic,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        consumer.subscribe([topic])
        got: list[int] = []
        while len(got) < 7:
            got += [m.offset() for m in consumer.consume(7 - len(got), timeout=10)]
        consumer.commit(offsets=[CkTopicPartition(topic, 0, 7)], asynchronous=False)
    finally:
        consumer.close()
    data = b"".join(p.read_bytes() for p in broker.log_dir.glob("__consumer_offsets-*/*.log"))
    assert data and {b.magic for b in MemoryRecords(data).batches()} == {1}
    broker.restart()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + topic,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        committed = consumer.committed([CkTopicPartition(topic, 0)], timeout=20)
    finally:
        consumer.close()
    assert committed[0].offset == 7


def test_a_transaction_touching_a_v1_topic_is_refused_and_aborts(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    kafpy_broker = kafpy_broker_factory({"transaction.state.log.replication.factor": "1",
                                         "transaction.state.log.min.isr": "1",
                                         "transaction.state.log.num.partitions": "2"})  # fmt: skip
    bootstrap = kafpy_broker.bootstrap
    old, new = topic_name("txn-v1"), topic_name("txn-v2")
    create_topic(bootstrap, old, {"message.format.version": "0.10.0"})
    create_topic(bootstrap, new)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": old,
                         "message.timeout.ms": 10000})  # fmt: skip
    producer.init_transactions(30)
    producer.begin_transaction()
    errors: list[object] = []
    producer.produce(old, b"v", partition=0, on_delivery=lambda e, m: errors.append(e))
    producer.flush(15)
    assert len(errors) == 1
    error = errors[0]
    assert isinstance(error, KafkaError)
    assert error.code() == KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT, error
    # the abort's marker for the v1 partition is answered UNSUPPORTED_FOR_MESSAGE_FORMAT
    # and dropped, so the transaction completes and the producer goes on
    producer.abort_transaction(30)
    line = (
        f"Sending {old}'s transaction marker from partition {old}-0 has failed with  "
        "UNSUPPORTED_FOR_MESSAGE_FORMAT. This partition will be removed from the set of "
        "partitions waiting for completion"
    )
    wait_until(lambda: line in kafpy_broker.log_path.read_text(), 20, "the dropped marker")
    producer.begin_transaction()
    producer.produce(new, b"committed", partition=0)
    producer.commit_transaction(30)
    assert stored_magics(kafpy_broker, old) == []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": new,
                         "isolation.level": "read_committed"})  # fmt: skip
    try:
        consumer.assign([CkTopicPartition(new, 0, 0)])
        msgs = consumer.consume(1, timeout=10)
    finally:
        consumer.close()
    assert [m.value() for m in msgs] == [b"committed"]


def test_kafpys_console_consumer_reads_a_mixed_log(kafpy_broker: KafpyBroker) -> None:
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("console")
    create_topic(bootstrap, topic)
    for step, (version, compression) in enumerate(STEPS):
        set_message_format(bootstrap, topic, version)
        produce(bootstrap, topic, step * PER_STEP, PER_STEP, compression)
    total = len(STEPS) * PER_STEP
    result = subprocess.run(
        [sys.executable, "-m", "kafpy", "console-consumer", "--bootstrap-server", bootstrap,
         "--topic", topic, "--from-beginning", "--max-messages", str(total),
         "--timeout-ms", "10000"],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines() == [f"v{i}" for i in range(total)]


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_large_batches_to_a_v1_topic(kafpy_broker: KafpyBroker, compression: str | None) -> None:
    # batches over 64 KiB are converted ahead of the append, off the event loop
    bootstrap = kafpy_broker.bootstrap
    topic = topic_name("large")
    create_topic(bootstrap, topic, {"message.format.version": "0.10.0"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200,
                         "compression.codec": compression or "none"})  # fmt: skip
    n = 5000
    for i in range(n):
        producer.produce(topic, key=b"k%d" % i, value=b"%0100d" % i, partition=0, timestamp=T0 + i)
    assert producer.flush(30) == 0
    magics = stored_magics(kafpy_broker, topic)
    assert set(magics) == {1}
    if compression:  # one wrapper per produced batch, some of them large
        assert len(magics) < n / 10
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.assign([CkTopicPartition(topic, 0, 0)])
        got: list[tuple[int, bytes | None, int]] = []
        while len(got) < n:
            msgs = consumer.consume(n, timeout=10)
            assert msgs, f"read {len(got)} of {n}"
            got += [(m.offset(), m.value(), m.timestamp()[1]) for m in msgs if m.error() is None]
    finally:
        consumer.close()
    assert got == [(i, b"%0100d" % i, T0 + i) for i in range(n)]
