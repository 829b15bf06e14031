"""ClientSecurity: how kafpy's client secures its connections (`security.protocol` and
the `ssl.*` keys of Kafka's clients), read from client properties.

PLAINTEXT and SSL are served; SASL_PLAINTEXT and SASL_SSL are refused until kafpy's client
speaks SASL, so that a client never connects with less protection than it was asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.ssl_configs import SSL_CONFIG_DEF
from kafpy.security.ssl_factory import SslFactory, SslMode

CLIENT_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL")
"""The `security.protocol` values kafpy's client can honour."""


@dataclass(frozen=True)
class ClientSecurity:
    """A client's transport security: the protocol and, for SSL, its TLS context."""

    security_protocol: str = "PLAINTEXT"
    ssl: SslFactory | None = None

    @classmethod
    def from_config(cls, props: Mapping[str, object], *, source: str) -> ClientSecurity:
        """From Kafka client properties (`security.protocol`, `ssl.*`); `source` names where
        they came from in messages. Raises InvalidConfigurationError for what kafpy cannot
        honour or read."""
        protocol = str(props.get("security.protocol", "PLAINTEXT")).strip().upper()
        if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise InvalidConfigurationError(
                f"Invalid value {props.get('security.protocol')} for configuration "
                f"security.protocol in {source}: it must be PLAINTEXT, SSL, SASL_PLAINTEXT or "
                "SASL_SSL"
            )
        if protocol not in CLIENT_SECURITY_PROTOCOLS:
            raise InvalidConfigurationError(
                f"security.protocol={protocol} in {source} cannot be honoured: kafpy's client "
                "does not speak SASL yet (it speaks PLAINTEXT and SSL)."
            )
        if protocol == "PLAINTEXT":
            return cls(protocol)
        ssl_props = {k: v for k, v in props.items() if k in SSL_CONFIG_DEF}
        values = SSL_CONFIG_DEF.parse(ssl_props)
        return cls(protocol, SslFactory(SslMode.CLIENT, values, where=source))

    @property
    def uses_tls(self) -> bool:
        return self.ssl is not None
