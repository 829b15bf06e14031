"""make_test_pki: a CA, a broker certificate for the given hosts, client certificates."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509

from kafpy.security.local_pki import make_test_pki


def test_certificates_and_names(tmp_path: Path) -> None:
    pki = make_test_pki(tmp_path / "pki", hosts=("localhost", "127.0.0.1"), client_name="bob")
    broker = x509.load_pem_x509_certificates(pki.broker.certificate.read_bytes())
    ca = x509.load_pem_x509_certificate(pki.ca_certificate.read_bytes())
    assert [c.issuer for c in broker] == [ca.subject, ca.subject]  # leaf, then the CA
    san = broker[0].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert pki.client.principal == "User:CN=bob,OU=clients,O=kafpy"
    assert b"PRIVATE KEY" in pki.broker.keystore.read_bytes()
    assert pki.broker.key.stat().st_mode & 0o077 == 0
