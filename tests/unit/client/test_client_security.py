"""ClientSecurity from Kafka client properties: PLAINTEXT, SSL with its ssl.* keys, SASL
refused by name."""

from __future__ import annotations

import pytest

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.local_pki import TestPki


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
