"""`kafpy configs --bootstrap-server` against a real `kafpy server`: dynamic broker configs
for one broker and for the cluster default, described as kafka-configs.sh 2.8 prints them
(sources and synonyms in Kafka's order) and applied to the broker's logs without a
restart; keys Kafka does not make dynamic refused by name; topic configs the same way."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker

DEADLINE_S = 30.0
HOUR_MS = 3600 * 1000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    b = KafpyBroker(
        tmp_path_factory.mktemp("configs-broker"),
        {
            "log.retention.hours": "100",
            "log.retention.check.interval.ms": "200",
            "log.initial.task.delay.ms": "0",
        },
    )
    b.start()
    try:
        yield b
    finally:
        b.stop()


def configs(broker: KafpyBroker, *args: str, ok: bool = True) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "kafpy", "configs", "--bootstrap-server", broker.bootstrap, *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (res.returncode == 0) == ok, res.stdout + res.stderr
    return res.stdout if ok else res.stderr


def new_topic(broker: KafpyBroker) -> str:
    topic = f"cfg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    return topic


BROKER0 = ("--entity-type", "brokers", "--entity-name", "0")
DEFAULT = ("--entity-type", "brokers", "--entity-default")


def test_dynamic_broker_configs_described_and_applied_without_restart(broker: KafpyBroker) -> None:
    topic = new_topic(broker)
    # three records two hours old: kept by the static 100 hours
    p = Producer({"bootstrap.servers": broker.bootstrap})
    old = int(time.time() * 1000) - 2 * HOUR_MS
    for i in range(3):
        p.produce(topic, value=b"old%d" % i, timestamp=old + i)
    assert p.flush(30) == 0
    pid = broker.process.pid if broker.process else None

    assert configs(
        broker, *DEFAULT, "--alter", "--add-config", f"log.retention.ms={3 * HOUR_MS}"
    ) == ("Completed updating default config for brokers in the cluster.\n")
    assert configs(broker, *DEFAULT, "--describe") == (
        "Default configs for brokers in the cluster are:\n"
        f"  log.retention.ms={3 * HOUR_MS} sensitive=false "
        f"synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms={3 * HOUR_MS}}}\n"
    )
    assert configs(broker, *BROKER0, "--alter", "--add-config", f"log.retention.ms={HOUR_MS}") == (
        "Completed updating config for broker 0.\n"
    )
    synonyms = (
        f"DYNAMIC_BROKER_CONFIG:log.retention.ms={HOUR_MS}, "
        f"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms={3 * HOUR_MS}, "
        "STATIC_BROKER_CONFIG:log.retention.hours=100, DEFAULT_CONFIG:log.retention.hours=168"
    )
    assert configs(broker, *BROKER0, "--describe") == (
        f"Dynamic configs for broker 0 are:\n  log.retention.ms={HOUR_MS} sensitive=false synonyms={{{synonyms}}}\n"
    )
    # the topic's effective retention.ms follows, with the broker's sources as synonyms
    topic_all = configs(
        broker, "--entity-type", "topics", "--entity-name", topic, "--describe", "--all"
    )
    assert topic_all.splitlines()[0] == f"All configs for topic {topic} are:"
    assert (
        f"  retention.ms={HOUR_MS} sensitive=false synonyms={{{synonyms}}}"
        in topic_all.splitlines()
    )
    assert configs(broker, "--entity-type", "topics", "--entity-name", topic, "--describe") == (
        f"Dynamic configs for topic {topic} are:\n"
    )

    # ... and applied: the two-hour-old records go at the next retention check, no restart
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cfg-probe"})
    try:
        wait_until(
            lambda: c.get_watermark_offsets(CTP(topic, 0), timeout=5)[0] != 0,
            DEADLINE_S,
            "retention.ms from the dynamic broker config to be applied",
            interval_s=0.2,
        )
    finally:
        c.close()
    assert (
        broker.process is not None and broker.process.pid == pid and broker.process.poll() is None
    )

    # removing the broker's own value falls back to the cluster default
    assert configs(broker, *BROKER0, "--alter", "--delete-config", "log.retention.ms") == (
        "Completed updating config for broker 0.\n"
    )
    assert configs(broker, *BROKER0, "--describe") == "Dynamic configs for broker 0 are:\n"
    topic_all = configs(
        broker, "--entity-type", "topics", "--entity-name", topic, "--describe", "--all"
    )
    assert (
        f"  retention.ms={3 * HOUR_MS} sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:"
        in topic_all
    )
    configs(broker, *DEFAULT, "--alter", "--delete-config", "log.retention.ms")
    assert (
        configs(broker, *DEFAULT, "--describe")
        == "Default configs for brokers in the cluster are:\n"
    )


def test_message_max_bytes_default_applies_to_produce_at_once(broker: KafpyBroker) -> None:
    topic = new_topic(broker)

    def produce(size: int) -> KafkaError | None:
        errors: list[KafkaError | None] = []
        p = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 100000})
        p.produce(topic, value=b"x" * size, on_delivery=lambda err, _msg: errors.append(err))
        assert p.flush(30) == 0
        return errors[0]

    assert produce(3000) is None
    configs(broker, *DEFAULT, "--alter", "--add-config", "message.max.bytes=2000")
    try:
        err = wait_until(
            lambda: produce(3000), DEADLINE_S, "message.max.bytes to be applied", interval_s=0.2
        )
        assert err.code() == KafkaError.MSG_SIZE_TOO_LARGE
        assert produce(500) is None
    finally:
        configs(broker, *DEFAULT, "--alter", "--delete-config", "message.max.bytes")


def test_keys_that_are_not_dynamic_are_refused(broker: KafpyBroker) -> None:
    err = configs(
        broker, *BROKER0, "--alter", "--add-config", "zookeeper.session.timeout.ms=1000", ok=False
    )
    assert "Cannot update these configs dynamically: Set(zookeeper.session.timeout.ms)" in err
    err = configs(broker, *DEFAULT, "--alter", "--add-config", "num.io.threads=4", ok=False)
    assert "kafpy cannot apply these configs without a restart yet: Set(num.io.threads)" in err
    err = configs(broker, *BROKER0, "--alter", "--add-config", "log.retention.ms=soon", ok=False)
    assert "log.retention.ms" in err
    err = configs(broker, *BROKER0, "--alter", "--delete-config", "log.segment.bytes", ok=False)
    assert "Invalid config(s): log.segment.bytes" in err
    err = configs(
        broker, "--entity-type", "brokers", "--entity-name", "zero", "--describe", ok=False
    )
    assert "must be a valid integer broker id, but it is: zero" in err
    assert configs(broker, *BROKER0, "--describe") == "Dynamic configs for broker 0 are:\n"


def test_topic_configs_over_bootstrap_server(broker: KafpyBroker) -> None:
    topic = new_topic(broker)
    t = ("--entity-type", "topics", "--entity-name", topic)
    assert configs(
        broker,
        *t,
        "--alter",
        "--add-config",
        "segment.bytes=100000,cleanup.policy=[compact,delete]",
    ) == (f"Completed updating config for topic {topic}.\n")
    assert configs(broker, *t, "--describe") == (
        f"Dynamic configs for topic {topic} are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  segment.bytes=100000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=100000, "
        "DEFAULT_CONFIG:log.segment.bytes=1073741824}\n"
    )
    configs(broker, *t, "--alter", "--delete-config", "cleanup.policy")
    assert "cleanup.policy" not in configs(broker, *t, "--describe")


def test_log_cleaner_threads_reconfigured_without_restart(broker: KafpyBroker) -> None:
    def starts() -> int:
        return broker.log_path.read_text(errors="replace").count("Starting the log cleaner")

    before = starts()
    pid = broker.process.pid if broker.process else None
    configs(
        broker,
        *BROKER0,
        "--alter",
        "--add-config",
        "log.cleaner.threads=2,log.cleaner.backoff.ms=100",
    )
    assert configs(broker, *BROKER0, "--describe").splitlines()[1:] == [
        "  log.cleaner.backoff.ms=100 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=100, "
        "DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}",
        "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
        "DEFAULT_CONFIG:log.cleaner.threads=1}",
    ]
    try:
        wait_until(
            lambda: starts() != before,
            DEADLINE_S,
            "the log cleaner to restart with the new settings",
            interval_s=0.2,
        )
        assert (
            "kafka-log-cleaner-thread-1" in broker.log_path.read_text(errors="replace")
            or starts() > before
        )
        assert (
            broker.process is not None
            and broker.process.pid == pid
            and broker.process.poll() is None
        )
    finally:
        configs(
            broker,
            *BROKER0,
            "--alter",
            "--delete-config",
            "log.cleaner.threads,log.cleaner.backoff.ms",
        )


def test_stored_dynamic_configs_apply_from_the_start_of_a_restart(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # server.properties keeps logs one hour, the dynamic default ten days: two-hour-old
    # records must survive a restart, even though retention runs as soon as logs load
    b = KafpyBroker(
        tmp_path_factory.mktemp("restart-broker"),
        {
            "log.retention.hours": "1",
            "log.retention.check.interval.ms": "50",
            "log.initial.task.delay.ms": "0",
        },
    )
    b.start()
    try:
        configs(b, *DEFAULT, "--alter", "--add-config", f"log.retention.ms={240 * HOUR_MS}")
        topic = new_topic(b)
        p = Producer({"bootstrap.servers": b.bootstrap})
        old = int(time.time() * 1000) - 2 * HOUR_MS
        for i in range(3):
            p.produce(topic, value=b"old%d" % i, timestamp=old + i)
        assert p.flush(30) == 0
        b.restart()
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "cfg-restart"})
        try:
            assert c.get_watermark_offsets(CTP(topic, 0), timeout=10) == (0, 3)
        finally:
            c.close()
        assert "retention time 3600000ms breach" not in b.log_path.read_text(errors="replace")
    finally:
        b.stop()
