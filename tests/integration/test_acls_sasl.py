"""ACLs for SCRAM users: a broker with the AclAuthorizer, a PLAINTEXT listener for the
broker itself and the operator (User:ANONYMOUS, a super user, as a broker's own principal
is) and a SASL_PLAINTEXT listener. alice, with Read on topic `a` (kafka-acls.sh
--consumer), reads `a`, cannot read `b`, cannot produce to `a`, and sees only `a` in
Metadata; bob, with no ACL, sees no topic."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.sasl import SaslBroker, sasl_broker_overrides


def kafpy(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    kafpy_broker = KafpyBroker(tmp_path_factory.mktemp("acl-sasl-broker"))
    kafpy_broker.overrides.update(sasl_broker_overrides())
    kafpy_broker.overrides.update({
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        "auto.create.topics.enable": "false",
    })  # fmt: skip
    kafpy_broker.start()
    sasl = SaslBroker(kafpy_broker)
    plain = kafpy_broker.bootstrap
    try:
        kafpy("topics", "--bootstrap-server", plain, "--create", "--topic", "a", "--partitions", "1",
              "--replication-factor", "1")  # fmt: skip
        kafpy("topics", "--bootstrap-server", plain, "--create", "--topic", "b", "--partitions", "1",
              "--replication-factor", "1")  # fmt: skip
        producer = Producer({"bootstrap.servers": plain})
        for topic in ("a", "b"):
            producer.produce(topic, f"in-{topic}".encode())
        assert producer.flush(30) == 0
        for user in ("alice", "bob"):
            kafpy("configs", "--bootstrap-server", plain, "--alter", "--entity-type", "users",
                  "--entity-name", user, "--add-config",
                  f"SCRAM-SHA-256=[iterations=8192,password={user}-secret]")  # fmt: skip
        kafpy("acls", "--bootstrap-server", plain, "--add", "--consumer", "--topic", "a",
              "--group", "alice-group", "--allow-principal", "User:alice")  # fmt: skip
        yield sasl
    finally:
        kafpy_broker.stop()


def props(broker: SaslBroker, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user,
            "sasl.password": f"{user}-secret"}  # fmt: skip


def consume_first(config: dict[str, Any], topic: str) -> Any:
    """The first message or error the consumer gets from `topic`."""
    consumer = Consumer({**config, "group.id": "alice-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])

        def first() -> list[Any]:
            message = consumer.poll(0.5)
            # in a list: a message (an error's too) is as false as its value is empty
            return [] if message is None else [message]

        (message,) = wait_until(
            first, 30, interval_s=0, on_timeout=lambda: pytest.fail(f"nothing from {topic} in 30 s")
        )
        return message
    finally:
        consumer.close()


def test_alice_reads_a(broker: SaslBroker) -> None:
    message = consume_first(props(broker, "alice"), "a")
    assert message.error() is None and message.value() == b"in-a"


def test_alice_cannot_read_b(broker: SaslBroker) -> None:
    message = consume_first(props(broker, "alice"), "b")
    assert message.error() is not None
    assert message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_alice_cannot_produce_to_a(broker: SaslBroker) -> None:
    errors: list[Any] = []
    producer = Producer({**props(broker, "alice"), "message.timeout.ms": 10000})
    producer.produce("a", b"x", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(15)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_shows_each_user_only_what_it_may_describe(broker: SaslBroker) -> None:
    alice = AdminClient(props(broker, "alice")).list_topics(timeout=30).topics
    assert set(alice) == {"a"}
    bob = AdminClient(props(broker, "bob")).list_topics(timeout=30).topics
    assert set(bob) == set()
