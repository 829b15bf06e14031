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
)  # fmt: skip
"""The broker's SASL keys."""


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
