"""SaslServerAuthenticator's states: handshake versions, failures, re-authentication and
session expiry (KIP-368)."""

from __future__ import annotations

from typing import Any

from kafpy.common.errors import Errors
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.security.delegation_token_cache import (
    DelegationToken,
    DelegationTokenCache,
    TokenInformation,
)
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.sasl_server_authenticator import (
    AuthenticationStep,
    SaslListenerConfig,
    SaslServerAuthenticator,
)
from kafpy.security.scram import ScramFormatter, ScramMechanism, ScramSaslClient

PLAIN_OK = b"\0alice\0alice-secret"


def _config(max_reauth_ms: int = 0) -> SaslListenerConfig:
    return SaslListenerConfig(
        "SASL_PLAINTEXT", ["PLAIN", "SCRAM-SHA-256"], {"alice": "alice-secret", "bob": "b"},
        max_reauth_ms=max_reauth_ms,
    )  # fmt: skip


def _frame(api_key: ApiKey, version: int, body: dict[str, Any]) -> memoryview:
    return memoryview(encode_request(RequestHeader(api_key, version, 7, "c"), body)[4:])


def _answer(step: AuthenticationStep, api_key: ApiKey, version: int) -> dict[str, Any]:
    assert step.response is not None
    data = b"".join(bytes(p) for p in step.response)[4:]
    correlation_id, body = decode_response(api_key, version, data)
    assert correlation_id == 7
    return body


def _login(auth: SaslServerAuthenticator, now: int, token: bytes = PLAIN_OK) -> AuthenticationStep:
    auth.handle_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), now)
    return auth.handle_frame(_frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}), now)


def test_api_versions_passes_through_then_plain_login() -> None:
    auth = SaslServerAuthenticator(_config())
    step = auth.handle_frame(_frame(ApiKey.API_VERSIONS, 3, {}), 0)
    assert step.forward
    step = _login(auth, 0)
    assert _answer(step, ApiKey.SASL_AUTHENTICATE, 2)["error_code"] == Errors.NONE
    assert auth.complete and str(auth.principal) == "User:alice"
    assert not auth.intercepts(_frame(ApiKey.METADATA, 1, {"topics": []}), 10**12)


def test_failure_is_answered_and_closes() -> None:
    auth = SaslServerAuthenticator(_config())
    step = _login(auth, 0, b"\0alice\0nope")
    body = _answer(step, ApiKey.SASL_AUTHENTICATE, 2)
    assert body["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
    assert step.close_reason == body["error_message"] and step.failed_authentication
    assert not auth.complete


def test_frames_are_limited_until_authenticated() -> None:
    auth = SaslServerAuthenticator(_config())
    assert auth.max_frame_size(100 * 1024 * 1024) == 524288
    _login(auth, 0)
    assert auth.max_frame_size(100 * 1024 * 1024) == 100 * 1024 * 1024


def test_session_lifetime_reauthentication_and_expiry() -> None:
    auth = SaslServerAuthenticator(_config(max_reauth_ms=1000))
    body = _answer(_login(auth, 0), ApiKey.SASL_AUTHENTICATE, 2)
    assert body["session_lifetime_ms"] == 1000
    metadata = _frame(ApiKey.METADATA, 1, {"topics": []})
    assert not auth.intercepts(metadata, 999)
    # re-authenticating in time renews the session
    assert auth.intercepts(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 900)
    _login(auth, 900)
    assert auth.complete and not auth.intercepts(metadata, 1800)
    # past its end, the next request closes the connection
    assert auth.intercepts(metadata, 1900)
    step = auth.handle_frame(metadata, 1900)
    assert step.close_reason is not None and "expired" in step.close_reason


def test_reauthentication_cannot_change_principal() -> None:
    auth = SaslServerAuthenticator(_config(max_reauth_ms=1000))
    _login(auth, 0)
    step = _login(auth, 10, b"\0bob\0b")
    assert step.close_reason is not None and "Cannot change principals" in step.close_reason


def test_handshake_v0_then_raw_token() -> None:
    auth = SaslServerAuthenticator(_config())
    step = auth.handle_frame(_frame(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}), 0)
    assert _answer(step, ApiKey.SASL_HANDSHAKE, 0)["mechanisms"] == ["PLAIN", "SCRAM-SHA-256"]
    step = auth.handle_frame(memoryview(PLAIN_OK), 0)
    assert step.response is None and step.close_reason is None
    assert auth.complete


def test_other_requests_before_authentication_close_without_answer() -> None:
    auth = SaslServerAuthenticator(_config())
    step = auth.handle_frame(_frame(ApiKey.METADATA, 1, {"topics": []}), 0)
    assert step.response is None
    assert step.close_reason == "Unexpected Kafka request of type METADATA during SASL handshake."


def test_a_delegation_token_logs_in_as_its_owner_marked_token_authenticated() -> None:
    cache = DelegationTokenCache()
    hmac = b"h" * 64
    owner = KafkaPrincipal("User", "alice")
    token = DelegationToken(TokenInformation("tok", owner, (), 0, 2000, 1000), hmac)
    password = token.hmac_as_base64_string
    cache.update_cache(
        token, {"SCRAM-SHA-256": ScramFormatter("sha256").credential(password, 4096)}
    )
    config = SaslListenerConfig("SASL_PLAINTEXT", ["SCRAM-SHA-256"], token_cache=cache)
    auth = SaslServerAuthenticator(config)
    auth.handle_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}), 0)
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_256, "tok", password,
                             extensions={"tokenauth": "true"})  # fmt: skip
    token_bytes: bytes | None = client.first_message()
    while not auth.complete:
        assert token_bytes is not None
        step = auth.handle_frame(
            _frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token_bytes}), 0
        )
        answer = _answer(step, ApiKey.SASL_AUTHENTICATE, 2)
        assert answer["error_code"] == Errors.NONE, answer
        token_bytes = client.evaluate_challenge(answer["auth_bytes"])
    assert auth.principal == owner and auth.principal is not None
    assert auth.principal.token_authenticated
    # the session ends when the token expires (told to the client, as Kafka does)
    assert answer["session_lifetime_ms"] == 1000
    metadata = _frame(ApiKey.METADATA, 1, {"topics": []})
    assert not auth.intercepts(metadata, 999)
    assert auth.intercepts(metadata, 1000)
    assert "expired" in (auth.handle_frame(metadata, 1000).close_reason or "")
    # once the token is gone, it no longer logs in
    cache.remove_cache("tok")
    again = SaslServerAuthenticator(config)
    again.handle_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}), 0)
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_256, "tok", password,
                             extensions={"tokenauth": "true"})  # fmt: skip
    step = again.handle_frame(
        _frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": client.first_message()}), 0
    )
    first = _answer(step, ApiKey.SASL_AUTHENTICATE, 2)
    step = again.handle_frame(_frame(ApiKey.SASL_AUTHENTICATE, 2, {
        "auth_bytes": client.evaluate_challenge(first["auth_bytes"])}), 0)  # fmt: skip
    assert (
        _answer(step, ApiKey.SASL_AUTHENTICATE, 2)["error_code"]
        == Errors.SASL_AUTHENTICATION_FAILED
    )
