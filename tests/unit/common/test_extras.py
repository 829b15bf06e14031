"""Optional parts refuse at once, naming the extra that installs them."""

from __future__ import annotations

import ssl
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafpy.cli import main as cli_main
from kafpy.client.client_security import ClientSecurity
from kafpy.common import extras
from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, missing_modules, require_extra
from kafpy.security.local_pki import TestPki
from kafpy.security.oauthbearer_jwks import OAuthBearerJwksValidator
from kafpy.security.ssl_factory import SslFactory, SslMode
from kafpy.server.kafka_config import KafkaConfig


@pytest.fixture
def console_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "console", ("aiohttp", "kafpy_no_such_module"))
    monkeypatch.setitem(extras.EXTRAS, "metrics", ("kafpy_no_such_module",))


def test_every_extra_is_installed_in_the_development_venv() -> None:
    assert {extra: missing_modules(extra) for extra in extras.EXTRAS} == {
        extra: [] for extra in extras.EXTRAS
    }


def test_a_missing_module_names_the_extra(console_missing: None) -> None:
    assert missing_modules("console") == ["kafpy_no_such_module"]
    with pytest.raises(MissingExtraError) as missing:
        require_extra("console", "kafpy console")
    assert str(missing.value) == (
        "kafpy console needs `pip install 'kafpy[console]'` (not installed: kafpy_no_such_module)"
    )
    assert isinstance(missing.value, ImportError)


def test_the_cli_refuses_a_command_without_its_extra_in_one_line(console_missing: None) -> None:
    result = CliRunner().invoke(cli_main.main, ["console", "--bootstrap-server", "x:9092"])
    assert result.exit_code == 1
    assert "Error: kafpy console needs `pip install 'kafpy[console]'`" in result.output
    assert "Traceback" not in result.output
    listed = CliRunner().invoke(cli_main.main, ["--help"])
    assert listed.exit_code == 0 and "console" in listed.output


def test_a_broker_serving_metrics_without_the_extra_is_refused(console_missing: None) -> None:
    with pytest.raises(InvalidConfigurationError, match=r"kafpy\[metrics\]"):
        KafkaConfig({"kafpy.metrics.listener": "http://127.0.0.1:0"})
    KafkaConfig({"kafpy.metrics.listener": ""})  # no endpoint: no extra needed


def test_gssapi_without_the_kerberos_extra_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "kerberos", ("kafpy_no_such_module",))
    with pytest.raises(InvalidConfigurationError, match=r"kafpy\[kerberos\]") as refused:
        KafkaConfig({
            "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.enabled.mechanisms": "GSSAPI",
        })  # fmt: skip
    assert str(refused.value).startswith(
        "SASL mechanism GSSAPI (sasl.enabled.mechanisms) needs `pip install 'kafpy[kerberos]'`"
    )


def test_the_schema_registry_without_its_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "schema-registry", ("aiohttp", "kafpy_no_such_module"))
    result = CliRunner().invoke(cli_main.main, ["schema-registry", "sr.properties"])
    assert result.exit_code == 1
    assert (
        "Error: kafpy schema-registry needs `pip install 'kafpy[schema-registry]'` "
        "(not installed: kafpy_no_such_module)"
    ) in result.output


@pytest.fixture
def no_cryptography(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core install: importing cryptography (or any of its modules) fails, as in a venv
    without kafpy[crypto]."""
    for name in [m for m in sys.modules if m == "cryptography" or m.startswith("cryptography.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "cryptography", None)


def test_the_broker_without_cryptography_refuses_what_needs_it(no_cryptography: None) -> None:
    assert missing_modules("crypto") == ["cryptography"]
    KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:9092"})  # plaintext needs nothing more
    with pytest.raises(InvalidConfigurationError) as refused:
        KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"})
    assert str(refused.value) == (
        "Listener SSL://127.0.0.1:9093 (SSL) needs `pip install 'kafpy[crypto]'` "
        "(not installed: cryptography)"
    )
    with pytest.raises(
        InvalidConfigurationError, match=r"password.encoder.secret .*kafpy\[crypto\]"
    ):
        KafkaConfig({"password.encoder.secret": "s3cret"})
    with pytest.raises(InvalidConfigurationError, match=r"TLS on listener SSL .*kafpy\[crypto\]"):
        SslFactory(SslMode.SERVER, {}, where="listener SSL")
    with pytest.raises(
        InvalidConfigurationError, match=r"OAuthBearerJwksValidator .*kafpy\[crypto\]"
    ):
        OAuthBearerJwksValidator({"kafpyJwksUrl": "file:///nonexistent"})


def test_a_client_with_pem_stores_needs_no_cryptography(
    test_pki: TestPki, no_cryptography: None
) -> None:
    pem = {"security.protocol": "SSL",
           "ssl.keystore.type": "PEM", "ssl.keystore.location": str(test_pki.client.keystore),
           "ssl.truststore.type": "PEM", "ssl.truststore.location": str(test_pki.ca_certificate)}  # fmt: skip
    factory = ClientSecurity.from_config(pem, source="client.properties").ssl
    assert factory is not None and factory.context.verify_mode == ssl.CERT_REQUIRED
    assert factory.certificate is None  # a client's certificate is presented, never parsed
    pkcs12 = {"security.protocol": "SSL", "ssl.truststore.type": "PKCS12",
              "ssl.truststore.location": "/nonexistent.p12"}  # fmt: skip
    with pytest.raises(InvalidConfigurationError, match=r"PKCS12 trust store .*kafpy\[crypto\]"):
        ClientSecurity.from_config(pkcs12, source="client.properties")


def test_a_secure_local_cluster_without_cryptography_names_the_extra(
    no_cryptography: None, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli_main.main, ["cluster", "up", "--secure", "--dir", str(tmp_path / "c")]
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "kafpy cluster up --secure needs `pip install 'kafpy[crypto]'` "
        "(not installed: cryptography)"
    ]
    assert not (tmp_path / "c").exists()  # refused before anything was made
