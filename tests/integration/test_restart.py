"""A broker restarted between produce and consume keeps everything; one killed with SIGKILL
mid-produce keeps every record it acknowledged (acks=1), and a torn tail is cut at start-up."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.records.memory_records import MemoryRecords
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[int, bytes]] = []
        misses = 0
        while misses < 30:
            msg = consumer.poll(1.0)
            if msg is None:
                misses += 1
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(msg.error())
            out.append((msg.offset(), msg.value()))
        raise AssertionError(f"no end of partition after {len(out)} records")
    finally:
        consumer.close()


def test_restart_between_produce_and_consume(kafpy_broker: KafpyBroker) -> None:
    topic = f"rs-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": kafpy_broker.bootstrap, "acks": "all"})
    for i in range(500):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(30) == 0
    assert kafpy_broker.stop() == 0
    assert (kafpy_broker.log_dir / ".kafka_cleanshutdown").exists()
    kafpy_broker.start()
    assert consume_all(kafpy_broker.bootstrap, topic) == [(i, b"%d" % i) for i in range(500)]
    # and the log continues where it was
    producer = Producer({"bootstrap.servers": kafpy_broker.bootstrap, "acks": "1"})
    offsets: list[int] = []
    producer.produce(topic, value=b"more", on_delivery=lambda e, m: offsets.append(m.offset()))
    assert producer.flush(30) == 0
    assert offsets == [500]


def test_sigkill_mid_produce_keeps_acknowledged_records(kafpy_broker: KafpyBroker) -> None:
    topic = f"kill-{uuid.uuid4().hex[:8]}"
    acked: dict[int, bytes] = {}

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked[msg.offset()] = msg.value()

    producer = Producer({
        "bootstrap.servers": kafpy_broker.bootstrap, "acks": "1", "linger.ms": 1,
        "batch.num.messages": 50, "message.timeout.ms": 3000, "retries": 0,
    })  # fmt: skip
    killed = False
    i = 0
    while i < 200_000:
        try:
            producer.produce(topic, value=b"value-%d" % i, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.01)
            continue
        producer.poll(0)
        i += 1
        if not killed and len(acked) >= 3000:
            kafpy_broker.kill()  # SIGKILL while batches are in flight
            killed = True
            break
    producer.flush(10)
    assert killed, "the broker was never killed: too few records were acknowledged"
    assert not (kafpy_broker.log_dir / ".kafka_cleanshutdown").exists()

    # tear the tail of the active segment: a batch header promising more bytes than follow
    [segment] = sorted((kafpy_broker.log_dir / f"{topic}-0").glob("*.log"))[-1:]
    # the kill itself may have torn the last batch (a write cut short): recovery cuts that too
    good_size = MemoryRecords(segment.read_bytes()).valid_bytes()
    with segment.open("ab") as f:
        f.write((10**6).to_bytes(8, "big") + (500).to_bytes(4, "big") + b"\x00" * 40)

    kafpy_broker.start()
    assert segment.stat().st_size == good_size  # recovery cut the torn batch
    records = dict(consume_all(kafpy_broker.bootstrap, topic))
    assert sorted(records) == list(range(len(records)))  # offsets contiguous from 0
    missing = {o: v for o, v in acked.items() if records.get(o) != v}
    assert missing == {}, f"{len(missing)} acknowledged records lost or changed"
    assert len(records) >= len(acked)


@pytest.mark.parametrize(
    "checkpoint",
    [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ],
)
def test_restart_with_a_malformed_checkpoint(
    kafpy_broker_factory: Callable[..., KafpyBroker], checkpoint: str
) -> None:
    broker = kafpy_broker_factory({"log.cleaner.backoff.ms": "100"})
    topic = f"cp-{uuid.uuid4().hex[:8]}"
    compacted = f"cpc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    new_topic = NewTopic(compacted, 1, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([new_topic])[compacted].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce(topic, value=b"%d" % i)
        producer.produce(compacted, key=b"k%d" % (i % 3), value=b"%d" % i)
    assert producer.flush(30) == 0
    assert broker.stop() == 0
    assert (broker.log_dir / checkpoint).exists() or checkpoint == "cleaner-offset-checkpoint"
    (broker.log_dir / checkpoint).write_bytes(b"0\n1\n\xff\xfe\x00 garbage \x80\n")

    broker.start()
    assert consume_all(broker.bootstrap, topic) == [(i, b"%d" % i) for i in range(200)]
    # the partitions are led again (LeaderAndIsr went through) and take more records
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    producer.produce(topic, value=b"more", on_delivery=lambda e, m: offsets.append(m.offset()))
    assert producer.flush(30) == 0
    assert offsets == [200]
    # warned about by name
    warned = wait_until(
        lambda: [
            line
            for line in broker.log_path.read_text(errors="replace").splitlines()
            if "WARN" in line and checkpoint in line and "not UTF-8" in line
        ],
        30,
        "the warning naming the checkpoint",
        interval_s=0.2,
        context=broker.log_tail,
    )
    assert warned, broker.log_tail()
    out = broker.log_path.read_text(errors="replace")
    assert "Traceback" not in out
