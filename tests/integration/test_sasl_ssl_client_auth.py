"""SASL_SSL and client certificates, as Kafka 2.8: a broker-wide `ssl.client.auth=required`
is for SSL listeners alone, so a SASL_SSL client without a certificate still gets in (it is
authenticated by SASL), while a SASL_SSL listener with its own
`listener.name.<listener>.ssl.client.auth=required` refuses it. librdkafka's suite (test
0097_ssl_verify) runs against such a broker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kafpy.security.local_pki import TestPki
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.sasl import PLAIN_JAAS
from tests.fixtures.tls import broker_ssl_overrides
from tests.integration.test_sasl import first_client_error, topic_name


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, test_pki: TestPki) -> Iterator[KafpyBroker]:
    """SSL, SASL_SSL and MTLS (SASL_SSL with its own `ssl.client.auth=required`) listeners,
    client certificates required broker-wide."""
    broker = KafpyBroker(tmp_path_factory.mktemp("sasl-ssl-client-auth"))
    broker.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
        "MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,"
        "MTLS:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.mtls.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.mtls.ssl.client.auth": "required",
        **broker_ssl_overrides(test_pki, client_auth="required"),
    })  # fmt: skip
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def _props(broker: KafpyBroker, listener: str, pki: TestPki, **extra: str) -> dict[str, Any]:
    props = {
        "bootstrap.servers": f"127.0.0.1:{broker.ports[listener]}",
        "security.protocol": "SSL" if listener == "SSL" else "SASL_SSL",
        "ssl.ca.location": str(pki.ca_certificate),
        **extra,
    }
    if listener != "SSL":
        props.update(
            {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
        )
    return props


def _produce(props: dict[str, Any], topic: str) -> None:
    delivered: list[Any] = []
    producer = Producer(props)
    producer.produce(topic, b"x", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None]


HANDSHAKE_FAILED = "Failed authentication with /127.0.0.1 (SSL handshake failed"


def _handshake_failures(broker: KafpyBroker) -> int:
    return broker.log_path.read_text(errors="replace").count(HANDSHAKE_FAILED)


def _assert_refused(broker: KafpyBroker, props: dict[str, Any]) -> None:
    """The broker ends the TLS handshake of a client that sends no certificate."""
    before = _handshake_failures(broker)
    assert "brokers are down" in first_client_error(props)
    # the client may see the connection closed before the broker's log line is written
    wait_until(lambda: _handshake_failures(broker) > before, 30, "the broker's handshake failure")


def test_sasl_ssl_client_without_certificate_gets_in(
    broker: KafpyBroker, test_pki: TestPki
) -> None:
    _produce(_props(broker, "SASL_SSL", test_pki), topic_name("no-cert"))


def test_sasl_ssl_client_with_untrusted_certificate_gets_in(
    broker: KafpyBroker, test_pki: TestPki
) -> None:
    # the broker does not ask for a certificate, so librdkafka does not send it
    untrusted = {
        "ssl.key.location": str(test_pki.untrusted_client.key),
        "ssl.certificate.location": str(test_pki.untrusted_client.certificate),
    }
    _produce(_props(broker, "SASL_SSL", test_pki, **untrusted), topic_name("untrusted-cert"))


def test_sasl_ssl_listener_with_its_own_client_auth_refuses_a_client_without_certificate(
    broker: KafpyBroker, test_pki: TestPki
) -> None:
    _assert_refused(broker, _props(broker, "MTLS", test_pki))
    trusted = {
        "ssl.key.location": str(test_pki.client.key),
        "ssl.certificate.location": str(test_pki.client.certificate),
    }
    _produce(_props(broker, "MTLS", test_pki, **trusted), topic_name("mtls"))


def test_ssl_listener_still_requires_a_certificate(broker: KafpyBroker, test_pki: TestPki) -> None:
    _assert_refused(broker, _props(broker, "SSL", test_pki))
