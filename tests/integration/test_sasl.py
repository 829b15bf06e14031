"""SASL against a real broker: real clients authenticate with PLAIN over SASL_PLAINTEXT;
wrong passwords, unknown users, unknown mechanisms, frames out of order and oversized tokens
get Kafka's answer and a closed connection, and other connections keep working."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import struct
import subprocess
import sys
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError as KafkaPythonError
from kazoo.client import KazooClient

from kafpy.common.errors import Errors
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from tests.fixtures.sasl import SaslBroker, sasl_broker_overrides


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def confluent_props(sasl: SaslBroker, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": sasl.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def confluent_round_trip(props: dict[str, Any], topic: str) -> list[bytes]:
    producer = Producer(props)
    for i in range(3):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**props, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        for _ in range(60):
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                values.append(msg.value() or b"")
            if len(values) == 3:
                break
        return values
    finally:
        consumer.close()


def test_confluent_kafka_plain(sasl_module_broker: SaslBroker) -> None:
    props = confluent_props(sasl_module_broker, "PLAIN", "alice", "alice-secret")
    assert confluent_round_trip(props, topic_name("plain")) == [b"v0", b"v1", b"v2"]


def first_client_error(props: dict[str, Any]) -> str:
    """The first error librdkafka reports for a client that cannot authenticate."""
    errors: list[str] = []
    producer = Producer({**props, "error_cb": lambda e: errors.append(e.str())})
    for _ in range(100):
        producer.poll(0.1)
        if errors:
            break
    producer.flush(0)
    assert errors, "the client reported no error"
    return errors[0]


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("mallory", "alice-secret")])
def test_confluent_kafka_plain_refused(
    sasl_module_broker: SaslBroker, user: str, password: str
) -> None:
    error = first_client_error(confluent_props(sasl_module_broker, "PLAIN", user, password))
    assert "Authentication failed: Invalid username or password" in error


def test_kafka_python_plain(sasl_module_broker: SaslBroker) -> None:
    topic = topic_name("kp-plain")
    common: dict[str, Any] = {
        "bootstrap_servers": sasl_module_broker.sasl_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "admin",
        "sasl_plain_password": "admin-secret",
    }
    producer = KafkaProducer(**common)
    producer.send(topic, b"hello").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(**common, enable_auto_commit=False, consumer_timeout_ms=10000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert [m.value for m in consumer] == [b"hello"]
    finally:
        consumer.close()


def test_kafka_python_wrong_password(sasl_module_broker: SaslBroker) -> None:
    with pytest.raises(KafkaPythonError):
        KafkaProducer(
            bootstrap_servers=sasl_module_broker.sasl_bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="nope",
            max_block_ms=5000,
        )


# -- bad input on a raw socket -----------------------------------------------------------------


class RawConnection:
    def __init__(self, sasl: SaslBroker) -> None:
        self.sock = socket.create_connection(("127.0.0.1", sasl.sasl_port), timeout=10)
        self.correlation_id = 0

    def send(self, api_key: ApiKey, version: int, body: dict[str, Any]) -> None:
        self.correlation_id += 1
        header = RequestHeader(api_key, version, self.correlation_id, "raw")
        self.sock.sendall(encode_request(header, body))

    def receive(self, api_key: ApiKey, version: int) -> dict[str, Any]:
        frame = self.read_frame()
        assert frame is not None, "the broker closed the connection without an answer"
        correlation_id, body = decode_response(api_key, version, frame)
        assert correlation_id == self.correlation_id
        return body

    def read_frame(self) -> bytes | None:
        head = self._read(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._read(size)

    def _read(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:  # closed with our unread bytes in its buffer
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def closed_by_broker(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(sasl_module_broker: SaslBroker) -> Any:
    conns: list[RawConnection] = []

    def open_() -> RawConnection:
        conns.append(RawConnection(sasl_module_broker))
        return conns[-1]

    yield open_
    for c in conns:
        c.close()


def _assert_others_unaffected(raw: Any) -> None:
    other = raw()
    other.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert other.receive(ApiKey.SASL_HANDSHAKE, 1)["error_code"] == Errors.NONE
    other.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert other.receive(ApiKey.SASL_AUTHENTICATE, 2)["error_code"] == Errors.NONE
    other.send(ApiKey.METADATA, 1, {"topics": []})
    assert other.receive(ApiKey.METADATA, 1)["brokers"]


def test_authenticate_before_handshake(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"})
    body = conn.receive(ApiKey.SASL_AUTHENTICATE, 1)
    assert body["error_code"] == Errors.ILLEGAL_SASL_STATE
    assert conn.closed_by_broker()
    _assert_others_unaffected(raw)


def test_unknown_mechanism(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    body = conn.receive(ApiKey.SASL_HANDSHAKE, 1)
    assert body["error_code"] == Errors.UNSUPPORTED_SASL_MECHANISM
    assert body["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert conn.closed_by_broker()
    _assert_others_unaffected(raw)


def test_wrong_password_answers_kafkas_error_then_closes(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    conn.receive(ApiKey.SASL_HANDSHAKE, 1)
    conn.send(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0nope"})
    body = conn.receive(ApiKey.SASL_AUTHENTICATE, 1)
    assert body["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
    assert body["error_message"] == "Authentication failed: Invalid username or password"
    assert conn.closed_by_broker()


def test_request_before_authentication_closes(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.METADATA, 1, {"topics": []})
    assert conn.read_frame() is None
    _assert_others_unaffected(raw)


def test_oversized_token_closes(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    conn.receive(ApiKey.SASL_HANDSHAKE, 1)
    conn.send(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"x" * 600_000})
    assert conn.read_frame() is None
    _assert_others_unaffected(raw)


def test_handshake_v0_raw_tokens(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    assert conn.receive(ApiKey.SASL_HANDSHAKE, 0)["error_code"] == Errors.NONE
    token = b"\0alice\0alice-secret"
    conn.sock.sendall(struct.pack(">i", len(token)) + token)
    conn.send(ApiKey.METADATA, 1, {"topics": []})
    assert conn.receive(ApiKey.METADATA, 1)["brokers"]


def test_sasl_requests_after_authentication_are_illegal(raw: Any) -> None:
    conn = raw()
    conn.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    conn.receive(ApiKey.SASL_HANDSHAKE, 1)
    conn.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert conn.receive(ApiKey.SASL_AUTHENTICATE, 2)["session_lifetime_ms"] == 0
    conn.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b""})
    assert conn.receive(ApiKey.SASL_AUTHENTICATE, 2)["error_code"] == Errors.ILLEGAL_SASL_STATE


# -- SCRAM: users created through a broker, then logging in without a restart ----------------


def kafpy_configs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", "configs", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def add_scram_user(bootstrap: str, user: str, password: str) -> None:
    result = kafpy_configs(
        "--bootstrap-server", bootstrap, "--alter", "--entity-type", "users",
        "--entity-name", user, "--add-config",
        f"SCRAM-SHA-256=[iterations=8192,password={password}],SCRAM-SHA-512=[password={password}]",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"Completed updating config for user {user}."


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_scram(sasl_module_broker: SaslBroker, mechanism: str) -> None:
    user = f"carol-{mechanism[-3:]}"
    add_scram_user(sasl_module_broker.broker.bootstrap, user, "carol-secret")
    props = confluent_props(sasl_module_broker, mechanism, user, "carol-secret")
    assert confluent_round_trip(props, topic_name("scram")) == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("user,password", [("dave", "wrong"), ("nobody", "dave-secret")])
def test_confluent_kafka_scram_refused(
    sasl_module_broker: SaslBroker, user: str, password: str
) -> None:
    add_scram_user(sasl_module_broker.broker.bootstrap, "dave", "dave-secret")
    error = first_client_error(confluent_props(sasl_module_broker, "SCRAM-SHA-256", user, password))
    assert (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256" in error
    )


def test_kafka_python_scram_and_describe_and_delete(sasl_module_broker: SaslBroker) -> None:
    bootstrap = sasl_module_broker.broker.bootstrap
    add_scram_user(bootstrap, "erin", "erin-secret")
    described = kafpy_configs(
        "--bootstrap-server", bootstrap, "--describe", "--entity-type", "users",
        "--entity-name", "erin",
    )  # fmt: skip
    assert described.stdout.strip() == (
        "SCRAM credential configs for user-principal 'erin' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    common: dict[str, Any] = {
        "bootstrap_servers": sasl_module_broker.sasl_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "erin",
        "sasl_plain_password": "erin-secret",
    }
    producer = KafkaProducer(**common)
    producer.send(topic_name("kp-scram"), b"x").get(timeout=30)
    producer.close()
    deleted = kafpy_configs(
        "--bootstrap-server", bootstrap, "--alter", "--entity-type", "users",
        "--entity-name", "erin", "--delete-config", "SCRAM-SHA-512",
    )  # fmt: skip
    assert deleted.returncode == 0, deleted.stderr
    error = first_client_error(
        confluent_props(sasl_module_broker, "SCRAM-SHA-512", "erin", "erin-secret")
    )
    assert "SASL mechanism SCRAM-SHA-512" in error


def test_too_few_iterations_refused(sasl_module_broker: SaslBroker) -> None:
    result = kafpy_configs(
        "--bootstrap-server", sasl_module_broker.broker.bootstrap, "--alter",
        "--entity-type", "users", "--entity-name", "frank",
        "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]",
    )  # fmt: skip
    assert result.returncode == 1
    assert "Too few iterations" in result.stderr


def test_user_created_with_zookeeper_logs_in_without_restart(
    kafpy_broker_factory: Any, zookeeper_connect: str
) -> None:
    broker = kafpy_broker_factory({"zookeeper.connect": zookeeper_connect})
    # restart it with a SASL listener beside the PLAINTEXT one
    broker.stop()
    broker.overrides.update(sasl_broker_overrides())
    broker.start()
    result = kafpy_configs(
        "--zookeeper", zookeeper_connect, "--alter", "--entity-type", "users",
        "--entity-name", "grace", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=g-secret]",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Completed Updating config for entity: user-principal 'grace'." in result.stdout
    zk = KazooClient(hosts=zookeeper_connect)
    zk.start()
    try:
        data, _ = zk.get("/config/users/grace")
    finally:
        zk.stop()
        zk.close()
    stored = json.loads(data)
    assert stored["version"] == 1
    assert list(stored["config"]) == ["SCRAM-SHA-256"]
    fields = [p.split("=", 1)[0] for p in stored["config"]["SCRAM-SHA-256"].split(",")]
    assert fields == ["salt", "stored_key", "server_key", "iterations"]
    assert stored["config"]["SCRAM-SHA-256"].endswith(",iterations=8192")
    sasl = SaslBroker(broker)
    props = confluent_props(sasl, "SCRAM-SHA-256", "grace", "g-secret")
    assert confluent_round_trip(props, topic_name("zk-scram")) == [b"v0", b"v1", b"v2"]


# -- kafpy's own client and tools over SASL -----------------------------------------------------


def test_kafpy_tools_with_command_config(sasl_module_broker: SaslBroker, tmp_path: Any) -> None:
    add_scram_user(sasl_module_broker.broker.bootstrap, "heidi", "heidi-secret")
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="heidi" password="heidi-secret";\n'
    )
    topic = topic_name("cli-sasl")
    created = subprocess.run(
        [sys.executable, "-m", "kafpy", "topics", "--create", "--topic", topic,
         "--bootstrap-server", sasl_module_broker.sasl_bootstrap, "--command-config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    described = kafpy_configs(
        "--bootstrap-server", sasl_module_broker.sasl_bootstrap, "--command-config", str(config),
        "--describe", "--entity-type", "users", "--entity-name", "heidi",
    )  # fmt: skip
    assert "SCRAM-SHA-512=iterations=4096" in described.stdout, described.stderr
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=alice\nsasl.password=wrong\n"
    )
    refused = subprocess.run(
        [sys.executable, "-m", "kafpy", "topics", "--list",
         "--bootstrap-server", sasl_module_broker.sasl_bootstrap, "--command-config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "Authentication failed: Invalid username or password" in refused.stderr


# -- aiokafka and kcat ---------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_aiokafka(sasl_module_broker: SaslBroker, mechanism: str) -> None:
    add_scram_user(sasl_module_broker.broker.bootstrap, "alice", "alice-secret")
    topic = topic_name("aio")
    common: dict[str, Any] = {
        "bootstrap_servers": sasl_module_broker.sasl_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }

    async def main() -> list[bytes]:
        producer = AIOKafkaProducer(**common)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"aio")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**common, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = AioTopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            msg = await asyncio.wait_for(consumer.getone(), 20)
            return [msg.value or b""]
        finally:
            await consumer.stop()

    assert asyncio.run(main()) == [b"aio"]


KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kcat(sasl_module_broker: SaslBroker, mechanism: str) -> None:
    assert KCAT is not None
    add_scram_user(sasl_module_broker.broker.bootstrap, "alice", "alice-secret")
    topic = topic_name("kcat")

    def kcat(
        password: str, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        security = [
            "-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanisms={mechanism}",
            "-X", "sasl.username=alice", "-X", f"sasl.password={password}",
        ]  # fmt: skip
        return subprocess.run(
            [str(KCAT), "-b", sasl_module_broker.sasl_bootstrap, *security, *args],
            input=stdin, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    produced = kcat("alice-secret", "-P", "-t", topic, stdin="one\ntwo\n")
    assert produced.returncode == 0, produced.stderr
    consumed = kcat("alice-secret", "-C", "-t", topic, "-e", "-o", "beginning", "-f", "%s\n")
    assert consumed.stdout.splitlines() == ["one", "two"]
    refused = kcat("wrong", "-L", "-m", "5")
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr


def test_console_tools_with_client_config(sasl_module_broker: SaslBroker, tmp_path: Any) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=alice\nsasl.password=alice-secret\n"
    )
    topic = topic_name("console-sasl")
    bootstrap = sasl_module_broker.sasl_bootstrap
    produced = subprocess.run(
        [sys.executable, "-m", "kafpy", "console-producer", "--bootstrap-server", bootstrap,
         "--topic", topic, "--producer.config", str(config)],
        input="one\ntwo\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [sys.executable, "-m", "kafpy", "console-consumer", "--bootstrap-server", bootstrap,
         "--topic", topic, "--from-beginning", "--max-messages", "2",
         "--consumer.config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert consumed.stdout.splitlines()[:2] == ["one", "two"], consumed.stderr
