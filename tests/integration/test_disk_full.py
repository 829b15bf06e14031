"""A log dir that runs out of space loses no acknowledged record (Kafka's LogDirFailureChannel).

The broker's only log dir is a small tmpfs. Producing with acks=1 until it is full makes
an append fail part-way: the segment is cut back to its size before that append, the
produce answers KAFKA_STORAGE_ERROR, the dir goes offline and, with no healthy dir left,
the broker halts. Once space is back the restarted broker serves every acknowledged
record, and its log goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.tmpfs import resize_tmpfs
from tests.integration.test_restart import consume_all

TOPIC = "disk-full"


def test_disk_full_loses_no_acknowledged_record(
    small_tmpfs: Callable[[int], Path],
    kafpy_broker_factory: Callable[..., KafpyBroker],
    tmp_path: Path,
) -> None:
    mount = small_tmpfs(2 * 1024 * 1024)
    broker = kafpy_broker_factory(
        {"log.dirs": str(mount), "metadata.store.dir": str(tmp_path / "metadata")}
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)

    acked: dict[int, bytes] = {}
    errors: list[int] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked[msg.offset()] = msg.value()
        else:
            errors.append(err.code())

    producer = Producer({
        "bootstrap.servers": broker.bootstrap, "acks": "1", "retries": 0, "linger.ms": 5,
        "message.timeout.ms": 5000, "batch.num.messages": 20,
    })  # fmt: skip
    value = b"x" * 1000
    i = 0
    while not errors and i < 10_000:  # 10 MB: far more than the 2 MB the dir holds
        try:
            producer.produce(TOPIC, value=b"%08d" % i + value, on_delivery=on_delivery)
            i += 1
        except BufferError:
            pass
        producer.poll(0.001)
    producer.flush(15)
    assert errors, f"the 2 MB log dir took {i} records of 1 KB without an error"
    assert KafkaError.KAFKA_STORAGE_ERROR in errors or KafkaError._MSG_TIMED_OUT in errors, errors
    assert acked, "nothing was acknowledged before the disk filled up"

    # one log dir, and it failed: the broker halts (Kafka's Exit.halt(1))
    assert broker.process is not None
    process = broker.process
    wait_until(
        lambda: process.poll() is not None, 30, "the broker to halt", context=broker.log_tail
    )
    assert broker.process.returncode == 1, broker.log_tail()
    out = broker.log_path.read_text(errors="replace")
    assert "No space left on device" in out
    assert "Shutdown broker because all log dirs in" in out

    resize_tmpfs(mount, 32 * 1024 * 1024)
    broker.start()
    consumed = consume_all(broker.bootstrap, TOPIC)
    offsets = [o for o, _ in consumed]
    assert offsets == list(range(len(consumed))), "the log has a hole or a torn batch"
    stored = dict(consumed)
    missing = sorted(o for o in acked if stored.get(o) != acked[o])
    assert not missing, f"{len(missing)} acknowledged records are not readable: {missing[:10]}"

    # the log goes on after the failed append
    more: list[int] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "1"})
    producer.produce(TOPIC, value=b"after", on_delivery=lambda e, m: more.append(m.offset()))
    assert producer.flush(30) == 0
    assert more == [len(consumed)]
    assert consume_all(broker.bootstrap, TOPIC)[-1] == (len(consumed), b"after")
