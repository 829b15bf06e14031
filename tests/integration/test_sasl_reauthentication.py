"""SASL sessions in time: re-authentication (KIP-368) on a broker with
connections.max.reauth.ms (SaslAuthenticate v1+ tells the session lifetime, confluent-kafka
re-authenticates and keeps producing past several lifetimes, a connection that does not is
closed at its next request after the session ended), and a client that never finishes
authenticating is closed after connections.max.idle.ms."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kafpy.common.errors import Errors
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.sasl import SaslBroker, sasl_broker_overrides

REAUTH_MS = 1500
IDLE_MS = 1500


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    broker = KafpyBroker(tmp_path_factory.mktemp("reauth-broker"))
    broker.overrides.update(
        {
            **sasl_broker_overrides(),
            "connections.max.reauth.ms": str(REAUTH_MS),
            "connections.max.idle.ms": str(IDLE_MS),
        }
    )
    broker.start()
    try:
        yield SaslBroker(broker)
    finally:
        broker.stop()


def _call(sock: socket.socket, api_key: ApiKey, version: int, body: dict[str, Any]) -> Any:
    sock.sendall(encode_request(RequestHeader(api_key, version, 1, "raw"), body))
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">i", head)
    return decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))[1]


def test_session_lifetime_and_expiry(reauth_broker: SaslBroker) -> None:
    with socket.create_connection(("127.0.0.1", reauth_broker.sasl_port), timeout=10) as sock:
        assert _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        body = _call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"})
        assert body["error_code"] == Errors.NONE
        assert body["session_lifetime_ms"] == REAUTH_MS
        assert _call(sock, ApiKey.METADATA, 1, {"topics": []})["brokers"]
        time.sleep(REAUTH_MS / 1000 + 0.5)  # let the session end
        try:
            answer = _call(sock, ApiKey.METADATA, 1, {"topics": []})
        except ConnectionResetError:
            answer = None
        assert answer is None
    assert "did not re-authenticate" in reauth_broker.broker.log_tail(80)


def _expired(broker: SaslBroker) -> int:
    return broker.broker.log_path.read_text(errors="replace").count("did not re-authenticate")


def test_confluent_kafka_reauthenticates(reauth_broker: SaslBroker) -> None:
    expired_before = _expired(reauth_broker)
    errors: list[str] = []
    producer = Producer({
        "bootstrap.servers": reauth_broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret",
        "error_cb": lambda e: errors.append(e.str()),
    })  # fmt: skip
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000
    while time.monotonic() < deadline:
        producer.produce("reauth", b"x")
        producer.flush(10)
        time.sleep(0.1)
    assert producer.flush(10) == 0
    assert errors == []
    assert _expired(reauth_broker) == expired_before


@pytest.mark.parametrize("handshake", [False, True])
def test_a_client_that_never_authenticates_is_closed(
    reauth_broker: SaslBroker, handshake: bool
) -> None:
    with socket.create_connection(("127.0.0.1", reauth_broker.sasl_port), timeout=10) as sock:
        if handshake:
            assert _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        sock.settimeout(IDLE_MS / 1000 + 10)
        try:
            assert sock.recv(1) == b""  # closed by the broker, not by our timeout
        except ConnectionResetError:
            pass
    assert "SASL authentication did not complete within connections.max.idle.ms" in (
        reauth_broker.broker.log_path.read_text(errors="replace")
    )
