"""PlainSaslServer: Kafka's answers for each way PLAIN can fail."""

from __future__ import annotations

import pytest

from kafpy.common.errors import SaslAuthenticationError
from kafpy.security.plain import PlainSaslServer, plain_client_message


def test_valid_user() -> None:
    server = PlainSaslServer({"alice": "alice-secret"})
    assert server.evaluate_response(plain_client_message("alice", "alice-secret")) == b""
    assert server.is_complete() and server.authorization_id == "alice"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password"),
        (b"\0\0pw", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"bob\0alice\0alice-secret", "different from username"),
        (b"alice-secret", "expected 3 tokens"),
    ],
)
def test_refused(message: bytes, error: str) -> None:
    server = PlainSaslServer({"alice": "alice-secret"})
    with pytest.raises(SaslAuthenticationError, match=error):
        server.evaluate_response(message)
    assert not server.is_complete()
