"""SASL/PLAIN (RFC 4616): the broker's PlainSaslServer and the client's message.

The client sends `authzid NUL username NUL password`; the broker checks the password
against the listener's JAAS users in constant time (an unknown user is compared against a
dummy so it costs the same) and answers Kafka's messages on failure.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from kafpy.common.errors import SaslAuthenticationError

PLAIN = "PLAIN"
_DUMMY = b"\0" * 64


class PlainSaslServer:
    """The broker's side of one PLAIN exchange (one message, an empty answer)."""

    mechanism_name = PLAIN
    token_authenticated = False
    credential_expiration_ms: int | None = None

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self.authorization_id = ""
        self._complete = False

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise SaslAuthenticationError("Unexpected PLAIN message: the exchange is over")
        parts = bytes(response).split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                "Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts))
            )
        authzid, username_b, password = parts
        try:
            username = username_b.decode()
            authz = authzid.decode()
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self.users.get(username)
        ok = hmac.compare_digest(password, expected.encode() if expected is not None else _DUMMY)
        if not ok or expected is None:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authz and authz != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.authorization_id = username
        self._complete = True
        return b""


def plain_client_message(username: str, password: str) -> bytes:
    """The one message a PLAIN client sends."""
    return b"\0" + username.encode() + b"\0" + password.encode()
