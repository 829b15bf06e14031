"""ChannelBuilders: TLS contexts for the listeners that run over TLS, and the inter-broker
client's security from the inter-broker listener; SASL listeners' settings, OAUTHBEARER's
validator and the broker's own OAUTHBEARER login."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from kafpy.common.errors import InvalidConfigurationError
from kafpy.network.channel_builders import (
    inter_broker_client_security,
    inter_broker_sasl_credentials,
    listener_sasl_configs,
    listener_ssl_factories,
    reconfigured_ssl_factories,
)
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.local_pki import TestPki
from kafpy.security.oauthbearer_jwks import OAuthBearerJwksValidator
from kafpy.security.oauthbearer_unsecured import OAuthBearerUnsecuredValidator
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


def sasl_ssl_config(pki: TestPki, **extra: str) -> KafkaConfig:
    """SSL, SASL_SSL and MTLS (another SASL_SSL listener) with client certificates
    required broker-wide."""
    return KafkaConfig({
        "broker.id": "0",
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,"
        "SASL_SSL://127.0.0.1:9094,MTLS://127.0.0.1:9095",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,"
        "MTLS:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN",
        **broker_ssl_overrides(pki, client_auth="required"),
        **extra,
    })  # fmt: skip


def test_sasl_ssl_listeners_ask_for_certificates_only_with_their_own_client_auth(
    test_pki: TestPki, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = sasl_ssl_config(test_pki, **{"listener.name.mtls.ssl.client.auth": "required"})
    with caplog.at_level(logging.WARNING, logger="kafpy.network.ChannelBuilders"):
        factories = listener_ssl_factories(cfg)
    modes = {name: f.context.verify_mode.name for name, f in factories.items()}
    assert modes == {"SSL": "CERT_REQUIRED", "SASL_SSL": "CERT_NONE", "MTLS": "CERT_REQUIRED"}
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "Broker configuration 'ssl.client.auth' is applied only to SSL listeners. "
        "Listener-prefixed configuration can be used to enable SSL client authentication for "
        "SASL_SSL listeners. In future releases, broker-wide option without listener prefix "
        "may be applied to SASL_SSL listeners as well. All configuration options intended for "
        "specific listeners should be listener-prefixed."
    ]


def test_a_reconfigured_sasl_ssl_listener_keeps_asking_for_no_certificate(
    test_pki: TestPki,
) -> None:
    cfg = sasl_ssl_config(test_pki)
    assert reconfigured_ssl_factories(cfg, listener_ssl_factories(cfg)) == {}


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


OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def oauth_config(**extra: str) -> KafkaConfig:
    return KafkaConfig({
        "log.dirs": "/tmp/x", "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="broker" '
            'unsecuredValidatorRequiredScope="kafka";',
        **extra,
    })  # fmt: skip


def test_oauthbearer_listener_uses_the_unsecured_validator_by_default() -> None:
    config = oauth_config(**{
        "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "30000",
    })  # fmt: skip
    assert config.unknown_keys() == []
    (sasl,) = listener_sasl_configs(config, CredentialCache()).values()
    assert sasl.oauthbearer is not None
    assert sasl.oauthbearer.callback_handler_class.endswith(
        "OAuthBearerUnsecuredValidatorCallbackHandler"
    )
    assert isinstance(sasl.oauthbearer.validator, OAuthBearerUnsecuredValidator)
    assert sasl.oauthbearer.validator.required_scope == ["kafka"]
    assert sasl.max_reauth_ms_for("OAUTHBEARER") == 30000 and sasl.max_reauth_ms == 0
    # equal settings are equal configs (a dynamic update that changes nothing is no change)
    assert listener_sasl_configs(config, sasl.credential_cache)["SASL_PLAINTEXT"] == sasl


def test_oauthbearer_inter_broker_logs_in_with_an_unsecured_token() -> None:
    config = oauth_config(**{"inter.broker.listener.name": "SASL_PLAINTEXT",
                             "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER"})  # fmt: skip
    credentials = inter_broker_sasl_credentials(config)
    assert credentials is not None and credentials.oauthbearer is not None
    token = credentials.oauthbearer.token_value()
    assert (
        OAuthBearerUnsecuredValidator({}).validate(token, int(time.time() * 1000)).principal_name
        == "broker"
    )


def test_oauthbearer_listener_without_jaas_is_refused() -> None:
    config = KafkaConfig({"log.dirs": "/tmp/x",
                          "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094",
                          "sasl.enabled.mechanisms": "OAUTHBEARER"})  # fmt: skip
    with pytest.raises(InvalidConfigurationError, match="has no JAAS configuration for it"):
        listener_sasl_configs(config, CredentialCache())


def test_jwks_validator_on_the_inter_broker_listener_is_refused(tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    jwks.write_text(json.dumps({"keys": [json.loads(ECAlgorithm.to_jwk(key))]}))
    config = oauth_config(**{
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{OAUTH_MODULE} required kafpyJwksUrl="{jwks.as_uri()}";',
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
            "kafpy.security.oauthbearer_jwks.OAuthBearerJwksValidator",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
    })  # fmt: skip
    (sasl,) = listener_sasl_configs(config, CredentialCache()).values()
    assert sasl.oauthbearer is not None
    assert isinstance(sasl.oauthbearer.validator, OAuthBearerJwksValidator)
    with pytest.raises(InvalidConfigurationError, match="refuses the unsecured token"):
        inter_broker_sasl_credentials(config)
