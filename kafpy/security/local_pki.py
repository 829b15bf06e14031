"""make_test_pki: a throw-away certificate authority with broker and client certificates,
made with the `cryptography` package, for tests and local secure clusters.

Never for production: the keys are unencrypted (except where a password is asked for)
and the CA key sits next to the certificates.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class PemIdentity:
    """One certificate with its key, as files: `keystore` (key + chain, what Kafka's
    `ssl.keystore.type=PEM` reads), `key` and `certificate` apart (what librdkafka and
    kafka-python read); `distinguished_name` in RFC 2253 form."""

    keystore: Path
    key: Path
    certificate: Path
    distinguished_name: str

    @property
    def principal(self) -> str:
        return f"User:{self.distinguished_name}"


@dataclass(frozen=True)
class TestPki:
    """A CA (`ca_certificate`, the PEM trust store) and the identities it signed."""

    __test__ = False  # not a pytest test class

    directory: Path
    ca_certificate: Path
    broker: PemIdentity
    client: PemIdentity
    untrusted_client: PemIdentity  # signed by another CA


def _name(common_name: str, unit: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafpy"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


class _Ca:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(name, "ca")
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )

    def issue(
        self, directory: Path, stem: str, common_name: str, unit: str, hosts: Sequence[str]
    ) -> PemIdentity:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, unit))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        chain = cert_pem + self.cert.public_bytes(serialization.Encoding.PEM)
        return PemIdentity(
            keystore=_write(directory / f"{stem}.keystore.pem", key_pem + chain),
            key=_write(directory / f"{stem}.key.pem", key_pem),
            certificate=_write(directory / f"{stem}.cert.pem", chain),
            distinguished_name=cert.subject.rfc4514_string(),
        )


def make_test_pki(
    directory: Path,
    hosts: Sequence[str] = ("localhost", "127.0.0.1"),
    client_name: str = "alice",
) -> TestPki:
    """A CA in `directory` (created if missing) with a broker certificate valid for
    `hosts` and a client certificate `CN=<client_name>,OU=clients,O=kafpy`, plus a client
    certificate from an unrelated CA (for refusal tests)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _Ca("kafpy-test-ca")
    ca_path = _write(directory / "ca.pem", ca.cert.public_bytes(serialization.Encoding.PEM))
    return TestPki(
        directory=directory,
        ca_certificate=ca_path,
        broker=ca.issue(directory, "broker", "broker", "brokers", hosts),
        client=ca.issue(directory, "client", client_name, "clients", ()),
        untrusted_client=_Ca("other-ca").issue(directory, "untrusted", "mallory", "clients", ()),
    )
