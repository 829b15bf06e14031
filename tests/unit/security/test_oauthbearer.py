"""OAUTHBEARER's first message (RFC 7628's literal bytes), the broker's OAuthBearerSaslServer
(the error JSON as a challenge, then `\\x01` and the failure; the authorization id; the
extensions) and the client's side."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kafpy.common.errors import SaslAuthenticationError
from kafpy.common.time import MockTime
from kafpy.security.oauthbearer import (
    INVALID_CREDENTIALS,
    InvalidClientResponseError,
    OAuthBearerClientInitialResponse,
    OAuthBearerIllegalTokenError,
    OAuthBearerSaslClient,
    OAuthBearerSaslServer,
    OAuthBearerToken,
)

# RFC 7628 section 4.1's example, less its host and port (Kafka's message has none)
RFC_EXAMPLE = (
    b"n,a=user@example.com,\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01\x01"
)


def test_parse_kafka_first_message() -> None:
    first = OAuthBearerClientInitialResponse.parse(
        b"n,,\x01auth=Bearer abc.def.\x01traceId=123\x01\x01"
    )
    assert first == OAuthBearerClientInitialResponse("abc.def.", "", {"traceId": "123"})


def test_parse_authzid_and_case_insensitive_scheme() -> None:
    first = OAuthBearerClientInitialResponse.parse(b"n,a=alice,\x01auth=bEaReR  t-_.0\x01\x01")
    assert (first.token_value, first.authorization_id, first.extensions) == ("t-_.0", "alice", {})


def test_to_bytes_is_kafkas_layout() -> None:
    first = OAuthBearerClientInitialResponse("tok", "", {"a": "1", "b": "x y"})
    assert first.to_bytes() == b"n,,\x01auth=Bearer tok\x01a=1\x01b=x y\x01\x01"
    assert OAuthBearerClientInitialResponse("tok", "bob").to_bytes() == (
        b"n,a=bob,\x01auth=Bearer tok\x01\x01"
    )
    assert OAuthBearerClientInitialResponse.parse(first.to_bytes()) == first


@pytest.mark.parametrize(
    "message,why",
    [
        (b"y,,\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
        (b"n,,\x01auth=Bearer t\x01", "Invalid OAUTHBEARER client first message"),
        (b"n,a=a,b,\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
        (b"n,,\x01key=v\x01\x01", "'auth' not specified"),
        (b"n,,\x01auth=Bearer\x01\x01", "invalid 'auth' format"),
        (b"n,,\x01auth=Bearer a b\x01\x01", "invalid 'auth' format"),
        (b"n,,\x01auth=Basic dXNlcg\x01\x01", "Invalid scheme"),
        (b"n,,\x01auth=Bearer t\x01bad_key=v\x01\x01", "Invalid OAUTHBEARER client first"),
        (b"n,,\x01auth=Bearer t\x01k=\x00\x01\x01", "Invalid OAUTHBEARER client first"),
    ],
)
def test_parse_refuses(message: bytes, why: str) -> None:
    with pytest.raises(InvalidClientResponseError, match=why):
        OAuthBearerClientInitialResponse.parse(message)


def test_rfc_example_token_is_not_kafkas() -> None:
    # `=` may not appear in a Kafka token (its pattern is [-_.a-zA-Z0-9]+)
    with pytest.raises(InvalidClientResponseError, match="invalid 'auth' format"):
        OAuthBearerClientInitialResponse.parse(RFC_EXAMPLE)


@pytest.mark.parametrize("name", ["auth", "bad_name", "1"])
def test_client_extensions_validated(name: str) -> None:
    with pytest.raises(InvalidClientResponseError, match=f"Extension name {name} is invalid"):
        OAuthBearerClientInitialResponse("t", "", {name: "v"}).to_bytes()


def test_error_json_is_kafkas_text() -> None:
    assert OAuthBearerIllegalTokenError("x").json_error_response() == '{"status":"invalid_token"}'
    scoped = OAuthBearerIllegalTokenError("x", failure_scope="[a, b]")
    assert scoped.json_error_response() == '{"status":"insufficient_scope", "scope":"[a, b]"}'
    both = OAuthBearerIllegalTokenError("x", "[a]", "https://idp/.well-known")
    assert both.json_error_response() == (
        '{"status":"insufficient_scope", "scope":"[a]", '
        '"openid-configuration":"https://idp/.well-known"}'
    )


class FakeValidator:
    """Accepts tokens named in `tokens`; refuses the rest as invalid_token."""

    def __init__(self, refused_extensions: Mapping[str, str] | None = None) -> None:
        self.tokens = {"good": OAuthBearerToken("good", "alice", frozenset(), 90_000, 1_000)}
        self.refused_extensions = dict(refused_extensions or {})
        self.seen_now: list[int] = []

    def validate(self, token_value: str, now_ms: int) -> OAuthBearerToken:
        self.seen_now.append(now_ms)
        if token_value not in self.tokens:
            raise OAuthBearerIllegalTokenError("unknown token")
        return self.tokens[token_value]

    def invalid_extensions(
        self, token: OAuthBearerToken, extensions: Mapping[str, str]
    ) -> dict[str, str]:
        return {k: v for k, v in self.refused_extensions.items() if k in extensions}


def test_server_accepts_a_valid_token() -> None:
    validator = FakeValidator()
    server = OAuthBearerSaslServer(validator, MockTime(5_000))
    assert server.evaluate_response(b"n,,\x01auth=Bearer good\x01trace=1\x01\x01") == b""
    assert server.is_complete()
    assert server.authorization_id == "alice"
    assert server.credential_expiration_ms == 90_000
    assert server.extensions == {"trace": "1"}
    assert validator.seen_now == [5_000]


def test_server_answers_error_json_then_fails_on_ctrl_a() -> None:
    server = OAuthBearerSaslServer(FakeValidator())
    challenge = server.evaluate_response(b"n,,\x01auth=Bearer bad\x01\x01")
    assert challenge == b'{"status":"invalid_token"}'
    assert not server.is_complete()
    with pytest.raises(SaslAuthenticationError) as raised:
        server.evaluate_response(b"\x01")
    assert str(raised.value) == '{"status":"invalid_token"}'


def test_ctrl_a_without_an_error_is_a_bad_message() -> None:
    with pytest.raises(SaslAuthenticationError) as raised:
        OAuthBearerSaslServer(FakeValidator()).evaluate_response(b"\x01")
    assert str(raised.value) == INVALID_CREDENTIALS


def test_malformed_message_hides_the_cause() -> None:
    with pytest.raises(SaslAuthenticationError) as raised:
        OAuthBearerSaslServer(FakeValidator()).evaluate_response(b"n,,auth=Bearer good")
    assert str(raised.value) == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism OAUTHBEARER"
    )


def test_authzid_must_be_the_principal() -> None:
    server = OAuthBearerSaslServer(FakeValidator())
    assert server.evaluate_response(b"n,a=alice,\x01auth=Bearer good\x01\x01") == b""
    with pytest.raises(SaslAuthenticationError) as raised:
        OAuthBearerSaslServer(FakeValidator()).evaluate_response(
            b"n,a=bob,\x01auth=Bearer good\x01\x01"
        )
    assert str(raised.value) == (
        "Authentication failed: Client requested an authorization id (bob) that is different "
        "from the token's principal name (alice)"
    )


def test_refused_extensions_fail_with_kafkas_message() -> None:
    server = OAuthBearerSaslServer(FakeValidator({"a": "nope", "b": "also"}))
    with pytest.raises(SaslAuthenticationError) as raised:
        server.evaluate_response(b"n,,\x01auth=Bearer good\x01a=1\x01b=2\x01\x01")
    assert str(raised.value) == (
        "Authentication failed: 2 extensions are invalid! They are: a: nope; b: also"
    )


def test_client_answers_error_with_ctrl_a() -> None:
    client = OAuthBearerSaslClient(OAuthBearerClientInitialResponse("tok"))
    assert client.first_message() == b"n,,\x01auth=Bearer tok\x01\x01"
    assert client.evaluate_challenge(b'{"status":"invalid_token"}') == b"\x01"
    assert client.error == '{"status":"invalid_token"}' and not client.is_complete()
    assert client.evaluate_challenge(b"") == b"" and client.is_complete()
