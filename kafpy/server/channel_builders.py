"""ChannelBuilders: the transport security of a broker's listeners and of its own
connections to other brokers, from its configuration (after Kafka's ChannelBuilders).

Server side: one SslFactory per listener whose protocol runs over TLS, from that listener's
`ssl.*` settings (`listener.name.<listener>.ssl.*` overriding `ssl.*`). Client side: the
controller channel, the replica fetchers and controlled shutdown connect to the
inter-broker listener with its protocol and its `ssl.*` settings in client mode.
SASL listeners get their authenticator's settings (mechanisms, PLAIN's JAAS users, the
SCRAM credential cache); the broker's own SASL login comes from the inter-broker
listener's JAAS config.
"""

from __future__ import annotations

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.jaas_config import PLAIN_LOGIN_MODULE, login_credentials, parse_jaas_config
from kafpy.security.jaas_config import plain_users as plain_users_of
from kafpy.security.plain import PLAIN
from kafpy.security.sasl_configs import SASL_SECURITY_PROTOCOLS
from kafpy.security.sasl_server_authenticator import SaslListenerConfig
from kafpy.security.ssl_factory import SslFactory, SslMode
from kafpy.server.kafka_config import TLS_SECURITY_PROTOCOLS, KafkaConfig, listener_config_prefix


def listener_ssl_factories(config: KafkaConfig) -> dict[str, SslFactory]:
    """Listener name -> its TLS side, for each listener on SSL or SASL_SSL. Raises
    InvalidConfigurationError naming the listener and key when a store cannot be read."""
    return {
        name: SslFactory(SslMode.SERVER, config.ssl_values(name), where=f"listener {name}")
        for name, _, _ in config.listeners
        if config.security_protocol(name) in TLS_SECURITY_PROTOCOLS
    }


def inter_broker_client_security(config: KafkaConfig) -> ClientSecurity:
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
    config: KafkaConfig, credential_cache: CredentialCache
) -> dict[str, SaslListenerConfig]:
    """Listener name -> what its SASL authenticator offers, for each SASL_PLAINTEXT and
    SASL_SSL listener. PLAIN needs the listener's JAAS users; a listener enabling PLAIN
    without them is refused (Kafka would not start either)."""
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
            name, mechanisms, plain_users, credential_cache, config.connections_max_reauth_ms
        )
    return out


def inter_broker_sasl_credentials(config: KafkaConfig) -> SaslCredentials | None:
    """The mechanism and credentials this broker logs in with on the inter-broker listener
    (the `username`/`password` of that listener's JAAS config for the mechanism), or None
    when the inter-broker listener does not use SASL."""
    name = config.inter_broker_listener_name
    if config.security_protocol(name) not in SASL_SECURITY_PROTOCOLS:
        return None
    mechanism = config.sasl_mechanism_inter_broker_protocol
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
