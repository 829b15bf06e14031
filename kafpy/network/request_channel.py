"""Request: one decoded request as the socket server hands it to the request handler.

Kafka's RequestChannel carries requests from network threads to handler threads; in
kafpy both sides run on one event loop, so what is left is the value passed between
them, the handler's interface, and the way a handler asks for the connection to close.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafpy.protocol.headers import RequestHeader
from kafpy.security.kafka_principal import ANONYMOUS, KafkaPrincipal

ResponseParts = Sequence[bytes | bytearray | memoryview]


@dataclass(slots=True)
class Request:
    """A request received on a connection.

    header: the decoded request header. body: the decoded body, or None when the broker
    does not serve this API key and version (the handler answers or closes).
    frame: the request bytes after the size prefix (the body's record fields are views
    into it). size: len(frame). receive_time_ms: when the last byte arrived.
    connection_id: `local-remote-n` as Kafka names connections. client_address: (host, port).
    listener_name: the listener the connection came in on (Metadata answers with its endpoints).
    security_protocol: that listener's protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    principal: who the connection authenticated as (User:ANONYMOUS when it did not).
    """

    header: RequestHeader
    body: dict[str, Any] | None
    frame: memoryview
    size: int
    receive_time_ms: int
    connection_id: str
    client_address: tuple[str, int]
    listener_name: str
    context: dict[str, Any] = field(default_factory=dict)
    security_protocol: str = "PLAINTEXT"
    principal: KafkaPrincipal = ANONYMOUS

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version

    def describe(self) -> str:
        return (
            f"{{api_key={self.header.api_key}, api_version={self.header.api_version}, "
            f"correlation_id={self.header.correlation_id}, client_id={self.header.client_id}}} "
            f"from connection {self.connection_id}"
        )


class CloseConnection(Exception):  # noqa: N818 - a request, not an error
    """Raised by a handler to close the request's connection without answering; the
    message says why and goes to the broker's log."""


class RequestHandler(Protocol):
    """What the socket server calls for each request (KafkaApis)."""

    async def handle(self, request: Request) -> ResponseParts | None:
        """The response frame (size prefix included) as parts, or None for no response."""
        ...


class RequestMetrics(Protocol):
    """Where the socket server reports each request done (the broker's RequestMetrics)."""

    def record(self, api_key: int, from_follower: bool, queue_ms: float, total_ms: float) -> None:
        """One request done: its time queued and its total time, in milliseconds."""
        ...
