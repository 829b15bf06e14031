"""SASL_SSL: real clients authenticate with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN over
TLS (the test PKI's CA and broker certificate), and a wrong password is refused."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaProducer

from kafpy.security.local_pki import TestPki
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.sasl import PLAIN_JAAS
from tests.fixtures.tls import broker_ssl_overrides
from tests.integration.test_sasl import first_client_error, topic_name


@pytest.fixture(scope="module")
def sasl_ssl_broker(
    tmp_path_factory: pytest.TempPathFactory, test_pki: TestPki
) -> Iterator[tuple[KafpyBroker, str]]:
    broker = KafpyBroker(tmp_path_factory.mktemp("sasl-ssl-broker"))
    broker.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        **broker_ssl_overrides(test_pki),
    })  # fmt: skip
    broker.start()
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        result = subprocess.run(
            [sys.executable, "-m", "kafpy", "configs", "--bootstrap-server", broker.bootstrap,
             "--alter", "--entity-type", "users", "--entity-name", "alice",
             "--add-config", f"{mechanism}=[iterations=4096,password=alice-secret]"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    try:
        yield broker, f"127.0.0.1:{broker.ports['SASL_SSL']}"
    finally:
        broker.stop()


MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def _confluent(bootstrap: str, pki: TestPki, mechanism: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.ca_certificate),
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(
    sasl_ssl_broker: tuple[KafpyBroker, str], test_pki: TestPki, mechanism: str
) -> None:
    _, bootstrap = sasl_ssl_broker
    producer = Producer(_confluent(bootstrap, test_pki, mechanism, "alice-secret"))
    delivered: list[Any] = []
    producer.produce(topic_name("ssl"), b"x", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_refused(
    sasl_ssl_broker: tuple[KafpyBroker, str], test_pki: TestPki, mechanism: str
) -> None:
    _, bootstrap = sasl_ssl_broker
    error = first_client_error(_confluent(bootstrap, test_pki, mechanism, "wrong"))
    assert "Authentication failed" in error


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_and_aiokafka(
    sasl_ssl_broker: tuple[KafpyBroker, str], test_pki: TestPki, mechanism: str
) -> None:
    _, bootstrap = sasl_ssl_broker
    common: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    producer = KafkaProducer(**common, ssl_cafile=str(test_pki.ca_certificate))
    producer.send(topic_name("kp-ssl"), b"x").get(timeout=30)
    producer.close()

    async def aio() -> None:
        context = ssl.create_default_context(cafile=str(test_pki.ca_certificate))
        p = AIOKafkaProducer(**common, ssl_context=context)
        await p.start()
        try:
            await p.send_and_wait(topic_name("aio-ssl"), b"x")
        finally:
            await p.stop()

    asyncio.run(aio())


KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat(sasl_ssl_broker: tuple[KafpyBroker, str], test_pki: TestPki, mechanism: str) -> None:
    _, bootstrap = sasl_ssl_broker
    topic = topic_name("kcat-ssl")
    base = [
        str(KCAT), "-b", bootstrap, "-X", "security.protocol=SASL_SSL",
        "-X", f"ssl.ca.location={test_pki.ca_certificate}", "-X", f"sasl.mechanisms={mechanism}",
        "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret",
    ]  # fmt: skip
    produced = subprocess.run(
        [*base, "-P", "-t", topic], input="a\nb\n", capture_output=True, text=True, timeout=60
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [*base, "-C", "-t", topic, "-e", "-o", "beginning", "-f", "%s\n"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert consumed.stdout.splitlines() == ["a", "b"], consumed.stderr
