"""ChannelBuilders: the transport security of a broker's listeners and of its own
connections to other brokers, from its configuration (after Kafka's ChannelBuilders).

Server side: one SslFactory per listener whose protocol runs over TLS, from that listener's
`ssl.*` settings (`listener.name.<listener>.ssl.*` overriding `ssl.*`). Client side: the
controller channel, the replica fetchers and controlled shutdown connect to the
inter-broker listener with its protocol and its `ssl.*` settings in client mode.
"""

from __future__ import annotations

from kafpy.client.client_security import ClientSecurity
from kafpy.security.ssl_factory import SslFactory, SslMode
from kafpy.server.kafka_config import TLS_SECURITY_PROTOCOLS, KafkaConfig


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
    if protocol not in TLS_SECURITY_PROTOCOLS:
        return ClientSecurity(protocol)
    where = f"the inter-broker listener {name}"
    return ClientSecurity(
        protocol, SslFactory(SslMode.CLIENT, config.ssl_values(name), where=where)
    )
