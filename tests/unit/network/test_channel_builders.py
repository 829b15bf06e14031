"""ChannelBuilders: TLS contexts for the listeners that run over TLS, and the inter-broker
client's security from the inter-broker listener."""

from __future__ import annotations

from kafpy.network.channel_builders import (
    inter_broker_client_security,
    inter_broker_sasl_credentials,
    listener_sasl_configs,
    listener_ssl_factories,
)
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.local_pki import TestPki
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


def test_sasl_listener_configs() -> None:
    config = KafkaConfig({
        "log.dirs": "/tmp/x", "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="pa";',
        "listener.name.sasl_plaintext.connections.max.reauth.ms": "60000",
    })  # fmt: skip
    assert config.unknown_keys() == []
    (sasl,) = listener_sasl_configs(config, CredentialCache()).values()
    assert sasl.listener_name == "SASL_PLAINTEXT"
    assert sasl.enabled_mechanisms == ["PLAIN", "SCRAM-SHA-256"]
    assert dict(sasl.plain_users) == {"a": "pa"} and sasl.max_reauth_ms == 60000
    assert inter_broker_sasl_credentials(config) is None
