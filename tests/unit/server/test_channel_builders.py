"""ChannelBuilders: TLS contexts for the listeners that run over TLS, and the inter-broker
client's security from the inter-broker listener."""

from __future__ import annotations

from kafpy.security.local_pki import TestPki
from kafpy.server.channel_builders import inter_broker_client_security, listener_ssl_factories
from kafpy.server.kafka_config import KafkaConfig
from tests.fixtures.tls import broker_ssl_overrides


def config(pki: TestPki, **extra: str) -> KafkaConfig:
    return KafkaConfig(
        {
            "broker.id": "0",
            "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,INTERNAL://127.0.0.1:9094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL",
            **broker_ssl_overrides(pki),
            **extra,
        }
    )


def test_a_factory_per_tls_listener_with_its_overrides(test_pki: TestPki) -> None:
    cfg = config(test_pki, **{"listener.name.internal.ssl.client.auth": "required"})
    factories = listener_ssl_factories(cfg)
    assert sorted(factories) == ["INTERNAL", "SSL"]
    assert factories["INTERNAL"].context.verify_mode.name == "CERT_REQUIRED"
    assert factories["SSL"].context.verify_mode.name == "CERT_NONE"


def test_inter_broker_security_follows_the_inter_broker_listener(test_pki: TestPki) -> None:
    plaintext = inter_broker_client_security(config(test_pki))
    assert plaintext.security_protocol == "PLAINTEXT" and not plaintext.uses_tls
    tls = inter_broker_client_security(
        config(test_pki, **{"inter.broker.listener.name": "INTERNAL"})
    )
    assert tls.security_protocol == "SSL" and tls.ssl is not None
    assert tls.ssl.check_hostname  # ssl.endpoint.identification.algorithm=https by default
