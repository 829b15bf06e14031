"""Kafka's SASL configuration keys (SaslConfigs and the broker's BrokerSecurityConfigs),
with Kafka's defaults, and the mechanisms kafpy can honour.

Kafka's default mechanism is GSSAPI (Kerberos); kafpy does not speak GSSAPI or
OAUTHBEARER, so a listener or client asking for them is refused at start-up by name,
never served with something weaker.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafpy.common.config_def import ConfigDef, ConfigType, Importance, Range
from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.plain import PLAIN
from kafpy.security.scram import ScramMechanism

SUPPORTED_SASL_MECHANISMS = (PLAIN, *ScramMechanism.names())
"""The SASL mechanisms kafpy serves and speaks."""

SASL_SECURITY_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})

MAX_RECEIVE_SIZE = 524288
"""The largest frame a connection may send before it has authenticated (Kafka's
SaslServerAuthenticator.MAX_RECEIVE_SIZE)."""

BROKER_SASL_CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define("sasl.enabled.mechanisms", ConfigType.LIST, "GSSAPI", None, Importance.MEDIUM,
            "The SASL mechanisms a SASL listener offers (kafpy: PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512); listener.name.<listener>.sasl.enabled.mechanisms overrides it.")
    .define("sasl.mechanism.inter.broker.protocol", ConfigType.STRING, "GSSAPI", None,
            Importance.MEDIUM, "The SASL mechanism brokers use with each other.")
    .define("sasl.jaas.config", ConfigType.PASSWORD, None, None, Importance.MEDIUM,
            "JAAS login configuration; per listener and mechanism as "
            "listener.name.<listener>.<mechanism>.sasl.jaas.config.")
    .define("connections.max.reauth.ms", ConfigType.LONG, 0, Range.at_least(0),
            Importance.MEDIUM,
            "When positive, the longest a SASL session lasts before the client must "
            "re-authenticate (KIP-368); 0 disables re-authentication.")
    # Kerberos (GSSAPI) and OAUTHBEARER login refresh: without effect in kafpy, which
    # enables neither mechanism on any listener, as in Kafka without them.
    .define("sasl.kerberos.service.name", ConfigType.STRING, None, None, Importance.MEDIUM,
            "Kerberos principal name Kafka runs as (no effect: kafpy has no GSSAPI).")
    .define("sasl.kerberos.kinit.cmd", ConfigType.STRING, "/usr/bin/kinit", None,
            Importance.LOW, "Kerberos kinit command path (no effect: kafpy has no GSSAPI).")
    .define("sasl.kerberos.ticket.renew.window.factor", ConfigType.DOUBLE, 0.8, None,
            Importance.LOW, "Kerberos ticket renewal point (no effect: kafpy has no GSSAPI).")
    .define("sasl.kerberos.ticket.renew.jitter", ConfigType.DOUBLE, 0.05, None,
            Importance.LOW, "Kerberos ticket renewal jitter (no effect: kafpy has no GSSAPI).")
    .define("sasl.kerberos.min.time.before.relogin", ConfigType.LONG, 60000, None,
            Importance.LOW, "Kerberos relogin sleep time (no effect: kafpy has no GSSAPI).")
    .define("sasl.kerberos.principal.to.local.rules", ConfigType.LIST, "DEFAULT", None,
            Importance.MEDIUM,
            "Kerberos principal to short name rules (no effect: kafpy has no GSSAPI).")
    .define("sasl.login.refresh.window.factor", ConfigType.DOUBLE, 0.8,
            Range.between(0.5, 1.0), Importance.LOW,
            "OAUTHBEARER login refresh point (no effect: kafpy has no OAUTHBEARER).")
    .define("sasl.login.refresh.window.jitter", ConfigType.DOUBLE, 0.05,
            Range.between(0.0, 0.25), Importance.LOW,
            "OAUTHBEARER login refresh jitter (no effect: kafpy has no OAUTHBEARER).")
    .define("sasl.login.refresh.min.period.seconds", ConfigType.SHORT, 60,
            Range.between(0, 900), Importance.LOW,
            "OAUTHBEARER least refresh wait (no effect: kafpy has no OAUTHBEARER).")
    .define("sasl.login.refresh.buffer.seconds", ConfigType.SHORT, 300,
            Range.between(0, 3600), Importance.LOW,
            "OAUTHBEARER refresh buffer (no effect: kafpy has no OAUTHBEARER).")
)  # fmt: skip
"""The broker's SASL keys."""

NO_EFFECT_SASL_CONFIGS = frozenset(
    key
    for key in BROKER_SASL_CONFIG_DEF.names()
    if key.startswith(("sasl.kerberos.", "sasl.login.refresh."))
)
"""SASL keys for mechanisms kafpy never enables (GSSAPI's Kerberos login, OAUTHBEARER's
login refresh): accepted, as Kafka accepts them on a broker without those mechanisms, and
without effect, as there."""


def ensure_sasl_mechanisms_supported(mechanisms: Iterable[str], key: str) -> None:
    """Refuse mechanisms kafpy cannot honour (GSSAPI, OAUTHBEARER, anything unknown),
    naming the key and what to use instead."""
    unsupported = [m for m in mechanisms if m not in SUPPORTED_SASL_MECHANISMS]
    if unsupported:
        raise InvalidConfigurationError(
            f"{key} names SASL mechanism(s) {', '.join(unsupported)}, which kafpy does not "
            f"support (supported: {', '.join(SUPPORTED_SASL_MECHANISMS)}). Set {key} to "
            "mechanisms from that list (Kafka's default is GSSAPI)."
        )
