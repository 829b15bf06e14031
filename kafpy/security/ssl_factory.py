"""SslFactory: the TLS context of a listener (server mode) or of a client connection
(client mode), built from Kafka's `ssl.*` keys with Python's `ssl` module.

Key stores: `ssl.keystore.type=PEM` with `ssl.keystore.location` (one file holding the
private key and the certificate chain) or `ssl.keystore.certificate.chain` and
`ssl.keystore.key` inline, the key decrypted with `ssl.key.password`; or PKCS12 with
`ssl.keystore.password`. Trust stores: PEM (`ssl.truststore.location` or
`ssl.truststore.certificates`) or PKCS12. JKS and anything else kafpy cannot honour
(a Java-only provider, a protocol or cipher suite OpenSSL lacks) is refused with an
InvalidConfigurationError naming the key, never served weaker.

In server mode the factory also names the peer: `User:<RFC 2253 subject>` of a verified
client certificate, mapped by `ssl.principal.mapping.rules`; `User:ANONYMOUS` without one.

A listener's factory is replaced without a restart (KIP-226, Kafka's SslFactory.reconfigure)
when its settings change or its store files are modified in place (`needs_rebuild`); the
replacement must present a certificate compatible with the old one (`ensure_compatible`:
the same subject DN, at least the old SubjectAltNames), as Kafka's CertificateEntries check.

Certificates are read with the cryptography library, which `kafpy[crypto]` installs: a
listener's factory (peer subjects, the compatibility check) and PKCS12 stores or inline PEM
keys on either side need it, and are refused naming the extra without it. A client with PEM
store files needs only Python's `ssl`.
"""

from __future__ import annotations

import enum
import os
import re
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.security.kafka_principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from kafpy.security.ssl_principal_mapper import SslPrincipalMapper

_TLS_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_TLS_ORDER = list(_TLS_VERSIONS)
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
_READABLE_STORE_TYPES = ("PEM", "PKCS12")


class SslMode(enum.Enum):
    """Which side of the handshake a context is for (Kafka's Mode)."""

    SERVER = "server"
    CLIENT = "client"


class SslFactory:
    """The TLS context of one listener or one client, and (server side) who a peer is.

    values: the parsed `ssl.*` keys (ssl_configs.SSL_CONFIG_DEF, BROKER_SSL_CONFIG_DEF for
    a broker, the listener's overrides applied). where: names the owner in error messages
    ("listener SSL", "the client").
    """

    def __init__(self, mode: SslMode, values: Mapping[str, Any], *, where: str) -> None:
        self.mode = mode
        self.where = where
        self._values = values
        if mode is SslMode.SERVER:
            _require_crypto(f"TLS on {where}")
        _refuse_java_only(values, where)
        self.check_hostname = _endpoint_identification(values, where)
        self._store_mtimes = _store_mtimes(values)
        self.context = self._create_context()
        # a client's certificate is only presented, never compared
        self.certificate = _key_store_certificate(values, where) if mode is SslMode.SERVER else None
        self.principal_mapper = SslPrincipalMapper(values.get("ssl.principal.mapping.rules"))

    @property
    def values(self) -> Mapping[str, Any]:
        """The `ssl.*` settings this factory was built from."""
        return self._values

    def needs_rebuild(self, values: Mapping[str, Any]) -> bool:
        """Whether `values` differ from this factory's settings, or a key or trust store
        file it loaded was modified since (Kafka reloads a store file changed in place)."""
        return dict(values) != dict(self._values) or _store_mtimes(values) != self._store_mtimes

    def ensure_compatible(self, new: SslFactory) -> None:
        """Refuse a replacement whose certificate would break clients that verified this
        one: the subject DN must be the same and the SubjectAltNames a superset (Kafka's
        SslFactory.CertificateEntries.ensureCompatible, with its messages)."""
        if self.certificate is None or new.certificate is None:
            return
        old_entry, new_entry = (
            _CertificateEntry(self.certificate),
            _CertificateEntry(new.certificate),
        )
        if old_entry.subject != new_entry.subject:
            raise InvalidConfigurationError(
                f"Keystore DistinguishedName does not match:  existing={{alias={KEYSTORE_ALIAS}, "
                f"DN={old_entry.subject}}}, new={{alias={KEYSTORE_ALIAS}, DN={new_entry.subject}}}"
            )
        if not old_entry.alt_names <= new_entry.alt_names:
            raise InvalidConfigurationError(
                f"Keystore SubjectAltNames do not match:  existing={{alias={KEYSTORE_ALIAS}, "
                f"SAN={old_entry.sorted_alt_names()}}}, new={{alias={KEYSTORE_ALIAS}, "
                f"SAN={new_entry.sorted_alt_names()}}}"
            )

    def _create_context(self) -> ssl.SSLContext:
        v = self._values
        if self.mode is SslMode.SERVER:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.verify_mode = _CLIENT_AUTH[str(v.get("ssl.client.auth", "none")).lower()]
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = self.check_hostname
            ctx.verify_mode = ssl.CERT_REQUIRED
        _set_protocols(ctx, v, self.where)
        _set_cipher_suites(ctx, v, self.where)
        if not _load_key_store(ctx, v, self.where) and self.mode is SslMode.SERVER:
            raise InvalidConfigurationError(
                f"{self.where} uses TLS but has no key store: set ssl.keystore.type=PEM and "
                "ssl.keystore.location (a PEM file with the private key and certificate "
                "chain), or ssl.keystore.certificate.chain and ssl.keystore.key"
            )
        if not _load_trust_store(ctx, v, self.where):
            purpose = (
                ssl.Purpose.CLIENT_AUTH if self.mode is SslMode.SERVER else ssl.Purpose.SERVER_AUTH
            )
            ctx.load_default_certs(purpose)  # as Java falls back on its default trust store
        return ctx

    def peer_principal(self, ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> KafkaPrincipal:
        """`User:<mapped subject>` of the peer's verified certificate, `User:ANONYMOUS`
        without one. Raises NoMatchingRule when no mapping rule applies."""
        if ssl_object is None:
            return ANONYMOUS
        der = ssl_object.getpeercert(binary_form=True)
        if not der:
            return ANONYMOUS
        return KafkaPrincipal(USER_TYPE, self.principal_mapper.get_name(distinguished_name(der)))


KEYSTORE_ALIAS = "kafka"
"""The alias Kafka gives the entry of a PEM key store."""


def _require_crypto(what: str) -> None:
    try:
        require_extra("crypto", what)
    except MissingExtraError as e:
        raise InvalidConfigurationError(str(e)) from None


class _CertificateEntry:
    """The parts of a key store's certificate a replacement must keep."""

    def __init__(self, certificate: Any) -> None:
        from cryptography import x509

        self.subject: str = certificate.subject.rfc4514_string()
        try:
            san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            self.alt_names: frozenset[str] = frozenset(str(n.value) for n in san.value)
        except x509.ExtensionNotFound:
            self.alt_names = frozenset()

    def sorted_alt_names(self) -> str:
        return "[" + ", ".join(sorted(self.alt_names)) + "]"


def _store_mtimes(values: Mapping[str, Any]) -> tuple[float | None, ...]:
    out: list[float | None] = []
    for key in ("ssl.keystore.location", "ssl.truststore.location"):
        location = values.get(key)
        try:
            out.append(os.stat(str(location)).st_mtime if location else None)
        except OSError:
            out.append(None)
    return tuple(out)


def _key_store_certificate(values: Mapping[str, Any], where: str) -> Any:
    """The first (leaf) certificate of the key store, None without one. The store has
    loaded already, so its contents are known to be readable."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import pkcs12

    if values.get("ssl.keystore.certificate.chain"):
        return x509.load_pem_x509_certificates(
            _pem_text(str(values["ssl.keystore.certificate.chain"])).encode()
        )[0]
    if not values.get("ssl.keystore.location"):
        return None
    data = _read_file(values, "ssl.keystore.location", where)
    if _store_type(values, "ssl.keystore.type", where) == "PEM":
        return x509.load_pem_x509_certificates(
            b"".join(
                re.findall(
                    rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\s*", data, re.S
                )
            )
        )[0]
    password = values.get("ssl.keystore.password")
    return pkcs12.load_key_and_certificates(data, password.encode() if password else None)[1]


def distinguished_name(der_certificate: bytes) -> str:
    """The certificate's subject in RFC 2253 form, as Java's X500Principal.getName() writes it
    (`CN=alice,OU=eng,O=corp`: most specific first, no spaces)."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der_certificate).subject.rfc4514_string()


def _refuse_java_only(values: Mapping[str, Any], where: str) -> None:
    for key in ("ssl.provider", "ssl.engine.factory.class"):
        if values.get(key):
            raise InvalidConfigurationError(
                f"{key}={values[key]} for {where} cannot be honoured: kafpy's TLS is Python's "
                f"ssl module (OpenSSL), with no Java providers or engine factories. Remove {key}."
            )


def _endpoint_identification(values: Mapping[str, Any], where: str) -> bool:
    algorithm = (values.get("ssl.endpoint.identification.algorithm") or "").strip()
    if algorithm.lower() == "https":
        return True
    if algorithm == "":
        return False
    raise InvalidConfigurationError(
        f"Invalid value {algorithm} for configuration ssl.endpoint.identification.algorithm "
        f"({where}): kafpy knows https (check the host name) or empty (do not)"
    )


def _set_protocols(ctx: ssl.SSLContext, values: Mapping[str, Any], where: str) -> None:
    enabled = [p.strip() for p in values.get("ssl.enabled.protocols") or [] if p.strip()]
    unknown = [p for p in enabled if p not in _TLS_VERSIONS]
    if unknown or not enabled:
        raise InvalidConfigurationError(
            f"Invalid value {','.join(enabled)} for configuration ssl.enabled.protocols "
            f"({where}): {'unknown ' + ', '.join(unknown) if unknown else 'empty'}; "
            f"the versions kafpy can enable are {', '.join(_TLS_ORDER)}"
        )
    indexes = sorted(_TLS_ORDER.index(p) for p in set(enabled))
    if indexes != list(range(indexes[0], indexes[-1] + 1)):
        raise InvalidConfigurationError(
            f"Invalid value {','.join(enabled)} for configuration ssl.enabled.protocols "
            f"({where}): OpenSSL enables a range of TLS versions; list versions without gaps"
        )
    ctx.minimum_version = _TLS_VERSIONS[_TLS_ORDER[indexes[0]]]
    ctx.maximum_version = _TLS_VERSIONS[_TLS_ORDER[indexes[-1]]]


_IANA_KEY_EXCHANGE = {
    "ECDHE_ECDSA": "ECDHE-ECDSA-",
    "ECDHE_RSA": "ECDHE-RSA-",
    "DHE_RSA": "DHE-RSA-",
    "DHE_DSS": "DHE-DSS-",
    "RSA": "",
}


def openssl_cipher_name(iana: str) -> str:
    """OpenSSL's name of a TLS 1.2 suite named as Java and Kafka name it
    (`TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384` -> `ECDHE-RSA-AES256-GCM-SHA384`); a name
    that is not of that form is returned as it is (it may already be OpenSSL's)."""
    m = re.fullmatch(r"(?:TLS|SSL)_(\w+?)_WITH_(\w+)", iana)
    if m is None or m.group(1) not in _IANA_KEY_EXCHANGE:
        return iana
    cipher = m.group(2)
    cipher = re.sub(r"^(AES|CAMELLIA|ARIA)_(\d+)_", r"\1\2_", cipher)
    cipher = cipher.replace("_CBC_SHA", "_SHA").replace("_POLY1305_SHA256", "_POLY1305")
    return _IANA_KEY_EXCHANGE[m.group(1)] + cipher.replace("_", "-")


def _set_cipher_suites(ctx: ssl.SSLContext, values: Mapping[str, Any], where: str) -> None:
    suites = [s.strip() for s in values.get("ssl.cipher.suites") or [] if s.strip()]
    if not suites:
        return
    available = ctx.get_ciphers()
    tls13 = {c["name"] for c in available if c["protocol"] == "TLSv1.3"}
    tls12 = {c["name"] for c in available if c["protocol"] != "TLSv1.3"}
    wanted13 = [s for s in suites if s in tls13]
    named12 = [s for s in suites if s not in tls13]
    wanted12 = [openssl_cipher_name(s) for s in named12]
    unknown = [s for s, o in zip(named12, wanted12, strict=True) if o not in tls12]
    if unknown:
        raise InvalidConfigurationError(
            f"ssl.cipher.suites for {where} names {', '.join(unknown)}, which OpenSSL here "
            "does not offer; name TLS 1.2 suites as Kafka does (e.g. "
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384) or TLS 1.3 ones (e.g. TLS_AES_128_GCM_SHA256)"
        )
    # Python's ssl module cannot narrow TLS 1.3 suites: allow TLS 1.3 only when the list names
    # every one OpenSSL offers, and TLS 1.2 only when it names some TLS 1.2 suite.
    if wanted13 and set(wanted13) != tls13:
        raise InvalidConfigurationError(
            f"ssl.cipher.suites for {where} names only some TLS 1.3 suites "
            f"({', '.join(wanted13)}); kafpy cannot narrow TLS 1.3 suites: list all of "
            f"{', '.join(sorted(tls13))} or none of them (TLS 1.3 is then disabled)"
        )
    if wanted12:
        ctx.set_ciphers(":".join(wanted12))
    elif ctx.minimum_version < ssl.TLSVersion.TLSv1_3:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if not wanted13 and ctx.maximum_version > ssl.TLSVersion.TLSv1_2:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if ctx.minimum_version > ctx.maximum_version:
        raise InvalidConfigurationError(
            f"ssl.cipher.suites for {where} allows no version of ssl.enabled.protocols"
        )


def _store_type(values: Mapping[str, Any], key: str, where: str) -> str:
    store_type = str(values.get(key) or "JKS").strip().upper()
    if store_type not in _READABLE_STORE_TYPES:
        raise InvalidConfigurationError(
            f"{key}={store_type} for {where} cannot be read by kafpy (Python has no "
            f"{store_type} reader): convert the store to PEM (or PKCS12) and set "
            f"{key}=PEM (or PKCS12)"
        )
    return store_type


def _read_file(values: Mapping[str, Any], key: str, where: str) -> bytes:
    path = Path(str(values[key]))
    try:
        return path.read_bytes()
    except OSError as e:
        raise InvalidConfigurationError(
            f"{key} {path} for {where} cannot be read: {e.strerror or e}. Check the path."
        ) from None


@contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A file readable only by this process's user, removed after use: OpenSSL loads
    certificate chains and keys from files only."""
    fd, name = tempfile.mkstemp(prefix="kafpy-ssl-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield name
    finally:
        os.unlink(name)


def _load_key_store(ctx: ssl.SSLContext, values: Mapping[str, Any], where: str) -> bool:
    location = values.get("ssl.keystore.location")
    chain = values.get("ssl.keystore.certificate.chain")
    key = values.get("ssl.keystore.key")
    if not location and not chain and not key:
        return False
    store_type = _store_type(values, "ssl.keystore.type", where)
    key_password = values.get("ssl.key.password")
    if chain or key:
        if location:
            raise InvalidConfigurationError(
                f"ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key "
                f"are both set for {where}: set one key store"
            )
        if store_type != "PEM" or not chain or not key:
            raise InvalidConfigurationError(
                f"An inline key store for {where} needs ssl.keystore.type=PEM and both "
                "ssl.keystore.certificate.chain and ssl.keystore.key"
            )
        what = "ssl.keystore.certificate.chain/ssl.keystore.key"
        key_pem, key_password = _transient_encrypted_key(
            _pem_text(str(key)).encode(), key_password, what, where
        )
        pem = key_pem + f"\n{_pem_text(str(chain))}\n".encode()
    elif store_type == "PEM":
        if values.get("ssl.keystore.password"):
            raise InvalidConfigurationError(
                f"ssl.keystore.password is set for the PEM key store of {where}: a PEM key "
                "store has no password; put the private key's password in ssl.key.password"
            )
        _read_file(values, "ssl.keystore.location", where)  # readable, or named in an error
        _load_cert_chain(
            ctx, str(location), key_password, f"ssl.keystore.location {location}", where
        )
        return True
    else:
        pem, key_password = _pkcs12_key_store_pem(values, where)
        what = f"ssl.keystore.location {location}"
    # the key goes to OpenSSL through a private file, encrypted with a one-time password
    with _private_file(pem) as name:
        _load_cert_chain(ctx, name, key_password, what, where)
    return True


def _load_cert_chain(
    ctx: ssl.SSLContext, path: str, password: str | None, what: str, where: str
) -> None:
    def no_password() -> bytes:
        # OpenSSL would otherwise ask for the pass phrase on the terminal
        raise InvalidConfigurationError(
            f"The private key of {what} for {where} is encrypted and ssl.key.password is not set"
        )

    try:
        ctx.load_cert_chain(path, password=password or no_password)
    except (ssl.SSLError, ValueError, TypeError) as e:
        raise InvalidConfigurationError(
            f"The key store {what} for {where} does not load ({e}): it must hold a PEM "
            "private key (encrypted with ssl.key.password, if at all) and its certificate "
            "chain"
        ) from None


def _transient_encrypted_key(
    key_pem: bytes, password: str | None, what: str, where: str
) -> tuple[bytes, str]:
    """The key re-encrypted with a random one-time password (returned with it)."""
    _require_crypto(f"An inline PEM key ({what}) for {where}")
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(key_pem, password.encode() if password else None)
    except (ValueError, TypeError) as e:
        raise InvalidConfigurationError(
            f"The private key of {what} for {where} does not load ({e}): it must be a PEM "
            "private key, encrypted with ssl.key.password if at all"
        ) from None
    transient = os.urandom(16).hex()
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(transient.encode()),
    )
    return encrypted, transient


def _pkcs12_key_store_pem(values: Mapping[str, Any], where: str) -> tuple[bytes, str]:
    _require_crypto(f"The PKCS12 key store of {where}")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = _read_file(values, "ssl.keystore.location", where)
    password = values.get("ssl.keystore.password")
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None
        )
    except ValueError as e:
        raise InvalidConfigurationError(
            f"The PKCS12 key store {values['ssl.keystore.location']} for {where} does not "
            f"open ({e}): check ssl.keystore.password"
        ) from None
    if key is None or cert is None:
        raise InvalidConfigurationError(
            f"The PKCS12 key store {values['ssl.keystore.location']} for {where} holds no "
            "private key with a certificate"
        )
    transient = os.urandom(16).hex()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(transient.encode()),
    )
    for c in [cert, *(extra or [])]:
        pem += c.public_bytes(serialization.Encoding.PEM)
    return pem, transient


def _load_trust_store(ctx: ssl.SSLContext, values: Mapping[str, Any], where: str) -> bool:
    location = values.get("ssl.truststore.location")
    inline = values.get("ssl.truststore.certificates")
    if not location and not inline:
        return False
    store_type = _store_type(values, "ssl.truststore.type", where)
    if location and inline:
        raise InvalidConfigurationError(
            f"ssl.truststore.location and ssl.truststore.certificates are both set for "
            f"{where}: set one trust store"
        )
    if inline:
        if store_type != "PEM":
            raise InvalidConfigurationError(
                f"ssl.truststore.certificates for {where} needs ssl.truststore.type=PEM"
            )
        cadata, what = _pem_text(str(inline)), "ssl.truststore.certificates"
    elif store_type == "PEM":
        cadata = _read_file(values, "ssl.truststore.location", where).decode("ascii", "replace")
        what = f"ssl.truststore.location {location}"
    else:
        cadata, what = _pkcs12_trust_store_pem(values, where), f"ssl.truststore.location {location}"
    try:
        ctx.load_verify_locations(cadata=cadata)
    except (ssl.SSLError, ValueError) as e:
        raise InvalidConfigurationError(
            f"The trust store {what} for {where} does not load ({e}): it must hold PEM "
            "certificates (-----BEGIN CERTIFICATE-----)"
        ) from None
    return True


def _pkcs12_trust_store_pem(values: Mapping[str, Any], where: str) -> str:
    _require_crypto(f"The PKCS12 trust store of {where}")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = _read_file(values, "ssl.truststore.location", where)
    password = values.get("ssl.truststore.password")
    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError as e:
        raise InvalidConfigurationError(
            f"The PKCS12 trust store {values['ssl.truststore.location']} for {where} does "
            f"not open ({e}): check ssl.truststore.password"
        ) from None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.append(store.cert.certificate)
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _pem_text(value: str) -> str:
    """An inline PEM value as Kafka takes it: the base64 may be on one line (a properties
    file value), so the body is re-wrapped between its BEGIN and END lines."""
    out = []
    for m in re.finditer(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", value, re.S):
        body = "".join(m.group(2).split())
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        out.append(
            "\n".join([f"-----BEGIN {m.group(1)}-----", *lines, f"-----END {m.group(1)}-----"])
        )
    return "\n".join(out) if out else value
