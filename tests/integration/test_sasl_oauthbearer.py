"""SASL/OAUTHBEARER against a real broker with the AclAuthorizer and three listeners:
PLAINTEXT (the readiness probe and the operator, User:ANONYMOUS, a super user),
SASL_PLAINTEXT with Kafka's unsecured validator (required scope `kafka`; also the
inter-broker listener, the broker logging in as User:admin with an unsecured token) and
JWKS, a SASL_PLAINTEXT listener validating signed tokens with kafpy's JWKS validator
against a key set the test writes (issuer and audience checked).

confluent-kafka (librdkafka's unsecured JWT builder, `sasl.oauthbearer.config`) produces
and consumes as User:alice, which has ACLs on topic `a` only; kafka-python sends tokens the
test makes (signed with RS256 and ES256), and librdkafka's oauthbearer_token_refresh_cb
gives the bad ones (expired, forged, wrong issuer or audience, unsigned); `kafpy topics`
logs in with OAUTHBEARER too. On the wire: the error JSON comes as a challenge, `\x01`
then fails, and the session lifetime (KIP-368) is the token's; librdkafka re-authenticates
before a short-lived token ends its session, and so does kafpy's own client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from kafka import KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError
from kafka.net.sasl.oauth import AbstractTokenProvider

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.client.connection import BrokerConnection
from kafpy.common.errors import Errors
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.security.oauthbearer_unsecured import OAuthBearerUnsecuredLogin
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker

LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWKS_HANDLER = "kafpy.security.oauthbearer_jwks.OAuthBearerJwksValidator"
ISSUER, AUDIENCE = "https://issuer.example", "kafka"


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


@dataclass
class OAuthBroker:
    broker: KafpyBroker
    rsa_key: rsa.RSAPrivateKey
    ec_key: ec.EllipticCurvePrivateKey

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.broker.ports[listener]}"


def _jwk(public_key: Any, kid: str, alg: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(public_key))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


@pytest.fixture(scope="module")
def oauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthBroker]:
    data = tmp_path_factory.mktemp("oauthbearer-broker")
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    jwks = data / "jwks.json"
    jwks.write_text(json.dumps({"keys": [_jwk(rsa_key.public_key(), "rsa-1", "RS256"),
                                         _jwk(ec_key.public_key(), "ec-1", "ES256")]}))  # fmt: skip
    broker = KafpyBroker(data / "broker")
    broker.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:0,"
                     "JWKS://127.0.0.1:0",
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,JWKS:SASL_PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{LOGIN_MODULE} required unsecuredLoginStringClaim_sub="admin" '
            'unsecuredLoginListClaim_scope=",kafka" unsecuredValidatorRequiredScope="kafka";',
        "listener.name.jwks.oauthbearer.sasl.server.callback.handler.class": JWKS_HANDLER,
        "listener.name.jwks.oauthbearer.sasl.jaas.config":
            f'{LOGIN_MODULE} required kafpyJwksUrl="{jwks.as_uri()}" '
            f'kafpyJwksIssuer="{ISSUER}" kafpyJwksAudience="{AUDIENCE}";',
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "auto.create.topics.enable": "false",
    })  # fmt: skip
    broker.start()
    plain = broker.bootstrap
    try:
        for topic in ("a", "b"):
            done = kafpy("topics", "--bootstrap-server", plain, "--create", "--topic", topic,
                         "--partitions", "1", "--replication-factor", "1")  # fmt: skip
            assert done.returncode == 0, done.stderr
        producer = Producer({"bootstrap.servers": plain})
        producer.produce("b", b"in-b")
        assert producer.flush(30) == 0
        for role in ("--producer", "--consumer"):
            done = kafpy("acls", "--bootstrap-server", plain, "--add", role, "--topic", "a",
                         "--group", "alice-group", "--allow-principal", "User:alice")  # fmt: skip
            assert done.returncode == 0, done.stderr
        yield OAuthBroker(broker, rsa_key, ec_key)
    finally:
        broker.stop()


def librdkafka_props(broker: OAuthBroker, oauth_config: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": oauth_config,
    }


def consume_first(config: dict[str, Any], topic: str) -> Any:
    consumer = Consumer({**config, "group.id": "alice-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])

        def first() -> list[Any]:
            message = consumer.poll(0.5)
            return [] if message is None else [message]

        (message,) = wait_until(
            first, 30, interval_s=0, on_timeout=lambda: pytest.fail(f"nothing from {topic} in 30 s")
        )
        return message
    finally:
        consumer.close()


def first_client_error(props: dict[str, Any]) -> str:
    errors: list[str] = []
    producer = Producer({**props, "error_cb": lambda e: errors.append(e.str())})
    for _ in range(100):
        producer.poll(0.1)
        if errors:
            break
    producer.flush(0)
    assert errors, "the client reported no error"
    return errors[0]


def test_librdkafka_unsecured_token_produces_and_consumes(oauth_broker: OAuthBroker) -> None:
    props = librdkafka_props(oauth_broker, "principal=alice scope=kafka,other")
    producer = Producer(props)
    producer.produce("a", b"from-alice")
    assert producer.flush(30) == 0
    message = consume_first(props, "a")
    assert message.error() is None and message.value() == b"from-alice"


def test_acls_apply_to_the_tokens_principal(oauth_broker: OAuthBroker) -> None:
    message = consume_first(librdkafka_props(oauth_broker, "principal=alice scope=kafka"), "b")
    assert message.error() is not None
    assert message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_librdkafka_token_without_the_required_scope_is_refused(oauth_broker: OAuthBroker) -> None:
    error = first_client_error(librdkafka_props(oauth_broker, "principal=alice scope=other"))
    assert '{"status":"insufficient_scope", "scope":"[kafka]"}' in error


class GivenToken(AbstractTokenProvider):
    def __init__(self, token: str) -> None:
        self._token = token

    def token(self) -> str:
        return self._token


def kafka_python_producer(broker: OAuthBroker, listener: str, token: str) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=broker.bootstrap(listener),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=GivenToken(token),
        enable_idempotence=False,  # alice may write topic a, not IdempotentWrite the cluster
    )


def b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsecured(claims: dict[str, Any]) -> str:
    return f"{b64url({'alg': 'none'})}.{b64url(claims)}."


def refusal(broker: OAuthBroker, listener: str, token: str) -> str:
    """The error librdkafka reports when its oauthbearer_token_refresh_cb gives `token`
    (told to librdkafka as valid for a minute, whatever the token says)."""

    def refresh(_config: str) -> tuple[str, float, str]:
        return token, time.time() + 60, "alice"

    return first_client_error({
        "bootstrap.servers": broker.bootstrap(listener),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": refresh,
    })  # fmt: skip


def test_expired_unsecured_token_is_refused(oauth_broker: OAuthBroker) -> None:
    now = int(time.time())  # whole seconds: a finer iat can be after the broker's ms clock
    token = unsecured({"sub": "alice", "scope": "kafka", "iat": now - 120, "exp": now - 60})
    assert '{"status":"invalid_token"}' in refusal(oauth_broker, "SASL_PLAINTEXT", token)


def test_kafka_python_unsecured_token_is_accepted(oauth_broker: OAuthBroker) -> None:
    now = int(time.time())  # whole seconds: a finer iat can be after the broker's ms clock
    token = unsecured({"sub": "alice", "scope": ["kafka"], "iat": now, "exp": now + 600})
    producer = kafka_python_producer(oauth_broker, "SASL_PLAINTEXT", token)
    try:
        producer.send("a", b"kafka-python").get(timeout=30)
    finally:
        producer.close()


def signed(broker: OAuthBroker, alg: str, **claims: Any) -> str:
    now = int(time.time())  # whole seconds: a finer iat can be after the broker's ms clock
    body = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600, **claims}
    key: Any = broker.rsa_key if alg == "RS256" else broker.ec_key
    kid = "rsa-1" if alg == "RS256" else "ec-1"
    return jwt.encode(body, key, algorithm=alg, headers={"kid": kid})


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_jwks_signed_token_produces(oauth_broker: OAuthBroker, alg: str) -> None:
    producer = kafka_python_producer(oauth_broker, "JWKS", signed(oauth_broker, alg))
    try:
        producer.send("a", f"signed-{alg}".encode()).get(timeout=30)
    finally:
        producer.close()


def test_jwks_principal_is_subject_for_acls(oauth_broker: OAuthBroker) -> None:
    producer = kafka_python_producer(oauth_broker, "JWKS", signed(oauth_broker, "RS256"))
    try:
        with pytest.raises(KafkaPythonError, match="TopicAuthorizationFailed"):
            producer.send("b", b"denied").get(timeout=30)
    finally:
        producer.close()


def forged(broker: OAuthBroker) -> str:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())  # whole seconds: a finer iat can be after the broker's ms clock
    claims = {"sub": "admin", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600}
    return jwt.encode(claims, other, algorithm="RS256", headers={"kid": "rsa-1"})


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda b: forged(b), id="forged-signature"),
        pytest.param(lambda b: signed(b, "RS256", aud="other"), id="wrong-audience"),
        pytest.param(lambda b: signed(b, "RS256", iss="https://evil.example"), id="wrong-issuer"),
        pytest.param(lambda b: signed(b, "ES256", exp=time.time() - 5), id="expired"),
        pytest.param(
            lambda b: unsecured({"sub": "admin", "exp": time.time() + 600}), id="unsigned"
        ),
    ],
)
def test_jwks_refuses_bad_tokens(oauth_broker: OAuthBroker, token: Any) -> None:
    assert '{"status":"invalid_token"}' in refusal(oauth_broker, "JWKS", token(oauth_broker))


def test_kafpy_tool_logs_in_with_oauthbearer(oauth_broker: OAuthBroker, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
        f'sasl.jaas.config={LOGIN_MODULE} required unsecuredLoginStringClaim_sub="admin" '
        'unsecuredLoginListClaim_scope=",kafka";\n'
    )
    done = kafpy("topics", "--bootstrap-server", oauth_broker.bootstrap("SASL_PLAINTEXT"),
                 "--command-config", str(config), "--list")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {"a", "b"} <= set(done.stdout.split())


def _call(sock: socket.socket, api_key: ApiKey, version: int, body: dict[str, Any]) -> Any:
    sock.sendall(encode_request(RequestHeader(api_key, version, 1, "raw"), body))
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">i", head)
    return decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))[1]


def test_wire_exchange_session_lifetime_is_the_tokens(oauth_broker: OAuthBroker) -> None:
    now = int(time.time())  # whole seconds: a finer iat can be after the broker's ms clock
    token = unsecured({"sub": "alice", "scope": "kafka", "iat": now, "exp": now + 30})
    port = oauth_broker.broker.ports["SASL_PLAINTEXT"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        handshake = _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        assert handshake["error_code"] == 0 and handshake["mechanisms"] == ["OAUTHBEARER"]
        first = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
        body = _call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": first})
        assert body["error_code"] == Errors.NONE and body["auth_bytes"] == b""
        # connections.max.reauth.ms is not set: the token's expiry ends the session
        assert 25_000 < body["session_lifetime_ms"] <= 30_000


def test_wire_exchange_error_json_then_failure(oauth_broker: OAuthBroker) -> None:
    now = int(time.time())  # whole seconds: a finer iat can be after the broker's ms clock
    token = unsecured({"sub": "alice", "iat": now, "exp": now + 30})  # no scope `kafka`
    port = oauth_broker.broker.ports["SASL_PLAINTEXT"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        assert (
            _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})["error_code"] == 0
        )
        first = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
        body = _call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": first})
        assert body["error_code"] == Errors.NONE
        assert body["auth_bytes"] == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
        body = _call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\x01"})
        assert body["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
        assert body["error_message"] == '{"status":"insufficient_scope", "scope":"[kafka]"}'
        assert sock.recv(1) == b""  # and the connection is closed


def test_librdkafka_reauthenticates_before_its_token_expires(oauth_broker: OAuthBroker) -> None:
    """The session ends with the 10 s token; librdkafka (told the lifetime) re-authenticates
    in-band with its refreshed token and keeps producing, never cut off."""
    log = oauth_broker.broker.log_path
    expired_before = log.read_text(errors="replace").count("did not re-authenticate")
    errors: list[str] = []
    debug: list[str] = []
    client_log = logging.getLogger("librdkafka-oauthbearer")
    client_log.propagate = False
    client_log.setLevel(logging.DEBUG)
    handler = logging.Handler()
    handler.emit = lambda record: debug.append(record.getMessage())  # type: ignore[method-assign]
    client_log.addHandler(handler)
    props = librdkafka_props(oauth_broker, "principal=alice scope=kafka lifeSeconds=10")
    producer = Producer({**props, "error_cb": lambda e: errors.append(e.str()),
                         "debug": "security", "logger": client_log})  # fmt: skip
    try:
        deadline = time.monotonic() + 13
        while time.monotonic() < deadline:
            producer.produce("a", b"x")
            producer.flush(10)
            time.sleep(0.2)
        assert producer.flush(10) == 0
    finally:
        client_log.removeHandler(handler)
    assert errors == []
    assert any("Auth in state REAUTH" in line for line in debug)
    assert log.read_text(errors="replace").count("did not re-authenticate") == expired_before


def test_kafpy_client_reauthenticates_in_band(oauth_broker: OAuthBroker) -> None:
    """kafpy's own client (as the broker's inter-broker connections use it) re-authenticates
    on the same connection before its 2 s token ends the session: requests keep being
    answered over three lifetimes and the broker never cuts it off."""
    log = oauth_broker.broker.log_path
    expired_before = log.read_text(errors="replace").count("did not re-authenticate")
    login = OAuthBearerUnsecuredLogin({
        "unsecuredLoginStringClaim_sub": "admin",
        "unsecuredLoginListClaim_scope": ",kafka",
        "unsecuredLoginLifetimeSeconds": "2",
    })  # fmt: skip
    security = ClientSecurity(
        "SASL_PLAINTEXT", None, SaslCredentials("OAUTHBEARER", oauthbearer=login)
    )

    async def requests_for(seconds: float) -> int:
        port = oauth_broker.broker.ports["SASL_PLAINTEXT"]
        async with BrokerConnection("127.0.0.1", port, security=security) as conn:
            answered = 0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                body = await conn.send(ApiKey.METADATA, {"topics": None}, 1)
                answered += len(body["brokers"])
                await asyncio.sleep(0.1)
            assert conn.connected
            return answered

    assert asyncio.run(requests_for(6)) > 30
    assert log.read_text(errors="replace").count("did not re-authenticate") == expired_before
