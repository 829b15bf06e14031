"""ClientSecurity from Kafka client properties: PLAINTEXT, SSL with its ssl.* keys, SASL
(OAUTHBEARER's unsecured tokens from the Java client's and librdkafka's keys), what kafpy
cannot honour refused by name."""

from __future__ import annotations

import time

import pytest

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.local_pki import TestPki
from kafpy.security.oauthbearer_unsecured import OAuthBearerUnsecuredValidator


def test_plaintext_by_default_and_ssl_keys_then_unused() -> None:
    security = ClientSecurity.from_config({"ssl.truststore.location": "/x"}, source="f")
    assert security == ClientSecurity("PLAINTEXT") and not security.uses_tls


def test_ssl_builds_a_client_context(test_pki: TestPki) -> None:
    props = {"security.protocol": "ssl", "ssl.truststore.type": "PEM",
             "ssl.truststore.location": str(test_pki.ca_certificate)}  # fmt: skip
    security = ClientSecurity.from_config(props, source="client.properties")
    assert security.security_protocol == "SSL" and security.uses_tls
    assert security.ssl is not None and security.ssl.check_hostname


@pytest.mark.parametrize(
    ("protocol", "message"),
    [
        ("SASL_SSL", "sasl.mechanism in f is GSSAPI, which needs a Kerberos login"),
        ("TLS", "Invalid value TLS for configuration security.protocol in f"),
    ],
)  # fmt: skip
def test_refused(protocol: str, message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=message):
        ClientSecurity.from_config({"security.protocol": protocol}, source="f")


def test_scram_login_module_tokenauth_option_marks_token_authentication() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="tok" password="aG1hYw==" tokenauth="true";'
    )
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}
    sasl = SaslCredentials.from_config({**props, "sasl.jaas.config": jaas}, source="test")
    assert (sasl.username, sasl.password, sasl.token_auth) == ("tok", "aG1hYw==", True)
    plain = SaslCredentials.from_config(
        {**props, "sasl.jaas.config": jaas.replace(' tokenauth="true"', "")}, source="test"
    )
    assert not plain.token_auth


def test_oauthbearer_from_librdkafkas_unsecured_jwt_config() -> None:
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "enable.sasl.oauthbearer.unsecure.jwt": "true",
             "sasl.oauthbearer.config": "principal=alice scope=read,write lifeSeconds=60 "
                                        "extension_traceId=t1"}  # fmt: skip
    sasl = ClientSecurity.from_config(props, source="f").sasl
    assert sasl is not None and sasl.oauthbearer is not None
    assert dict(sasl.oauthbearer.extensions) == {"traceId": "t1"}
    token_value = sasl.oauthbearer.token_value()
    now_ms = time.time_ns() // 1_000_000  # after the token is issued, as a broker checks it
    token = OAuthBearerUnsecuredValidator({}).validate(token_value, now_ms)
    assert token.principal_name == "alice" and token.scope == frozenset({"read", "write"})
    assert now_ms < token.lifetime_ms <= now_ms + 61_000


def test_oauthbearer_from_the_java_clients_jaas_config() -> None:
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
             "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                                 'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="bob";'}  # fmt: skip
    sasl = SaslCredentials.from_config(props, source="f")
    assert sasl.oauthbearer is not None
    token_value = sasl.oauthbearer.token_value()
    now_ms = time.time_ns() // 1_000_000
    token = OAuthBearerUnsecuredValidator({}).validate(token_value, now_ms)
    assert token.principal_name == "bob"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "OAUTHBEARER needs a token in f"),
        ({"sasl.oauthbearer.config": "principal=a"}, "OAUTHBEARER needs a token in f"),
        ({"sasl.oauthbearer.config": "principal=a colour=red",
          "enable.sasl.oauthbearer.unsecure.jwt": "true"}, "unknown attribute"),
        ({"sasl.login.callback.handler.class": "com.example.Fetcher"},
         "names the Java class com.example.Fetcher"),
    ],
)  # fmt: skip
def test_oauthbearer_refused(extra: dict[str, str], message: str) -> None:
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", **extra}
    with pytest.raises(InvalidConfigurationError, match=message):
        SaslCredentials.from_config(props, source="f")
