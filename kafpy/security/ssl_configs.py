"""Kafka's `ssl.*` configuration keys (SslConfigs and the broker's BrokerSecurityConfigs),
with Kafka's defaults, declared once for the broker (per listener) and kafpy's client.

kafpy reads keystores and truststores of type PEM (files or inline, as Kafka 2.7+) and
PKCS12; JKS, Kafka's default type, cannot be read from Python and is refused by name.
"""

from __future__ import annotations

from kafpy.common.config_def import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
)

SSL_CLIENT_AUTH_VALUES = ("required", "requested", "none")


def _ssl_config_def() -> ConfigDef:
    t, h, m, lo = ConfigType, Importance.HIGH, Importance.MEDIUM, Importance.LOW
    return (
        ConfigDef()
        .define("ssl.protocol", t.STRING, "TLSv1.3", None, m,
                "The TLS protocol of the context (kafpy negotiates within ssl.enabled.protocols).")
        .define("ssl.provider", t.STRING, None, None, m, "Not supported by kafpy (Java providers).")
        .define("ssl.cipher.suites", t.LIST, None, None, lo,
                "Cipher suites allowed, IANA names as Kafka takes them (default: OpenSSL's).")
        .define("ssl.enabled.protocols", t.LIST, "TLSv1.2,TLSv1.3", None, m,
                "The TLS versions allowed.")
        .define("ssl.keystore.type", t.STRING, "JKS", None, m,
                "The key store format: PEM or PKCS12 (JKS is refused).")
        .define("ssl.keystore.location", t.STRING, None, None, h,
                "The key store file (PEM: private key and certificate chain in one file).")
        .define("ssl.keystore.password", t.PASSWORD, None, None, h,
                "The PKCS12 key store's password.")
        .define("ssl.key.password", t.PASSWORD, None, None, h,
                "The password of the private key (an encrypted PEM key).")
        .define("ssl.keystore.key", t.PASSWORD, None, None, h,
                "A PEM private key given inline (ssl.keystore.type=PEM).")
        .define("ssl.keystore.certificate.chain", t.PASSWORD, None, None, h,
                "A PEM certificate chain given inline (ssl.keystore.type=PEM).")
        .define("ssl.truststore.type", t.STRING, "JKS", None, m,
                "The trust store format: PEM or PKCS12 (JKS is refused).")
        .define("ssl.truststore.location", t.STRING, None, None, h,
                "The trust store file (PEM: the trusted CA certificates).")
        .define("ssl.truststore.password", t.PASSWORD, None, None, h,
                "The PKCS12 trust store's password.")
        .define("ssl.truststore.certificates", t.PASSWORD, None, None, h,
                "Trusted PEM certificates given inline (ssl.truststore.type=PEM).")
        .define("ssl.keymanager.algorithm", t.STRING, "SunX509", None, lo,
                "Java's key manager algorithm; no meaning for kafpy.")
        .define("ssl.trustmanager.algorithm", t.STRING, "PKIX", None, lo,
                "Java's trust manager algorithm; kafpy always verifies PKIX chains.")
        .define("ssl.endpoint.identification.algorithm", t.STRING, "https", None, lo,
                "https: clients check the server's host name against its certificate; empty: not.")
        .define("ssl.secure.random.implementation", t.STRING, None, None, lo,
                "Java's SecureRandom implementation; kafpy uses OpenSSL's generator.")
        .define("ssl.engine.factory.class", t.CLASS, None, None, lo,
                "Not supported by kafpy (a Java class).")
    )  # fmt: skip


SSL_CONFIG_DEF: ConfigDef = _ssl_config_def()
"""The `ssl.*` keys clients and brokers share."""

BROKER_SSL_CONFIG_DEF: ConfigDef = (
    ConfigDef(SSL_CONFIG_DEF.config_keys)
    .define("ssl.client.auth", ConfigType.STRING, "none",
            CaseInsensitiveValidString(*SSL_CLIENT_AUTH_VALUES), Importance.MEDIUM,
            "Whether the broker asks clients for a certificate: required, requested or none.")
    .define("ssl.principal.mapping.rules", ConfigType.STRING, "DEFAULT", None, Importance.LOW,
            "Rules mapping a client certificate's distinguished name to a principal name.")
)  # fmt: skip
"""The `ssl.*` keys of a broker (each may be overridden per listener as
`listener.name.<listener>.ssl.*`)."""
