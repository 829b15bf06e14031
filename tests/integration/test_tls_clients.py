"""Real Kafka clients over TLS against a `kafpy server` with a PLAINTEXT and an SSL listener
(the inter-broker listener is SSL, so the controller talks to its own broker over TLS):
confluent-kafka, kafka-python, aiokafka, kcat and kafpy's own client produce and consume;
Metadata answers with the endpoints of the listener asked; a client certificate's
principal reaches the request; a client with the wrong trust fails with a clear error."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer

from kafpy.client.client_security import ClientSecurity
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import KafkaConnectionError
from kafpy.protocol.api_keys import ApiKey
from kafpy.security.local_pki import TestPki
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.tls import TlsBroker, broker_ssl_overrides, client_ssl_props

N = 50
KCAT = shutil.which("kcat")


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _confluent_ssl(pki: TestPki, *, with_certificate: bool = False) -> dict[str, str]:
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_certificate)}
    if with_certificate:
        conf["ssl.certificate.location"] = str(pki.client.certificate)
        conf["ssl.key.location"] = str(pki.client.key)
    return conf


def _confluent_round_trip(bootstrap: str, conf: dict[str, str], topic: str) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
    for i in range(N):
        producer.produce(topic, b"x" * 1024 + b"%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
         "enable.auto.commit": False, **conf}
    )  # fmt: skip
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(200):
            if len(values) >= N:
                break
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("with_certificate", [False, True], ids=["server-auth", "mutual-tls"])
def test_confluent_kafka_over_ssl(
    kafpy_tls_broker: TlsBroker, test_pki: TestPki, with_certificate: bool
) -> None:
    ssl_bootstrap = kafpy_tls_broker.ssl_bootstrap
    topic = _topic("ck-ssl")
    conf = _confluent_ssl(test_pki, with_certificate=with_certificate)
    values = _confluent_round_trip(ssl_bootstrap, conf, topic)
    assert values == [b"x" * 1024 + b"%d" % i for i in range(N)]


def test_client_auth_required_refuses_a_client_without_a_certificate(
    kafpy_broker_factory: Callable[..., KafpyBroker], test_pki: TestPki
) -> None:
    broker = kafpy_broker_factory(
        {
            "listeners": "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:0",
            **broker_ssl_overrides(test_pki, client_auth="required"),
        }
    )
    ssl_port = broker.ports["SSL"]
    ssl_bootstrap = f"127.0.0.1:{ssl_port}"
    admin = AdminClient({"bootstrap.servers": ssl_bootstrap, **_confluent_ssl(test_pki)})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    topic = _topic("mtls")
    values = _confluent_round_trip(
        ssl_bootstrap, _confluent_ssl(test_pki, with_certificate=True), topic
    )
    assert len(values) == N
    assert "Failed authentication with /127.0.0.1 (SSL handshake failed" in broker.log_tail(1000)


def test_kafka_python_over_ssl(kafpy_tls_broker: TlsBroker, test_pki: TestPki) -> None:
    ssl_bootstrap = kafpy_tls_broker.ssl_bootstrap
    topic = _topic("kp-ssl")
    ssl_args = {
        "security_protocol": "SSL",
        "ssl_cafile": str(test_pki.ca_certificate),
        "ssl_certfile": str(test_pki.client.certificate),
        "ssl_keyfile": str(test_pki.client.key),
    }
    producer = KafkaProducer(bootstrap_servers=ssl_bootstrap, acks="all", **ssl_args)
    for i in range(N):
        producer.send(topic, b"kp%d" % i)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic, bootstrap_servers=ssl_bootstrap, auto_offset_reset="earliest",
        consumer_timeout_ms=10000, **ssl_args,
    )  # fmt: skip
    try:
        values = [m.value for _, m in zip(range(N), consumer, strict=False)]
    finally:
        consumer.close()
    assert values == [b"kp%d" % i for i in range(N)]


def test_aiokafka_over_ssl(kafpy_tls_broker: TlsBroker, test_pki: TestPki) -> None:
    ssl_bootstrap = kafpy_tls_broker.ssl_bootstrap
    topic = _topic("aio-ssl")

    async def scenario() -> list[bytes]:
        ctx = create_ssl_context(cafile=str(test_pki.ca_certificate))
        producer = AIOKafkaProducer(
            bootstrap_servers=ssl_bootstrap, security_protocol="SSL", ssl_context=ctx, acks="all"
        )
        await producer.start()
        try:
            for i in range(N):
                await producer.send(topic, b"aio%d" % i)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=ssl_bootstrap, security_protocol="SSL", ssl_context=ctx,
            auto_offset_reset="earliest",
        )  # fmt: skip
        await consumer.start()
        try:
            got: list[bytes] = []
            while len(got) < N:
                batch = await consumer.getmany(timeout_ms=1000)
                got += [m.value for msgs in batch.values() for m in msgs if m.value is not None]
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == [b"aio%d" % i for i in range(N)]


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
def test_kcat_over_ssl_and_metadata_per_listener(
    kafpy_tls_broker: TlsBroker, test_pki: TestPki
) -> None:
    broker, ssl_bootstrap = kafpy_tls_broker.broker, kafpy_tls_broker.ssl_bootstrap
    assert KCAT is not None
    topic = _topic("kc-ssl")
    tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={test_pki.ca_certificate}"]

    def kcat(*args: str, stdin: str | None = None) -> str:
        res = subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        return res.stdout

    kcat("-b", ssl_bootstrap, *tls, "-P", "-t", topic, stdin="".join(f"v{i}\n" for i in range(N)))
    out = kcat("-b", ssl_bootstrap, *tls, "-C", "-t", topic, "-e", "-o", "beginning")
    assert out.split() == [f"v{i}" for i in range(N)]
    ssl_meta = json.loads(kcat("-b", ssl_bootstrap, *tls, "-L", "-J"))
    plain_meta = json.loads(kcat("-b", broker.bootstrap, "-L", "-J"))
    assert [b["name"] for b in ssl_meta["brokers"]] == [ssl_bootstrap]
    assert [b["name"] for b in plain_meta["brokers"]] == [broker.bootstrap]


def test_kafpy_client_over_ssl(kafpy_tls_broker: TlsBroker, test_pki: TestPki) -> None:
    ssl_bootstrap = kafpy_tls_broker.ssl_bootstrap
    security = ClientSecurity.from_config(client_ssl_props(test_pki), source="the test")

    async def scenario() -> None:
        async with KafkaClient(ssl_bootstrap, security=security) as client:
            body = await client.send_to_any(ApiKey.METADATA, {"topics": None})
            assert [b["port"] for b in body["brokers"]] == [int(ssl_bootstrap.split(":")[1])]

    asyncio.run(scenario())


def test_kafpy_client_without_the_ca_gets_a_clear_error(
    kafpy_tls_broker: TlsBroker, test_pki: TestPki, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ssl_bootstrap = kafpy_tls_broker.ssl_bootstrap
    props = {
        **client_ssl_props(test_pki),
        "ssl.truststore.location": str(test_pki.untrusted_client.certificate),
    }
    security = ClientSecurity.from_config(props, source="the test")

    async def scenario() -> None:
        async with KafkaClient(ssl_bootstrap, security=security, retries=0):
            pass

    with pytest.raises(
        KafkaConnectionError, match="TLS handshake with .* failed: CERTIFICATE_VERIFY_FAILED"
    ):
        asyncio.run(scenario())


def test_kafpy_commands_over_ssl_with_their_config_files(
    kafpy_tls_broker: TlsBroker, test_pki: TestPki, tmp_path: Path
) -> None:
    ssl_bootstrap = kafpy_tls_broker.ssl_bootstrap
    config = tmp_path / "client-ssl.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in client_ssl_props(test_pki).items()))
    topic = _topic("cli-ssl")

    def kafpy(*args: str, stdin: str | None = None) -> str:
        res = subprocess.run(
            [sys.executable, "-m", "kafpy", *args],
            input=stdin, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        return res.stdout

    b = ("--bootstrap-server", ssl_bootstrap)
    kafpy("topics", *b, "--command-config", str(config), "--create", "--topic", topic,
          "--partitions", "1", "--replication-factor", "1")  # fmt: skip
    assert topic in kafpy("topics", *b, "--command-config", str(config), "--list").split()
    kafpy("console-producer", *b, "--producer.config", str(config), "--topic", topic,
          stdin="one\ntwo\n")  # fmt: skip
    out = kafpy("console-consumer", *b, "--consumer.config", str(config), "--topic", topic,
                "--from-beginning", "--max-messages", "2", "--timeout-ms", "20000")  # fmt: skip
    assert out.split() == ["one", "two"]
    assert "Produce(0)" in kafpy("broker-api-versions", *b, "--command-config", str(config))
    kafpy("consumer-groups", *b, "--command-config", str(config), "--list")
    described = kafpy("configs", *b, "--command-config", str(config), "--describe",
                      "--entity-type", "topics", "--entity-name", topic)  # fmt: skip
    assert topic in described


def test_bad_clients_on_the_ssl_port_are_closed_and_others_served(
    kafpy_broker_factory: Callable[..., KafpyBroker], test_pki: TestPki
) -> None:
    broker = kafpy_broker_factory(
        {
            "listeners": "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:0",
            "connections.max.idle.ms": "1500",  # also the handshake's time limit
            **broker_ssl_overrides(test_pki),
        }
    )
    ssl_port = broker.ports["SSL"]
    plaintext_request = b"\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02ab"

    def closed_by_broker(payload: bytes) -> bool:
        with socket.create_connection(("127.0.0.1", ssl_port), timeout=10) as s:
            if payload:
                s.sendall(payload)
            try:
                while s.recv(4096):
                    pass  # a TLS alert, then the end
            except ConnectionResetError:
                pass
            return True

    stalled = socket.create_connection(("127.0.0.1", ssl_port), timeout=10)
    assert closed_by_broker(b"\x16\x03\x01\x02\x00" + bytes(range(256)) * 2)  # garbage
    assert closed_by_broker(plaintext_request)  # a plaintext Kafka client
    ssl_bootstrap = f"127.0.0.1:{ssl_port}"
    values = _confluent_round_trip(ssl_bootstrap, _confluent_ssl(test_pki), _topic("bad-ssl"))
    assert len(values) == N
    assert stalled.recv(1) == b""  # never sent a byte: closed after connections.max.idle.ms
    stalled.close()
    log = broker.log_tail(1000)
    assert log.count("Failed authentication with /127.0.0.1 (SSL handshake failed") >= 3
