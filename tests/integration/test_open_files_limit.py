"""A broker under a low RLIMIT_NOFILE: partitions are not bounded by it, and running out of
descriptors refuses the new partition, never takes a log dir offline, never halts.

Each test starts `kafpy server` with RLIMIT_NOFILE 256 (soft and hard, so start-up cannot
raise it). Without the FileHandleCache a partition held three descriptors (log, index,
time index), and about 80 partitions took them all.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker

LIMIT = 256
STAYS_ONLINE = "stays online: the broker is out of file descriptors"
OVERRIDES = {
    # one __consumer_offsets partition: the consumers' group.id makes the broker create it
    "offsets.topic.num.partitions": "1",
    # the checkpoints that once took the dir offline run while descriptors are out
    "replica.high.watermark.checkpoint.interval.ms": "200",
    "log.flush.offset.checkpoint.interval.ms": "200",
    "log.initial.task.delay.ms": "200",
}


def open_fds(broker: KafpyBroker) -> int:
    assert broker.process is not None
    return len(os.listdir(f"/proc/{broker.process.pid}/fd"))


def create(admin: AdminClient, topic: str, partitions: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=60)[topic].result(90)


def produce(producer: Producer, topic: str, partitions: int, tag: bytes) -> None:
    errors: list[Any] = []
    for p in range(partitions):
        producer.produce(
            topic, value=b"%s-%d" % (tag, p), partition=p, on_delivery=lambda e, m: errors.append(e)
        )
    assert producer.flush(60) == 0
    assert errors == [None] * partitions, [e for e in errors if e is not None][:5]


def consume(consumer: Consumer, topic: str, partitions: int) -> dict[int, list[bytes]]:
    """Every record of the topic's partitions, by partition (to the end of each)."""
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    at_end: set[int] = set()

    def read_to_the_end() -> bool:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error():
            assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
            at_end.add(msg.partition())
        elif msg is not None:
            out[msg.partition()].append(msg.value())
        return len(at_end) >= partitions

    wait_until(
        read_to_the_end, 60, "every partition's end", interval_s=0,
        context=lambda: f"{partitions - len(at_end)} partitions never ended",
    )  # fmt: skip
    return out


@contextmanager
def clients(bootstrap: str) -> Iterator[tuple[AdminClient, Producer, Consumer]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fd-limit",
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    try:
        yield admin, producer, consumer
    finally:
        consumer.close()


def assert_served_and_alive(broker: KafpyBroker) -> None:
    assert broker.process is not None and broker.process.poll() is None, broker.log_tail()
    out = broker.log_path.read_text(errors="replace")
    assert "Stopping serving logs in dir" not in out
    assert "Shutdown broker because all log dirs" not in out


def test_a_broker_holds_and_serves_more_partitions_than_its_descriptor_limit(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory(OVERRIDES, open_files_limit=LIMIT)
    out = broker.log_path.read_text(errors="replace")
    assert (
        f"Open files limit (RLIMIT_NOFILE): soft {LIMIT} (was {LIMIT}), hard {LIMIT}; "
        f"at most {LIMIT // 2} segment files are kept open"
    ) in out
    topics = [f"many-{i}" for i in range(3)]
    with clients(broker.bootstrap) as (admin, producer, consumer):
        for topic in topics:  # 300 partitions, 900 files; at 3 descriptors each: 3.5x the limit
            create(admin, topic, 100)
            assert open_fds(broker) < LIMIT
        for topic in topics:
            produce(producer, topic, 100, b"first")
        for topic in topics:
            produce(producer, topic, 100, b"second")
        assert open_fds(broker) < LIMIT
        for topic in topics:
            records = consume(consumer, topic, 100)
            assert records == {p: [b"first-%d" % p, b"second-%d" % p] for p in range(100)}
        assert open_fds(broker) < LIMIT
    assert_served_and_alive(broker)
    assert "Too many open files" not in broker.log_path.read_text(errors="replace")


def test_out_of_descriptors_a_new_topic_is_refused_and_the_others_are_served(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory(OVERRIDES, open_files_limit=LIMIT)
    sockets: list[socket.socket] = []
    with clients(broker.bootstrap) as (admin, producer, consumer):
        create(admin, "existing", 4)
        produce(producer, "existing", 4, b"before")
        assert consume(consumer, "existing", 4) == {p: [b"before-%d" % p] for p in range(4)}
        try:
            # connections take every descriptor the broker has left (the admin, producer
            # and consumer keep the connections they opened above); a new log first makes
            # room by closing cached segment files, so new topics are created until the
            # cache has nothing left to give up, each round's freed descriptors taken too
            error = None
            for attempt in range(20):
                while open_fds(broker) < LIMIT and len(sockets) < 2 * LIMIT:
                    sockets.append(socket.create_connection((broker.host, broker.port)))
                    if len(sockets) % 16 == 0:
                        time.sleep(0.05)  # let the broker accept what is queued
                time.sleep(0.1)
                topic = f"refused-{attempt}"
                refused = admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=30)
                error = refused[topic].exception(60)
                if error is not None:
                    break
            assert error is not None and error.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR
            message = error.args[0].str()
            assert "Cannot create the log of refused-" in message, message
            assert f"RLIMIT_NOFILE limit of {LIMIT}" in message, message

            # the partitions it had are served all along, checkpoints fail and retry
            produce(producer, "existing", 4, b"during")

            def checkpoint_failed() -> bool:
                if STAYS_ONLINE in broker.log_path.read_text(errors="replace"):
                    return True
                # refusing the topic may have closed cached files: take what they freed
                while open_fds(broker) < LIMIT and len(sockets) < 2 * LIMIT:
                    sockets.append(socket.create_connection((broker.host, broker.port)))
                return False

            wait_until(
                checkpoint_failed, 30, "a checkpoint to run out of descriptors", interval_s=0.2
            )
            assert_served_and_alive(broker)
        finally:
            for s in sockets:
                s.close()
        produce(producer, "existing", 4, b"after")
        assert consume(consumer, "existing", 4) == {
            p: [b"before-%d" % p, b"during-%d" % p, b"after-%d" % p] for p in range(4)
        }
        create(admin, "later", 2)  # with descriptors back, new partitions are created again
        produce(producer, "later", 2, b"x")
    assert_served_and_alive(broker)
    out = broker.log_path.read_text(errors="replace")
    assert "The partition is refused; the other partitions are served as before." in out
    assert STAYS_ONLINE in out
