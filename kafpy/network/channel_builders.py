"""ChannelBuilders: the transport security of a broker's listeners and of its own
connections to other brokers, from its configuration (after Kafka's ChannelBuilders).

Server side: one SslFactory per listener whose protocol runs over TLS, from that listener's
`ssl.*` settings (`listener.name.<listener>.ssl.*` overriding `ssl.*`); a SASL_SSL listener
asks for client certificates only when its own `listener.name.<listener>.ssl.client.auth`
says so, the broker-wide `ssl.client.auth` being for SSL listeners alone. Client side: the
controller channel, the replica fetchers and controlled shutdown connect to the
inter-broker listener with its protocol and its `ssl.*` settings in client mode.
SASL listeners get their authenticator's settings (mechanisms, PLAIN's JAAS users, the
SCRAM credential cache, OAUTHBEARER's validator, GSSAPI's keys from the key table its JAAS
config names); the broker's own SASL login comes from the inter-broker listener's JAAS
config (for OAUTHBEARER, an unsecured token made from its `unsecuredLogin*` options; for
GSSAPI, its Krb5LoginModule keyTab and principal).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol, overload

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.common.config_def import parse_type
from kafpy.common.errors import InvalidConfigurationError
from kafpy.network.listener_name import TLS_SECURITY_PROTOCOLS, listener_config_prefix
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.delegation_token_cache import DelegationTokenCache
from kafpy.security.gssapi_server import GssapiServerConfig
from kafpy.security.jaas_config import PLAIN_LOGIN_MODULE, login_credentials, parse_jaas_config
from kafpy.security.jaas_config import plain_users as plain_users_of
from kafpy.security.kerberos_login import (
    GSSAPI,
    KRB5_LOGIN_MODULE,
    SERVICE_NAME_CONFIG,
    KerberosLogin,
)
from kafpy.security.kerberos_short_namer import PRINCIPAL_TO_LOCAL_RULES_CONFIG
from kafpy.security.oauthbearer import OAUTHBEARER, OAUTHBEARER_LOGIN_MODULE
from kafpy.security.oauthbearer_jwks import JWKS_VALIDATOR_CALLBACK_HANDLER
from kafpy.security.oauthbearer_unsecured import OAuthBearerUnsecuredLogin
from kafpy.security.plain import PLAIN
from kafpy.security.sasl_configs import (
    BROKER_SASL_CONFIG_DEF,
    SASL_SECURITY_PROTOCOLS,
    SERVER_CALLBACK_HANDLERS,
)
from kafpy.security.sasl_server_authenticator import OAuthBearerListenerConfig, SaslListenerConfig
from kafpy.security.ssl_factory import SslFactory, SslMode

_log = logging.getLogger("kafpy.network.ChannelBuilders")
SSL_CLIENT_AUTH = "ssl.client.auth"


class ListenerSecurityConfig(Protocol):
    """What the channel builders read of a broker's configuration (server/kafka_config.py's
    KafkaConfig provides it)."""

    originals: dict[str, object]

    @property
    def listeners(self) -> list[tuple[str, str, int]]: ...
    @property
    def inter_broker_listener_name(self) -> str: ...
    @property
    def sasl_mechanism_inter_broker_protocol(self) -> str: ...
    @property
    def connections_max_reauth_ms(self) -> int: ...
    def security_protocol(self, listener_name: str) -> str: ...
    def ssl_values(self, listener_name: str) -> dict[str, Any]: ...
    def sasl_enabled_mechanisms(self, listener_name: str) -> list[str]: ...
    def sasl_jaas_config(self, listener_name: str, mechanism: str) -> tuple[str, str] | None: ...
    def get(self, key: str) -> Any: ...
    def sasl_callback_class(
        self, listener_name: str, mechanism: str, key: str
    ) -> tuple[str, str] | None: ...


def listener_ssl_factories(config: ListenerSecurityConfig) -> dict[str, SslFactory]:
    """Listener name -> its TLS side, for each listener on SSL or SASL_SSL. Raises
    InvalidConfigurationError naming the listener and key when a store cannot be read."""
    factories = {}
    for name, _, _ in config.listeners:
        if config.security_protocol(name) not in TLS_SECURITY_PROTOCOLS:
            continue
        values = server_ssl_values(config, name)
        broker_wide = str(config.get(SSL_CLIENT_AUTH)).lower()
        if _client_auth_is_broker_wide(config, name) and broker_wide != "none":
            _log.warning(
                "Broker configuration '%s' is applied only to SSL listeners. Listener-prefixed "
                "configuration can be used to enable SSL client authentication for SASL_SSL "
                "listeners. In future releases, broker-wide option without listener prefix may "
                "be applied to SASL_SSL listeners as well. All configuration options intended "
                "for specific listeners should be listener-prefixed.",
                SSL_CLIENT_AUTH,
            )
        factories[name] = SslFactory(SslMode.SERVER, values, where=f"listener {name}")
    return factories


def server_ssl_values(config: ListenerSecurityConfig, listener_name: str) -> dict[str, Any]:
    """The `ssl.*` settings of a listener's server side. A SASL_SSL listener authenticates
    its clients with SASL, so it asks for their certificates only with its listener-prefixed
    `ssl.client.auth` (as Kafka 2.8's ChannelBuilders, which overrides it with `none`)."""
    values = config.ssl_values(listener_name)
    if _client_auth_is_broker_wide(config, listener_name):
        values[SSL_CLIENT_AUTH] = "none"
    return values


def _client_auth_is_broker_wide(config: ListenerSecurityConfig, listener_name: str) -> bool:
    """A SASL_SSL listener without its own `ssl.client.auth`."""
    own_key = listener_config_prefix(listener_name) + SSL_CLIENT_AUTH
    return config.security_protocol(listener_name) == "SASL_SSL" and own_key not in config.originals


def reconfigured_ssl_factories(
    config: ListenerSecurityConfig, current: Mapping[str, SslFactory]
) -> dict[str, SslFactory]:
    """The listeners whose TLS side must be replaced under `config` (KIP-226): those whose
    `ssl.*` settings changed or whose store files were modified in place, each with its new
    SslFactory, built and checked against the certificate served now. Raises
    InvalidConfigurationError (the old factories stay) when a new store does not load or
    its certificate is not compatible."""
    out: dict[str, SslFactory] = {}
    for name, _, _ in config.listeners:
        old = current.get(name)
        if old is None or config.security_protocol(name) not in TLS_SECURITY_PROTOCOLS:
            continue
        values = server_ssl_values(config, name)
        if not old.needs_rebuild(values):
            continue
        new = SslFactory(SslMode.SERVER, values, where=f"listener {name}")
        old.ensure_compatible(new)
        out[name] = new
    return out


def inter_broker_client_security(config: ListenerSecurityConfig) -> ClientSecurity:
    """How this broker connects to the others' inter-broker listener."""
    name = config.inter_broker_listener_name
    protocol = config.security_protocol(name)
    sasl = inter_broker_sasl_credentials(config)
    if protocol not in TLS_SECURITY_PROTOCOLS:
        return ClientSecurity(protocol, None, sasl)
    where = f"the inter-broker listener {name}"
    return ClientSecurity(
        protocol, SslFactory(SslMode.CLIENT, config.ssl_values(name), where=where), sasl
    )


def listener_sasl_configs(
    config: ListenerSecurityConfig,
    credential_cache: CredentialCache,
    token_cache: DelegationTokenCache | None = None,
) -> dict[str, SaslListenerConfig]:
    """Listener name -> what its SASL authenticator offers, for each SASL_PLAINTEXT and
    SASL_SSL listener. PLAIN needs the listener's JAAS users, GSSAPI its Krb5LoginModule
    keys; a listener enabling either without them is refused (Kafka would not start
    either)."""
    out: dict[str, SaslListenerConfig] = {}
    for name, _, _ in config.listeners:
        if config.security_protocol(name) not in SASL_SECURITY_PROTOCOLS:
            continue
        mechanisms = config.sasl_enabled_mechanisms(name)
        plain_users: dict[str, str] = {}
        if PLAIN in mechanisms:
            jaas = config.sasl_jaas_config(name, PLAIN)
            if jaas is None:
                raise InvalidConfigurationError(
                    f"Listener {name} enables SASL mechanism PLAIN but has no JAAS "
                    f"configuration: set {listener_config_prefix(name)}plain.sasl.jaas.config "
                    f"(or sasl.jaas.config) to {PLAIN_LOGIN_MODULE} required "
                    'user_<name>="<password>" ...;'
                )
            plain_users = plain_users_of(parse_jaas_config(jaas[1], key=jaas[0]))
        out[name] = SaslListenerConfig(
            name,
            mechanisms,
            plain_users,
            credential_cache,
            _max_reauth_ms(config, name),
            token_cache,
            _oauthbearer_config(config, name) if OAUTHBEARER in mechanisms else None,
            _gssapi_server_config(config, name) if GSSAPI in mechanisms else None,
            {
                mechanism: ms
                for mechanism in mechanisms
                if (ms := _max_reauth_ms(config, name, mechanism)) is not None
            },
        )
    return out


def _kerberos_login(
    config: ListenerSecurityConfig, listener_name: str, *, acceptor: bool
) -> KerberosLogin:
    """The broker's Kerberos login on a listener, from its GSSAPI JAAS config."""
    jaas = config.sasl_jaas_config(listener_name, GSSAPI)
    if jaas is None:
        raise InvalidConfigurationError(
            f"Listener {listener_name} uses SASL mechanism GSSAPI but has no JAAS configuration: "
            f"set {listener_config_prefix(listener_name)}gssapi.sasl.jaas.config (or "
            f"sasl.jaas.config) to {KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true "
            'keyTab="/path/kafka.keytab" principal="kafka/<host>@<REALM>";'
        )
    return KerberosLogin.from_jaas(
        parse_jaas_config(jaas[1], key=jaas[0]),
        key=jaas[0],
        configured_service_name=_listener_value(config, listener_name, SERVICE_NAME_CONFIG),
        acceptor=acceptor,
    )


def _listener_value(config: ListenerSecurityConfig, listener_name: str, key: str) -> Any:
    """`listener.name.<listener>.<key>`, else `<key>` (Kafka's listener prefix override),
    typed as `key` is."""
    raw = config.originals.get(f"{listener_config_prefix(listener_name)}{key}")
    if raw is None:
        return config.get(key)
    return parse_type(key, raw, BROKER_SASL_CONFIG_DEF.key(key).type)


def _gssapi_server_config(config: ListenerSecurityConfig, listener_name: str) -> GssapiServerConfig:
    rules = _listener_value(config, listener_name, PRINCIPAL_TO_LOCAL_RULES_CONFIG)
    return GssapiServerConfig.create(
        _kerberos_login(config, listener_name, acceptor=True),
        None if rules is None else [str(r) for r in rules],
        listener_name=listener_name,
    )


def _oauthbearer_entry(
    config: ListenerSecurityConfig, listener_name: str
) -> tuple[str, dict[str, str]]:
    """(key, options) of the listener's OAuthBearerLoginModule entry, which Kafka requires
    on an OAUTHBEARER listener (it holds the validator's and the broker's login options)."""
    jaas = config.sasl_jaas_config(listener_name, OAUTHBEARER)
    example = (
        f"{listener_config_prefix(listener_name)}oauthbearer.sasl.jaas.config="
        f'{OAUTHBEARER_LOGIN_MODULE} required unsecuredLoginStringClaim_sub="admin";'
    )
    if jaas is None:
        raise InvalidConfigurationError(
            f"Listener {listener_name} enables SASL mechanism OAUTHBEARER but has no JAAS "
            f"configuration for it: set {example}"
        )
    entries = parse_jaas_config(jaas[1], key=jaas[0])
    if len(entries) != 1 or entries[0].login_module != OAUTHBEARER_LOGIN_MODULE:
        raise InvalidConfigurationError(
            f"{jaas[0]} must hold exactly one {OAUTHBEARER_LOGIN_MODULE} entry for OAUTHBEARER "
            f"on listener {listener_name} (found {', '.join(e.login_module for e in entries)}); "
            f"e.g. {example}"
        )
    return jaas[0], entries[0].options


def _oauthbearer_config(
    config: ListenerSecurityConfig, listener_name: str
) -> OAuthBearerListenerConfig:
    key, options = _oauthbearer_entry(config, listener_name)
    found = config.sasl_callback_class(
        listener_name, OAUTHBEARER, "sasl.server.callback.handler.class"
    )
    handler = found[1] if found is not None else SERVER_CALLBACK_HANDLERS[OAUTHBEARER][0]
    return OAuthBearerListenerConfig(handler, tuple(sorted(options.items())), key)


@overload
def _max_reauth_ms(config: ListenerSecurityConfig, listener_name: str) -> int: ...
@overload
def _max_reauth_ms(
    config: ListenerSecurityConfig, listener_name: str, mechanism: str
) -> int | None: ...
def _max_reauth_ms(
    config: ListenerSecurityConfig, listener_name: str, mechanism: str | None = None
) -> int | None:
    """`listener.name.<listener>.connections.max.reauth.ms`, else `connections.max.reauth.ms`;
    with a mechanism, `listener.name.<listener>.<mechanism>.connections.max.reauth.ms` or
    None when that is not set."""
    infix = f"{mechanism.lower()}." if mechanism else ""
    key = f"{listener_config_prefix(listener_name)}{infix}connections.max.reauth.ms"
    raw = config.originals.get(key)
    if raw is None:
        return None if mechanism else config.connections_max_reauth_ms
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidConfigurationError(
            f"Invalid value {raw} for configuration {key}: it must be a number of "
            "milliseconds, at least 0 (0 disables re-authentication)"
        )
    return value


def inter_broker_sasl_credentials(config: ListenerSecurityConfig) -> SaslCredentials | None:
    """The mechanism and credentials this broker logs in with on the inter-broker listener
    (the `username`/`password` of that listener's JAAS config for the mechanism), or None
    when the inter-broker listener does not use SASL."""
    name = config.inter_broker_listener_name
    if config.security_protocol(name) not in SASL_SECURITY_PROTOCOLS:
        return None
    mechanism = config.sasl_mechanism_inter_broker_protocol
    if mechanism == GSSAPI:
        login = _kerberos_login(config, name, acceptor=False)
        return SaslCredentials(mechanism, login.principal or "", "", kerberos=login)
    if mechanism == OAUTHBEARER:
        key, options = _oauthbearer_entry(config, name)
        handler = config.sasl_callback_class(
            name, OAUTHBEARER, "sasl.server.callback.handler.class"
        )
        if handler is not None and handler[1] == JWKS_VALIDATOR_CALLBACK_HANDLER:
            raise InvalidConfigurationError(
                f"The inter-broker listener {name} validates OAUTHBEARER tokens with "
                f"{handler[1]} ({handler[0]}), which refuses the unsecured token a broker logs "
                "in with: set sasl.mechanism.inter.broker.protocol to another mechanism "
                "(SCRAM-SHA-512, PLAIN) or use another inter-broker listener"
            )
        return SaslCredentials(mechanism, oauthbearer=OAuthBearerUnsecuredLogin(options, key=key))
    jaas = config.sasl_jaas_config(name, mechanism)
    credentials = login_credentials(parse_jaas_config(jaas[1], key=jaas[0])) if jaas else None
    if credentials is None:
        raise InvalidConfigurationError(
            f"The inter-broker listener {name} uses SASL mechanism {mechanism}, but no JAAS "
            f"configuration gives this broker's username and password: set "
            f"{listener_config_prefix(name)}{mechanism.lower()}.sasl.jaas.config with "
            'username="..." password="..."'
        )
    return SaslCredentials(mechanism, credentials[0], credentials[1])
