"""SslFactory: contexts from Kafka's ssl.* keys (PEM files, inline PEM, PKCS12), what it
refuses by name (JKS, Java-only keys, gaps in protocols, unknown suites), and a real
handshake between a server and a client context it built."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.local_pki import TestPki
from kafpy.security.ssl_configs import BROKER_SSL_CONFIG_DEF, SSL_CONFIG_DEF
from kafpy.security.ssl_factory import SslFactory, SslMode, openssl_cipher_name


def server(**props: Any) -> SslFactory:
    return SslFactory(SslMode.SERVER, BROKER_SSL_CONFIG_DEF.parse(props), where="listener SSL")


def client(**props: Any) -> SslFactory:
    return SslFactory(SslMode.CLIENT, SSL_CONFIG_DEF.parse(props), where="the client")


def pem_server(pki: TestPki, **extra: Any) -> SslFactory:
    return server(**{"ssl.keystore.type": "PEM",
                     "ssl.keystore.location": str(pki.broker.keystore), **extra})  # fmt: skip


def pem_client(pki: TestPki, **extra: Any) -> SslFactory:
    return client(**{"ssl.truststore.type": "PEM",
                     "ssl.truststore.location": str(pki.ca_certificate), **extra})  # fmt: skip


def handshake(srv: SslFactory, cli: SslFactory, host: str = "localhost") -> KafkaPrincipal:
    """One TLS handshake over loopback; the principal the server names the client by."""

    async def main() -> KafkaPrincipal:
        seen: asyncio.Future[KafkaPrincipal] = asyncio.get_running_loop().create_future()

        async def on_client(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            seen.set_result(srv.peer_principal(w.get_extra_info("ssl_object")))
            w.close()

        s = await asyncio.start_server(on_client, "127.0.0.1", 0, ssl=srv.context)
        port = s.sockets[0].getsockname()[1]
        try:
            _, w = await asyncio.open_connection(
                "127.0.0.1", port, ssl=cli.context, server_hostname=host
            )
            principal = await asyncio.wait_for(seen, 10)
            w.close()
            return principal
        finally:
            s.close()

    return asyncio.run(main())


def test_pem_files_mutual_tls_principal(test_pki: TestPki) -> None:
    srv = pem_server(test_pki, **{"ssl.client.auth": "required", "ssl.truststore.type": "PEM",
                                  "ssl.truststore.location": str(test_pki.ca_certificate)})  # fmt: skip
    cli = pem_client(test_pki, **{"ssl.keystore.type": "PEM",
                                  "ssl.keystore.location": str(test_pki.client.keystore)})  # fmt: skip
    principal = handshake(srv, cli)
    assert str(principal) == "User:CN=alice,OU=clients,O=kafpy" == test_pki.client.principal


def test_inline_pem_key_store_and_trust_store(test_pki: TestPki) -> None:
    key = test_pki.broker.key.read_text().replace("\n", " ")  # one line, as in a .properties
    chain = test_pki.broker.certificate.read_text()
    srv = server(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": key,
                    "ssl.keystore.certificate.chain": chain})  # fmt: skip
    cli = client(**{"ssl.truststore.type": "PEM",
                    "ssl.truststore.certificates": test_pki.ca_certificate.read_text()})  # fmt: skip
    assert str(handshake(srv, cli)) == "User:ANONYMOUS"


def test_encrypted_key_needs_ssl_key_password(test_pki: TestPki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(test_pki.broker.key.read_bytes(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )  # fmt: skip
    store = tmp_path / "encrypted.pem"
    store.write_bytes(encrypted + test_pki.broker.certificate.read_bytes())
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(store)}
    handshake(server(**props, **{"ssl.key.password": "secret"}), pem_client(test_pki))
    with pytest.raises(InvalidConfigurationError, match=f"ssl.keystore.location {store}"):
        server(**props, **{"ssl.key.password": "wrong"})


def test_pkcs12_key_store_and_trust_store(test_pki: TestPki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(test_pki.broker.key.read_bytes(), None)
    from cryptography import x509

    certs = x509.load_pem_x509_certificates(test_pki.broker.certificate.read_bytes())
    p12 = pkcs12.serialize_key_and_certificates(
        b"broker", key, certs[0], certs[1:],  # type: ignore[arg-type]
        serialization.BestAvailableEncryption(b"store-pass"),
    )  # fmt: skip
    (tmp_path / "broker.p12").write_bytes(p12)
    srv = server(**{"ssl.keystore.type": "PKCS12", "ssl.keystore.password": "store-pass",
                    "ssl.keystore.location": str(tmp_path / "broker.p12")})  # fmt: skip
    trust = pkcs12.serialize_key_and_certificates(
        None, None, None, certs[1:], serialization.BestAvailableEncryption(b"trust-pass")
    )
    (tmp_path / "trust.p12").write_bytes(trust)
    cli = client(**{"ssl.truststore.type": "PKCS12", "ssl.truststore.password": "trust-pass",
                    "ssl.truststore.location": str(tmp_path / "trust.p12")})  # fmt: skip
    handshake(srv, cli)
    with pytest.raises(InvalidConfigurationError, match="check ssl.keystore.password"):
        server(**{"ssl.keystore.type": "PKCS12", "ssl.keystore.password": "nope",
                  "ssl.keystore.location": str(tmp_path / "broker.p12")})  # fmt: skip


def test_host_name_checked_unless_endpoint_identification_is_empty(test_pki: TestPki) -> None:
    srv = pem_server(test_pki)
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        handshake(srv, pem_client(test_pki), host="elsewhere.example")
    handshake(
        srv,
        pem_client(test_pki, **{"ssl.endpoint.identification.algorithm": ""}),
        host="elsewhere.example",
    )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.location": "/x.jks"}, "ssl.keystore.type=JKS for listener SSL cannot be read"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/missing.pem"},
         "ssl.keystore.location /missing.pem for listener SSL cannot be read: No such file"),
        ({}, "listener SSL uses TLS but has no key store"),
        ({"ssl.provider": "SunJSSE"}, "ssl.provider=SunJSSE for listener SSL cannot be honoured"),
        ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.3"}, "list versions without gaps"),
        ({"ssl.enabled.protocols": "SSLv3"}, "unknown SSLv3"),
        ({"ssl.endpoint.identification.algorithm": "ldaps"}, "kafpy knows https"),
        ({"ssl.cipher.suites": "TLS_FOO_WITH_BAR"}, "names TLS_FOO_WITH_BAR, which OpenSSL"),
        ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "cannot narrow TLS 1.3 suites"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "k"},
         "needs ssl.keystore.type=PEM and both"),
    ],
)  # fmt: skip
def test_refused_with_the_key_named(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=message):
        server(**props)


def test_cipher_suites_in_kafkas_names_narrow_tls12(test_pki: TestPki) -> None:
    suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
    assert openssl_cipher_name(suite) == "ECDHE-ECDSA-AES256-GCM-SHA384"
    assert openssl_cipher_name("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    srv = pem_server(test_pki, **{"ssl.cipher.suites": suite})
    assert srv.context.maximum_version == ssl.TLSVersion.TLSv1_2  # no TLS 1.3 suite listed
    tls12 = [c["name"] for c in srv.context.get_ciphers() if c["protocol"] != "TLSv1.3"]
    assert tls12 == ["ECDHE-ECDSA-AES256-GCM-SHA384"]
    handshake(srv, pem_client(test_pki))


def test_enabled_protocols_bound_the_versions(test_pki: TestPki) -> None:
    srv = pem_server(test_pki, **{"ssl.enabled.protocols": "TLSv1.3"})
    assert srv.context.minimum_version == srv.context.maximum_version == ssl.TLSVersion.TLSv1_3
    with pytest.raises((ssl.SSLError, ConnectionError)):
        handshake(srv, pem_client(test_pki, **{"ssl.enabled.protocols": "TLSv1.2"}))
