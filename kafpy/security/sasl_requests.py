"""The broker's answers to SaslHandshake and SaslAuthenticate requests that reach request
handling: on a listener without SASL, or on a connection that has already authenticated
(the SaslServerAuthenticator takes them before that), as Kafka's KafkaApis answers them."""

from __future__ import annotations

from typing import Any, Protocol

from kafpy.common.errors import Errors


class _Request(Protocol):
    @property
    def security_protocol(self) -> str: ...


async def handle_sasl_handshake(request: _Request) -> dict[str, Any]:
    """ILLEGAL_SASL_STATE: there is no handshake to do here."""
    return {"error_code": Errors.ILLEGAL_SASL_STATE, "mechanisms": []}


async def handle_sasl_authenticate(request: _Request) -> dict[str, Any]:
    """ILLEGAL_SASL_STATE with Kafka's message."""
    return {
        "error_code": Errors.ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
    }
