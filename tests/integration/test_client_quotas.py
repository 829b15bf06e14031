"""Client quotas against a real `kafpy server`: set with `kafpy configs --bootstrap-server`
(AlterClientQuotas), read back (DescribeClientQuotas), and enforced on a confluent-kafka
producer while an unthrottled one runs beside it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer

from tests.fixtures.broker import KafpyBroker

QUOTA = 1024 * 1024  # producer_byte_rate: 1 MiB/s
MEASURE_S = 20.0
RECORD = b"x" * 10_000


@pytest.fixture
def broker(kafpy_module_broker: KafpyBroker) -> KafpyBroker:
    return kafpy_module_broker


def configs(broker: KafpyBroker, *args: str, ok: bool = True) -> str:
    r = subprocess.run([sys.executable, "-m", "kafpy", "configs", "--bootstrap-server",
                        broker.bootstrap, *args], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (r.returncode == 0) == ok, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout if ok else r.stderr


def test_configs_sets_describes_and_removes_quotas(broker: KafpyBroker) -> None:
    client = f"c-{uuid.uuid4().hex[:6]}"
    out = configs(broker, "--alter", "--entity-type", "clients", "--entity-name", client,
                  "--add-config", "producer_byte_rate=2048,consumer_byte_rate=4096")  # fmt: skip
    assert out.strip() == f"Completed updating config for entity: client-id '{client}'."
    configs(broker, "--alter", "--entity-type", "users", "--entity-name", "alice",
            "--entity-type", "clients", "--entity-name", client, "--add-config",
            "request_percentage=50")  # fmt: skip
    configs(broker, "--alter", "--entity-type", "users", "--entity-default", "--add-config",
            "producer_byte_rate=1000000")  # fmt: skip
    out = configs(broker, "--describe", "--entity-type", "clients", "--entity-name", client)
    assert out.strip() == (
        f"Quota configs for client-id '{client}' are consumer_byte_rate=4096.0, "
        "producer_byte_rate=2048.0"
    )
    out = configs(broker, "--describe", "--entity-type", "users")
    assert "Quota configs for the default user-principal are producer_byte_rate=1000000.0" in out
    assert (
        f"Quota configs for user-principal 'alice', client-id '{client}' are "
        "request_percentage=50.0" in out
    )
    configs(broker, "--alter", "--entity-type", "clients", "--entity-name", client,
            "--delete-config", "consumer_byte_rate")  # fmt: skip
    out = configs(broker, "--describe", "--entity-type", "clients", "--entity-name", client)
    assert out.strip() == f"Quota configs for client-id '{client}' are producer_byte_rate=2048.0"
    configs(broker, "--alter", "--entity-type", "users", "--entity-default", "--delete-config",
            "producer_byte_rate")  # fmt: skip


def test_bad_quota_input_changes_nothing(broker: KafpyBroker) -> None:
    client = f"bad-{uuid.uuid4().hex[:6]}"
    err = configs(broker, "--alter", "--entity-type", "clients", "--entity-name", client,
                  "--add-config", "producer_byte_rate=fast", ok=False)  # fmt: skip
    assert "Cannot parse quota configuration value for producer_byte_rate: fast" in err
    err = configs(broker, "--alter", "--entity-type", "clients", "--entity-name", client,
                  "--add-config", "producer_byte_rate=1.5", ok=False)  # fmt: skip
    assert "must be a Long value" in err
    err = configs(broker, "--alter", "--entity-type", "clients", "--entity-name", client,
                  "--add-config", "controller_mutation_rate=5", ok=False)  # fmt: skip
    assert "Invalid configuration key controller_mutation_rate" in err
    out = configs(broker, "--describe", "--entity-type", "clients", "--entity-name", client)
    assert out.strip() == ""


def _produce_for(producer: Producer, topic: str, seconds: float, acked: list[int]) -> None:
    def on_delivery(err: object, msg: object) -> None:
        if err is None and time.monotonic() < stop:
            acked[0] += len(RECORD)

    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        try:
            producer.produce(topic, RECORD, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge()
    producer.flush(10)


def test_a_producer_over_its_quota_is_held_to_it(broker: KafpyBroker) -> None:
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    slow, fast = f"slow-{uuid.uuid4().hex[:6]}", f"fast-{uuid.uuid4().hex[:6]}"
    configs(broker, "--alter", "--entity-type", "clients", "--entity-name", slow,
            "--add-config", f"producer_byte_rate={QUOTA}")  # fmt: skip
    throttles: list[int] = []

    def producer(client_id: str) -> Producer:
        return Producer({
            "bootstrap.servers": broker.bootstrap, "client.id": client_id, "linger.ms": 5,
            "batch.size": 65536,  # requests far below the quota, as a steady producer sends
            "queue.buffering.max.messages": 500, "acks": 1,
            "throttle_cb": lambda event: throttles.append(event.throttle_time)
            if event.throttle_time > 0 else None,
        })  # fmt: skip

    acked_slow, acked_fast = [0], [0]
    threads = [
        threading.Thread(target=_produce_for, args=(producer(slow), topic, MEASURE_S, acked_slow)),
        threading.Thread(target=_produce_for, args=(producer(fast), topic, MEASURE_S, acked_fast)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(MEASURE_S + 60)
    slow_rate, fast_rate = acked_slow[0] / MEASURE_S / 1e6, acked_fast[0] / MEASURE_S / 1e6
    print(f"throttled {slow_rate:.2f} MB/s, unthrottled {fast_rate:.2f} MB/s, "
          f"{len(throttles)} throttle events")  # fmt: skip
    assert 0.8 <= slow_rate * 1e6 / QUOTA <= 1.3, slow_rate
    assert fast_rate * 1e6 > 2 * QUOTA, fast_rate  # the other client is not held
    assert throttles and max(throttles) > 0  # confluent-kafka saw the broker's throttle time


def test_a_users_quotas_and_scram_credentials_live_side_by_side(broker: KafpyBroker) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    out = configs(broker, "--alter", "--entity-type", "users", "--entity-name", user,
                  "--add-config", "producer_byte_rate=4096,SCRAM-SHA-256=[iterations=8192,password=pw]")  # fmt: skip
    assert out.strip() == f"Completed updating config for user {user}."
    out = configs(broker, "--describe", "--entity-type", "users", "--entity-name", user)
    assert out.splitlines() == [
        f"Quota configs for user-principal '{user}' are producer_byte_rate=4096.0",
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192",
    ]
    configs(broker, "--alter", "--entity-type", "users", "--entity-name", user,
            "--delete-config", "producer_byte_rate")  # fmt: skip
    out = configs(broker, "--describe", "--entity-type", "users", "--entity-name", user)
    assert out.splitlines() == [
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192"
    ]
