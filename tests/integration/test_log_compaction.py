"""Log compaction through a running `kafpy server`: a compacted topic written by
confluent-kafka shrinks to about one record per key outside the active segment,
consumers from the beginning see the latest value of every key, and a SIGKILL in the
middle of a cleaning round leaves a log that reloads and is cleaned again."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.records import MemoryRecords
from kafpy.storage.cleaner.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT_FILE
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.processes import command_line, descendants, wait_gone

TOPIC = "compacted"
# CI size; the full size: KAFPY_COMPACTION_KEYS=10000 KAFPY_COMPACTION_UPDATES=50
KEYS = int(os.environ.get("KAFPY_COMPACTION_KEYS", 2000))
UPDATES = int(os.environ.get("KAFPY_COMPACTION_UPDATES", 10))
WAIT_S = float(os.environ.get("KAFPY_COMPACTION_WAIT_S", 45))

BROKER = {"log.cleaner.backoff.ms": "100", "log.cleaner.dedupe.buffer.size": str(16 << 20)}


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": str(64 * 1024),
        "min.cleanable.dirty.ratio": "0.01",
    }
    futures = admin.create_topics([NewTopic(TOPIC, 1, 1, config=config)], operation_timeout=30)
    futures[TOPIC].result(30)


def produce(bootstrap: str, round_: int) -> dict[bytes, bytes]:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "batch.size": 16384}
    )
    errors: list[Any] = []
    latest: dict[bytes, bytes] = {}
    for u in range(UPDATES):
        for k in range(KEYS):
            key, value = b"key-%05d" % k, b"round-%d-update-%d-" % (round_, u) + b"x" * 60
            while True:
                try:
                    producer.produce(
                        TOPIC, key=key, value=value, on_delivery=lambda e, m: e and errors.append(e)
                    )
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.01)
            latest[key] = value
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []
    return latest


def consume_all(bootstrap: str) -> tuple[dict[bytes, bytes], int]:
    """The final key -> value map read from the beginning, and how many records were read."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        seen: dict[bytes, bytes] = {}
        count = 0

        def at_the_end() -> bool:
            nonlocal count
            msg = consumer.poll(1.0)
            if msg is None:
                return False
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return True
                raise AssertionError(msg.error())
            seen[msg.key()] = msg.value()
            count += 1
            return False

        wait_until(at_the_end, WAIT_S, "the end of the partition", interval_s=0)
        return seen, count
    finally:
        consumer.close()


def partition_dir(broker: KafpyBroker) -> Path:
    return broker.log_dir / f"{TOPIC}-0"


def segment_files(broker: KafpyBroker) -> list[Path]:
    return sorted(partition_dir(broker).glob("*.log"))


def records_outside_active_segment(broker: KafpyBroker) -> int:
    count = 0
    for f in segment_files(broker)[:-1]:
        data = MemoryRecords(f.read_bytes())
        count += sum(len(list(b.records())) for b in data.batches_allow_partial())
    return count


def cleaned_to(broker: KafpyBroker) -> int:
    entries = OffsetCheckpointFile(broker.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read()
    return next((o for tp, o in entries.items() if tp.topic == TOPIC), -1)


def active_base(broker: KafpyBroker) -> int:
    return int(segment_files(broker)[-1].name.split(".")[0])


def test_compaction_end_to_end_and_sigkill_mid_clean(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory(dict(BROKER))
    create_topic(broker.bootstrap)
    expected = produce(broker.bootstrap, 0)
    total = KEYS * UPDATES
    wait_until(
        lambda: cleaned_to(broker) >= active_base(broker),
        WAIT_S,
        "the first cleaning",
        context=broker.log_tail,
    )

    outside = records_outside_active_segment(broker)
    assert outside <= KEYS * 1.05  # about one record per key outside the active segment
    seen, read = consume_all(broker.bootstrap)
    assert seen == expected
    assert read < total // 2

    # A slow (throttled) cleaner, killed while a .cleaned segment is being written.
    broker.stop()
    # slow enough that a .cleaned segment (64 KiB) is on disk for about half a second
    broker.overrides["log.cleaner.io.max.bytes.per.second"] = str(128 * 1024)
    broker.start()
    expected = produce(broker.bootstrap, 1)
    wait_until(
        lambda: any(p.name.endswith(".cleaned") for p in partition_dir(broker).iterdir()),
        WAIT_S,
        "a cleaning round in progress",
        interval_s=0.02,
        context=broker.log_tail,
    )
    assert broker.process is not None
    workers = descendants(broker.process.pid)  # the cleaner worker and its resource tracker
    assert workers, "a round is in progress but the broker has no worker process"
    broker.kill()
    # the worker dies with its broker: nothing is left running, reparented or not
    left = wait_gone(workers)
    assert not left, [f"{p}: {command_line(p)}" for p in left]
    del broker.overrides["log.cleaner.io.max.bytes.per.second"]
    broker.start()
    # the reload discards the half-written segment; the cleaner then runs again
    wait_until(
        lambda: (
            cleaned_to(broker) >= active_base(broker)
            and not any(
                p.name.endswith((".cleaned", ".swap")) for p in partition_dir(broker).iterdir()
            )
        ),
        WAIT_S,
        "cleaning after the restart",
        context=broker.log_tail,
    )
    assert records_outside_active_segment(broker) <= KEYS * 1.05
    seen, _ = consume_all(broker.bootstrap)
    assert seen == expected
