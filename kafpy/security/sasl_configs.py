"""Kafka's SASL configuration keys (SaslConfigs and the broker's BrokerSecurityConfigs),
with Kafka's defaults, and the mechanisms kafpy can honour.

GSSAPI (Kerberos, Kafka's default mechanism) needs python-gssapi, the `kerberos` extra; a
listener or client asking for it without the extra is refused at start-up by name, never
served with something weaker. Kafka names its SASL callbacks by Java class
(`listener.name.<listener>.<mechanism>.sasl.server.callback.handler.class`,
`sasl.login.callback.handler.class`, `sasl.login.class`): kafpy accepts Kafka's own
defaults and, for OAUTHBEARER's server side, its JWKS validator (a kafpy extension), and
refuses any other class by name.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafpy.common.config_def import ConfigDef, ConfigType, Importance, Range
from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.kerberos_login import GSSAPI, require_kerberos_extra
from kafpy.security.oauthbearer import OAUTHBEARER
from kafpy.security.oauthbearer_jwks import JWKS_VALIDATOR_CALLBACK_HANDLER
from kafpy.security.oauthbearer_unsecured import (
    UNSECURED_LOGIN_CALLBACK_HANDLER,
    UNSECURED_VALIDATOR_CALLBACK_HANDLER,
)
from kafpy.security.plain import PLAIN
from kafpy.security.scram import ScramMechanism

SUPPORTED_SASL_MECHANISMS = (GSSAPI, PLAIN, *ScramMechanism.names(), OAUTHBEARER)
"""The SASL mechanisms kafpy serves and speaks."""

SASL_SECURITY_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})

MAX_RECEIVE_SIZE = 524288
"""The largest frame a connection may send before it has authenticated (Kafka's
SaslServerAuthenticator.MAX_RECEIVE_SIZE)."""

BROKER_SASL_CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define("sasl.enabled.mechanisms", ConfigType.LIST, "GSSAPI", None, Importance.MEDIUM,
            "The SASL mechanisms a SASL listener offers (kafpy: GSSAPI, PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER); listener.name.<listener>.sasl.enabled.mechanisms overrides it.")
    .define("sasl.mechanism.inter.broker.protocol", ConfigType.STRING, "GSSAPI", None,
            Importance.MEDIUM, "The SASL mechanism brokers use with each other.")
    .define("sasl.jaas.config", ConfigType.PASSWORD, None, None, Importance.MEDIUM,
            "JAAS login configuration; per listener and mechanism as "
            "listener.name.<listener>.<mechanism>.sasl.jaas.config.")
    .define("connections.max.reauth.ms", ConfigType.LONG, 0, Range.at_least(0),
            Importance.MEDIUM,
            "When positive, the longest a SASL session lasts before the client must "
            "re-authenticate (KIP-368); 0 disables re-authentication.")
    .define("sasl.server.callback.handler.class", ConfigType.CLASS, None, None,
            Importance.MEDIUM,
            "A listener's server callback for a mechanism, set as listener.name.<listener>."
            "<mechanism>.sasl.server.callback.handler.class (unprefixed it has no effect, as "
            "in Kafka). kafpy takes Kafka's unsecured OAUTHBEARER validator and its own "
            f"{JWKS_VALIDATOR_CALLBACK_HANDLER}; any other class is refused.")
    .define("sasl.login.callback.handler.class", ConfigType.CLASS, None, None,
            Importance.MEDIUM,
            "The callback the broker's own SASL login uses; kafpy takes only Kafka's unsecured "
            "OAUTHBEARER login handler.")
    .define("sasl.login.class", ConfigType.CLASS, None, None, Importance.MEDIUM,
            "The broker's own SASL login class; kafpy takes only Kafka's defaults.")
    # Kerberos (GSSAPI): the service name and the short-name rules apply; the kinit and
    # renew keys are accepted without effect, as MIT Kerberos renews a keytab login itself.
    # OAUTHBEARER's login refresh: without effect, as kafpy's login makes a new token for
    # each authentication, so none grows old.
    .define("sasl.kerberos.service.name", ConfigType.STRING, None, None, Importance.MEDIUM,
            "The Kerberos service name of the brokers' principals (kafka in "
            "kafka/host@REALM); JAAS's serviceName option may give it instead.")
    .define("sasl.kerberos.kinit.cmd", ConfigType.STRING, "/usr/bin/kinit", None,
            Importance.LOW, "Kerberos kinit command path (no effect: kafpy renews through "
            "the Kerberos library, never runs kinit).")
    .define("sasl.kerberos.ticket.renew.window.factor", ConfigType.DOUBLE, 0.8, None,
            Importance.LOW, "Kerberos ticket renewal point (no effect: the Kerberos library "
            "gets a new ticket from the keytab when the old one expires).")
    .define("sasl.kerberos.ticket.renew.jitter", ConfigType.DOUBLE, 0.05, None,
            Importance.LOW, "Kerberos ticket renewal jitter (no effect, as the window).")
    .define("sasl.kerberos.min.time.before.relogin", ConfigType.LONG, 60000, None,
            Importance.LOW, "Kerberos relogin sleep time (no effect, as the window).")
    .define("sasl.kerberos.principal.to.local.rules", ConfigType.LIST, "DEFAULT", None,
            Importance.MEDIUM,
            "Rules mapping a Kerberos principal to the short name of its KafkaPrincipal "
            "(DEFAULT: the first component, for the default realm).")
    .define("sasl.login.refresh.window.factor", ConfigType.DOUBLE, 0.8,
            Range.between(0.5, 1.0), Importance.LOW,
            "OAUTHBEARER login refresh point (no effect: kafpy makes a token per login).")
    .define("sasl.login.refresh.window.jitter", ConfigType.DOUBLE, 0.05,
            Range.between(0.0, 0.25), Importance.LOW,
            "OAUTHBEARER login refresh jitter (no effect: kafpy makes a token per login).")
    .define("sasl.login.refresh.min.period.seconds", ConfigType.SHORT, 60,
            Range.between(0, 900), Importance.LOW,
            "OAUTHBEARER least refresh wait (no effect: kafpy makes a token per login).")
    .define("sasl.login.refresh.buffer.seconds", ConfigType.SHORT, 300,
            Range.between(0, 3600), Importance.LOW,
            "OAUTHBEARER refresh buffer (no effect: kafpy makes a token per login).")
)  # fmt: skip
"""The broker's SASL keys."""

NO_EFFECT_SASL_CONFIGS = frozenset(
    key
    for key in BROKER_SASL_CONFIG_DEF.names()
    if key.startswith(("sasl.kerberos.", "sasl.login.refresh."))
)
"""The Kerberos (GSSAPI) and OAUTHBEARER login keys, accepted per listener as Kafka accepts
them: the Kerberos service name and short-name rules apply to GSSAPI listeners; the
kinit and renew keys have no effect (MIT Kerberos renews a keytab login itself), nor do
OAUTHBEARER's refresh keys (kafpy's login makes a new token for each authentication)."""


def ensure_sasl_mechanisms_supported(mechanisms: Iterable[str], key: str) -> None:
    """Refuse mechanisms kafpy cannot honour (anything unknown, GSSAPI without the
    `kerberos` extra), naming the key and what to use instead."""
    mechanisms = list(mechanisms)
    unsupported = [m for m in mechanisms if m not in SUPPORTED_SASL_MECHANISMS]
    if unsupported:
        raise InvalidConfigurationError(
            f"{key} names SASL mechanism(s) {', '.join(unsupported)}, which kafpy does not "
            f"support (supported: {', '.join(SUPPORTED_SASL_MECHANISMS)}). Set {key} to "
            "mechanisms from that list (Kafka's default is GSSAPI)."
        )
    if GSSAPI in mechanisms:
        require_kerberos_extra(f"SASL mechanism GSSAPI ({key})")


_SCRAM_SERVER_CALLBACK_HANDLER = (
    "org.apache.kafka.common.security.scram.internals.ScramServerCallbackHandler"
)
SERVER_CALLBACK_HANDLERS: dict[str, tuple[str, ...]] = {
    GSSAPI: ("org.apache.kafka.common.security.authenticator.SaslServerCallbackHandler",),
    PLAIN: ("org.apache.kafka.common.security.plain.internals.PlainServerCallbackHandler",),
    **{name: (_SCRAM_SERVER_CALLBACK_HANDLER,) for name in ScramMechanism.names()},
    OAUTHBEARER: (UNSECURED_VALIDATOR_CALLBACK_HANDLER, JWKS_VALIDATOR_CALLBACK_HANDLER),
}
"""Mechanism -> the server callback handler classes kafpy has: Kafka's default for it
first, then for OAUTHBEARER kafpy's JWKS validator."""

LOGIN_CLASSES: dict[str, tuple[str, ...]] = {
    "sasl.login.callback.handler.class": (UNSECURED_LOGIN_CALLBACK_HANDLER,),
    "sasl.login.class": (
        "org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerRefreshingLogin",
        "org.apache.kafka.common.security.authenticator.DefaultLogin",
        "org.apache.kafka.common.security.kerberos.KerberosLogin",
    ),
}
"""Login key -> the Kafka classes kafpy does the work of (its defaults)."""


def ensure_callback_class_supported(
    key: str, value: str | None, mechanism: str | None, *, where: str
) -> None:
    """Refuse a Java class kafpy cannot run, by name: a server callback handler other than
    the mechanism's known ones, a login class or login callback other than Kafka's
    defaults. `key` is the base key, `where` the key as set."""
    if value is None or not str(value).strip():
        return
    name = str(value).strip()
    if key == "sasl.server.callback.handler.class":
        known = SERVER_CALLBACK_HANDLERS.get(mechanism or "", ())
    else:
        known = LOGIN_CLASSES[key]
    if name in known:
        return
    raise InvalidConfigurationError(
        f"{where} names the Java class {name}, which kafpy cannot run (kafpy has: "
        f"{', '.join(known)}). Remove it or name one of those classes."
    )
