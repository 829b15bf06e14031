"""Listener names (after Kafka's ListenerName): the prefix of a listener's own config
overrides and the security protocols whose connections run over TLS."""

from __future__ import annotations

TLS_SECURITY_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
"""The protocols whose connections run over TLS."""


def listener_config_prefix(listener_name: str) -> str:
    """`listener.name.<name in lower case>.`, the prefix of a listener's own overrides."""
    return f"listener.name.{listener_name.lower()}."
