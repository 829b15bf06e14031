"""Sanitizer: user and client ids as ZooKeeper node names, encoded as Kafka's Sanitizer
encodes them (URL encoding with `%20` for a space, `%2A` for `*`, `~` kept), so
`/config/users/<sanitized name>` is the node Kafka would use."""

from __future__ import annotations

from urllib.parse import quote, unquote


def sanitize(name: str) -> str:
    """The node name of a user or client id."""
    return quote(name, safe="-_.*~").replace("*", "%2A")


def desanitize(name: str) -> str:
    """The user or client id of a node name."""
    return unquote(name)
