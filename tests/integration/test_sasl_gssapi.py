"""SASL/GSSAPI (Kerberos) against a real MIT KDC and a real `kafpy server`: kafka-python and
kcat (Cyrus SASL's GSSAPI) authenticate as alice with her key table, produce and consume;
the ACLs apply to User:alice, the principal's short name; kafpy's own tools log in from a
Krb5LoginModule JAAS config; a broker holding stale keys refuses clients with Kafka's
message; a broker with no usable keys refuses to start."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafpy.common.errors import (
    Errors,
    InvalidConfigurationError,
    InvalidRequestError,
    SaslAuthenticationError,
)
from kafpy.network.channel_builders import listener_sasl_configs
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.gssapi_client import GssapiSaslClient
from kafpy.security.kerberos_login import KerberosLogin
from kafpy.security.local_pki import TestPki
from kafpy.security.sasl_server_authenticator import AuthenticationStep, SaslServerAuthenticator
from kafpy.server.kafka_config import KafkaConfig
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.kerberos import (
    BROKER_PRINCIPAL,
    REALM,
    KerberosRealm,
    broker_jaas,
    gssapi_broker_overrides,
)
from tests.fixtures.tls import broker_ssl_overrides

KCAT = shutil.which("kcat")
FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI"


@pytest.fixture(scope="module")
def keytabs(kerberos_realm: KerberosRealm) -> dict[str, Path]:
    """Key tables: the broker's (and a stale one, exported before it), alice's, bob's."""
    stale = kerberos_realm.add_principal(BROKER_PRINCIPAL)
    kerberos_realm.rotate_keys(BROKER_PRINCIPAL)
    return {
        "stale": stale,
        "kafka": kerberos_realm.export_keytab(BROKER_PRINCIPAL, name="kafka-current"),
        "alice": kerberos_realm.add_principal(f"alice@{REALM}"),
        "bob": kerberos_realm.add_principal(f"bob@{REALM}"),
    }


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


@pytest.fixture(scope="module")
def broker(
    tmp_path_factory: pytest.TempPathFactory, keytabs: dict[str, Path]
) -> Iterator[KafpyBroker]:
    """An AclAuthorizer broker: PLAINTEXT for the operator (User:ANONYMOUS, a super user),
    SASL_PLAINTEXT with GSSAPI; alice may produce to and consume `krb`, bob nothing."""
    kafpy_broker = KafpyBroker(tmp_path_factory.mktemp("gssapi-broker"))
    kafpy_broker.overrides.update(gssapi_broker_overrides(keytabs["kafka"]))
    kafpy_broker.overrides.update({
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        "auto.create.topics.enable": "false",
    })  # fmt: skip
    kafpy_broker.start()
    try:
        plain = kafpy_broker.bootstrap
        for args in (
            ["topics", "--create", "--topic", "krb", "--partitions", "1", "--replication-factor", "1"],
            ["acls", "--add", "--producer", "--idempotent", "--consumer", "--topic", "krb", "--group", "*",
             "--allow-principal", "User:alice"],
        ):  # fmt: skip
            done = kafpy(args[0], "--bootstrap-server", plain, *args[1:])
            assert done.returncode == 0, done.stderr
        yield kafpy_broker
    finally:
        kafpy_broker.stop()


def sasl_bootstrap(broker: KafpyBroker) -> str:
    return f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}"


AsUser = Callable[[str], None]


@pytest.fixture
def as_user(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> AsUser:
    """`as_user("alice")`: this process's default Kerberos identity becomes the user's (a
    ticket cache of its own, filled from the user's key table), as kafka-python uses it."""

    def switch(user: str) -> None:
        monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(keytabs[user]))
        monkeypatch.setenv(
            "KRB5CCNAME", f"FILE:{kerberos_realm.ccache(f'{user}-{uuid.uuid4().hex[:6]}')}"
        )

    return switch


def kcat_args(bootstrap: str, keytab: Path) -> list[str]:
    """kcat logging in as alice from her key table (librdkafka runs kinit with it)."""
    assert KCAT is not None
    return [
        KCAT, "-b", bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
        "-X", "sasl.mechanisms=GSSAPI", "-X", "sasl.kerberos.service.name=kafka",
        "-X", f"sasl.kerberos.keytab={keytab}", "-X", "sasl.kerberos.principal=alice",
    ]  # fmt: skip


def client_properties(directory: Path, keytab: Path) -> Path:
    """A kafpy tool's --command-config logging in as alice (a Java client's keys)."""
    config = directory / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
        "sasl.kerberos.service.name=kafka\n"
        "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required "
        f'useKeyTab=true storeKey=true keyTab="{keytab}" principal="alice@{REALM}";\n'
    )
    return config


def kafka_python_config(broker: KafpyBroker) -> dict[str, object]:
    return {
        "bootstrap_servers": sasl_bootstrap(broker),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka",
    }


def test_kafka_python_produces_and_consumes_as_alice(broker: KafpyBroker, as_user: AsUser) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    as_user("alice")
    producer = KafkaProducer(**kafka_python_config(broker))
    try:
        for i in range(3):
            producer.send("krb", f"kp-{i}".encode()).get(timeout=30)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        "krb", group_id="kp-group", auto_offset_reset="earliest", consumer_timeout_ms=15000,
        **kafka_python_config(broker),
    )  # fmt: skip
    ours: list[bytes] = []
    try:
        for message in consumer:  # until the three, or 15 s without a message
            if message.value.startswith(b"kp-"):
                ours.append(message.value)
            if len(ours) == 3:
                break
    finally:
        consumer.close()
    assert ours == [b"kp-0", b"kp-1", b"kp-2"]
    assert f"authenticationID=alice@{REALM}" in broker.log_path.read_text()


def test_acls_apply_to_the_short_name(broker: KafpyBroker, as_user: AsUser) -> None:
    """bob authenticates (his Kerberos principal is valid) but User:bob has no ACL."""
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    as_user("bob")
    producer = KafkaProducer(**kafka_python_config(broker), max_block_ms=15000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("krb", b"from bob").get(timeout=30)
    finally:
        producer.close(timeout=5)


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
def test_kcat_produces_and_consumes_as_alice(
    broker: KafpyBroker, kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    assert KCAT is not None
    env = {
        **os.environ,
        "KRB5CCNAME": f"FILE:{kerberos_realm.ccache('kcat')}",
    }
    base = kcat_args(sasl_bootstrap(broker), keytabs["alice"])

    def kcat(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([*base, *args], input=stdin, capture_output=True, text=True,
                              timeout=60, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    kcat("-P", "-t", "krb", stdin="kcat-one\nkcat-two\n")
    out = kcat("-C", "-t", "krb", "-e", "-o", "beginning", "-f", "%s\n", "-X", "group.id=kcat")
    assert [line for line in out.splitlines() if line.startswith("kcat-")] == [
        "kcat-one",
        "kcat-two",
    ]


def test_kafpy_tools_log_in_from_a_krb5_jaas_config(
    broker: KafpyBroker, keytabs: dict[str, Path], tmp_path: Path
) -> None:
    """kafpy's client (kafpy topics) as alice: she may describe `krb` only."""
    config = client_properties(tmp_path, keytabs["alice"])
    done = kafpy("topics", "--bootstrap-server", sasl_bootstrap(broker),
                 "--command-config", str(config), "--list")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["krb"]


def test_gssapi_over_sasl_ssl(
    tmp_path: Path, keytabs: dict[str, Path], test_pki: TestPki, as_user: AsUser
) -> None:
    """GSSAPI on a SASL_SSL listener: TLS first, then the same exchange inside it
    (kafka-python trusting the test CA; no ACLs on this broker)."""
    from kafka import KafkaProducer

    broker = KafpyBroker(tmp_path / "sasl-ssl", {
        "listeners": "PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.sasl_ssl.gssapi.sasl.jaas.config": broker_jaas(keytabs["kafka"]),
        **broker_ssl_overrides(test_pki),
    })  # fmt: skip
    broker.start()
    try:
        as_user("alice")
        producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{broker.ports['SASL_SSL']}",
            security_protocol="SASL_SSL", ssl_cafile=str(test_pki.ca_certificate),
            sasl_mechanism="GSSAPI", sasl_kerberos_service_name="kafka",
        )  # fmt: skip
        try:
            metadata = producer.send("over-tls", b"x").get(timeout=30)
        finally:
            producer.close()
        assert metadata.topic == "over-tls" and metadata.offset == 0
        assert f"authenticationID=alice@{REALM}" in broker.log_path.read_text()
    finally:
        broker.stop()


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
def test_a_broker_with_stale_keys_refuses_with_kafkas_message(
    tmp_path: Path, kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    """The broker's key table holds an older key version than the KDC's tickets use: kcat
    and kafpy's tools are told Kafka's message, the broker logs the Kerberos reason."""
    assert KCAT is not None
    stale = KafpyBroker(tmp_path / "stale", gssapi_broker_overrides(keytabs["stale"]))
    stale.start()
    try:
        done = subprocess.run(
            [*kcat_args(sasl_bootstrap(stale), keytabs["alice"]), "-L", "-m", "5"],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "KRB5CCNAME": f"FILE:{kerberos_realm.ccache('kcat-stale')}"},
        )  # fmt: skip
        assert done.returncode != 0
        assert FAILED in done.stderr
        tool = kafpy("topics", "--bootstrap-server", sasl_bootstrap(stale),
                     "--command-config", str(client_properties(tmp_path, keytabs["alice"])),
                     "--list")  # fmt: skip
        assert tool.returncode != 0
        assert FAILED in tool.stderr
        log = stale.log_path.read_text()
        assert "GSSAPI authentication failed" in log
    finally:
        stale.stop()


def test_kafpys_client_reauthenticates_with_gssapi(
    tmp_path: Path, keytabs: dict[str, Path], kerberos_realm: KerberosRealm
) -> None:
    """KIP-368 end to end: with connections.max.reauth.ms=1500 kafpy's client keeps one
    connection working over several session lifetimes by authenticating again with a new
    GSSAPI context each time (the broker logs each)."""
    import asyncio

    from kafpy.client.client_security import ClientSecurity, SaslCredentials
    from kafpy.client.connection import BrokerConnection

    broker = KafpyBroker(tmp_path / "reauth", {
        **gssapi_broker_overrides(keytabs["kafka"]), "connections.max.reauth.ms": "1500",
    })  # fmt: skip
    broker.start()
    login = KerberosLogin(f"alice@{REALM}", keytabs["alice"], "kafka")
    security = ClientSecurity("SASL_PLAINTEXT", None, SaslCredentials("GSSAPI", kerberos=login))

    async def over_several_sessions() -> int:
        conn = BrokerConnection("127.0.0.1", broker.ports["SASL_PLAINTEXT"], security=security)
        await conn.connect()
        answered = 0
        try:
            for _ in range(20):  # 5 s: more than three sessions
                body = await conn.send(
                    ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False}
                )
                answered += len(body["brokers"]) == 1
                await asyncio.sleep(0.25)
        finally:
            await conn.close()
        return answered

    try:
        assert asyncio.run(over_several_sessions()) == 20
        log = broker.log_path.read_text()
        assert log.count(f"authenticationID=alice@{REALM}") >= 3
        assert "did not re-authenticate" not in log
    finally:
        broker.stop()


# -- the exchange on one connection, in process ---------------------------------------------


def _frame(api_key: ApiKey, version: int, body: dict[str, Any]) -> memoryview:
    return memoryview(encode_request(RequestHeader(api_key, version, 7, "c"), body)[4:])


def _answer(step: AuthenticationStep, api_key: ApiKey, version: int) -> dict[str, Any]:
    assert step.response is not None
    _, body = decode_response(api_key, version, b"".join(bytes(p) for p in step.response)[4:])
    return body


def _gssapi_login(
    auth: SaslServerAuthenticator, client: GssapiSaslClient, now: int
) -> dict[str, Any]:
    """SaslHandshake v1 and SaslAuthenticate v2 until the client is done; the last answer."""
    handshake = auth.handle_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}), now)
    assert _answer(handshake, ApiKey.SASL_HANDSHAKE, 1)["error_code"] == Errors.NONE
    token: bytes | None = client.first_message()
    body: dict[str, Any] = {}
    while token is not None:
        step = auth.handle_frame(_frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}), now)
        body = _answer(step, ApiKey.SASL_AUTHENTICATE, 2)
        if body["error_code"] != Errors.NONE:
            return body
        token = client.evaluate_challenge(bytes(body["auth_bytes"]))
    return body


def test_reauthentication_keeps_the_principal(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    """KIP-368 with GSSAPI: the session lifetime is connections.max.reauth.ms (the JDK's
    server states no credential lifetime), re-authenticating as alice keeps the session,
    as bob is refused."""
    config = listener_config(**{JAAS: broker_jaas(keytabs["kafka"]),
                                "connections.max.reauth.ms": "60000"})  # fmt: skip
    auth = SaslServerAuthenticator(
        listener_sasl_configs(config, CredentialCache())["SASL_PLAINTEXT"]
    )

    def client(user: str) -> GssapiSaslClient:
        login = KerberosLogin(f"{user}@{REALM}", keytabs[user], "kafka")
        return GssapiSaslClient(login, login.credentials(acceptor=False, where="test"), "127.0.0.1")

    body = _gssapi_login(auth, client("alice"), 0)
    assert body["error_code"] == Errors.NONE and body["session_lifetime_ms"] == 60000
    assert str(auth.principal) == "User:alice"
    body = _gssapi_login(auth, client("alice"), 30000)
    assert body["error_code"] == Errors.NONE and body["session_lifetime_ms"] == 60000
    body = _gssapi_login(auth, client("bob"), 40000)
    assert body["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
    assert body["error_message"] == (
        "Cannot change principals during re-authentication from User:alice: User:bob"
    )


def test_handshake_v0_sends_raw_tokens(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    """After SaslHandshake v0 the GSSAPI tokens are raw size-prefixed frames; the server's
    last (empty) answer is not sent, as the JDK's server returns none."""
    config = listener_config(**{JAAS: broker_jaas(keytabs["kafka"])})
    auth = SaslServerAuthenticator(
        listener_sasl_configs(config, CredentialCache())["SASL_PLAINTEXT"]
    )
    login = KerberosLogin(f"alice@{REALM}", keytabs["alice"], "kafka")
    client = GssapiSaslClient(login, login.credentials(acceptor=False, where="test"), "127.0.0.1")
    handshake = auth.handle_frame(_frame(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "GSSAPI"}), 0)
    assert _answer(handshake, ApiKey.SASL_HANDSHAKE, 0)["error_code"] == Errors.NONE
    token: bytes | None = client.first_message()
    while token is not None:
        step = auth.handle_frame(memoryview(token), 0)
        if auth.complete:
            assert step.response is None
            break
        assert step.response is not None
        token = client.evaluate_challenge(b"".join(bytes(p) for p in step.response)[4:])
    assert auth.complete and str(auth.principal) == "User:alice"


# -- start-up checks ------------------------------------------------------------------------


def listener_config(**overrides: str) -> KafkaConfig:
    return KafkaConfig({
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        **overrides,
    })  # fmt: skip


JAAS = "listener.name.sasl_plaintext.gssapi.sasl.jaas.config"


@pytest.mark.parametrize(
    ("jaas", "message"),
    [
        (None, "has no JAAS configuration"),
        ('org.apache.kafka.common.security.plain.PlainLoginModule required user_a="a";',
         "has no com.sun.security.auth.module.Krb5LoginModule entry"),
        ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;",
         'storeKey=true, keyTab="...", principal="..."'),
        (broker_jaas(Path("/nonexistent/kafka.keytab")),
         "The keyTab /nonexistent/kafka.keytab of " + JAAS + " does not exist"),
    ],
)  # fmt: skip
def test_startup_refuses_a_listener_without_keys(
    kerberos_realm: KerberosRealm, jaas: str | None, message: str
) -> None:
    config = listener_config(**({JAAS: jaas} if jaas is not None else {}))
    with pytest.raises(InvalidConfigurationError, match=re.escape(message)):
        listener_sasl_configs(config, CredentialCache())


def test_startup_refuses_a_keytab_without_the_principal(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    config = listener_config(**{JAAS: broker_jaas(keytabs["alice"])})
    with pytest.raises(InvalidConfigurationError) as refused:
        listener_sasl_configs(config, CredentialCache())
    assert f"Could not login as {BROKER_PRINCIPAL} with the keyTab {keytabs['alice']}" in str(
        refused.value
    )


def test_startup_refuses_missing_service_name_and_bad_rules(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    no_service = KafkaConfig({
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "sasl.enabled.mechanisms": "GSSAPI", JAAS: broker_jaas(keytabs["kafka"]),
    })  # fmt: skip
    with pytest.raises(InvalidConfigurationError, match="No serviceName defined"):
        listener_sasl_configs(no_service, CredentialCache())
    bad_rules = listener_config(**{
        JAAS: broker_jaas(keytabs["kafka"]),
        "sasl.kerberos.principal.to.local.rules": "RULE:[1:$1]/l",
    })  # fmt: skip
    with pytest.raises(InvalidConfigurationError, match="Invalid rule `RULE:\\[1:\\$1\\]/l`"):
        listener_sasl_configs(bad_rules, CredentialCache())


def test_a_token_that_is_not_kerberos_fails_with_kafkas_message(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    config = listener_config(**{JAAS: broker_jaas(keytabs["kafka"])})
    gssapi = listener_sasl_configs(config, CredentialCache())["SASL_PLAINTEXT"].gssapi
    assert gssapi is not None
    server = gssapi.create_sasl_server()
    with pytest.raises(SaslAuthenticationError) as failed:
        server.evaluate_response(b"\x60\x03garbage")
    assert str(failed.value) == FAILED
    assert not server.is_complete()


def _alice_logs_in(
    rules: str | None, keytabs: dict[str, Path]
) -> tuple[SaslServerAuthenticator, dict[str, Any]]:
    overrides = {JAAS: broker_jaas(keytabs["kafka"])}
    if rules is not None:
        overrides["listener.name.sasl_plaintext.sasl.kerberos.principal.to.local.rules"] = rules
    config = listener_config(**overrides)
    assert config.unknown_keys() == []
    auth = SaslServerAuthenticator(
        listener_sasl_configs(config, CredentialCache())["SASL_PLAINTEXT"]
    )
    login = KerberosLogin(f"alice@{REALM}", keytabs["alice"], "kafka")
    client = GssapiSaslClient(login, login.credentials(acceptor=False, where="test"), "127.0.0.1")
    return auth, _gssapi_login(auth, client, 0)


def test_principal_to_local_rules_give_the_principal(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    """The listener's rules (listener.name.<l>. prefix): Kafka's documented realm-stripping
    rule upper-cased gives User:ALICE; rules that map no one-component name refuse alice
    with Kafka's message."""
    auth, body = _alice_logs_in(f"RULE:[1:$1@$0](.*@{REALM})s/@.*///U,DEFAULT", keytabs)
    assert body["error_code"] == Errors.NONE and str(auth.principal) == "User:ALICE"
    auth, body = _alice_logs_in("RULE:[2:$1]", keytabs)
    assert body["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
    assert body["error_message"] == (
        f"Failed to set name for 'alice@{REALM}' based on Kerberos authentication rules."
    )
    assert not auth.complete


def test_rules_change_dynamically_for_new_connections(
    kerberos_realm: KerberosRealm, keytabs: dict[str, Path]
) -> None:
    """`kafpy configs --alter --entity-type brokers` of a listener's rules (KIP-226, as
    Kafka's DynamicListenerConfig): new connections get the new short names; rules that do
    not parse are refused."""
    from kafpy.network.socket_server import SocketServer
    from kafpy.server.dynamic_broker_config import (
        DynamicBrokerConfig,
        DynamicListenerSecurityConfig,
    )

    static = listener_config(
        **{"broker.id": "0", "log.dirs": "/tmp/x", JAAS: broker_jaas(keytabs["kafka"])}
    )
    cache = CredentialCache()
    server = SocketServer(static.listeners, sasl_configs=listener_sasl_configs(static, cache))
    dynamic = DynamicBrokerConfig(static)
    listener_security = DynamicListenerSecurityConfig(server, cache)
    dynamic.add_validator(listener_security.validate)
    dynamic.add_reconfigurable(listener_security)
    key = "listener.name.sasl_plaintext.sasl.kerberos.principal.to.local.rules"
    with pytest.raises(InvalidRequestError, match="Invalid rule `RULE:x`"):
        dynamic.validate({key: "RULE:x"}, per_broker=True)
    dynamic.update_broker_config({key: "RULE:[1:$1]/U"})
    gssapi = server.sasl_configs["SASL_PLAINTEXT"].gssapi
    assert gssapi is not None and gssapi.rules == ("RULE:[1:$1]/U",)
    auth = SaslServerAuthenticator(server.sasl_configs["SASL_PLAINTEXT"])
    login = KerberosLogin(f"alice@{REALM}", keytabs["alice"], "kafka")
    client = GssapiSaslClient(login, login.credentials(acceptor=False, where="test"), "127.0.0.1")
    assert _gssapi_login(auth, client, 0)["error_code"] == Errors.NONE
    assert str(auth.principal) == "User:ALICE"


def test_kafpy_server_exits_naming_the_missing_keytab(
    tmp_path: Path, kerberos_realm: KerberosRealm
) -> None:
    broker = KafpyBroker(tmp_path, gssapi_broker_overrides(tmp_path / "missing.keytab"))
    with pytest.raises(pytest.fail.Exception):
        broker.start()
    assert f"The keyTab {tmp_path / 'missing.keytab'} of {JAAS} does not exist" in broker.log_tail()
