"""SCRAM against the RFCs' test vectors, Kafka's stored credential form, and the failures."""

from __future__ import annotations

import base64

import pytest

from kafpy.common.errors import SaslAuthenticationError
from kafpy.security.scram import (
    ClientFirstMessage,
    ScramCredential,
    ScramFormatter,
    ScramMechanism,
    ScramSaslClient,
    ScramSaslServer,
)

# RFC 7677 section 3
R7677_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
R7677_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
R7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
R7677_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
R7677_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
R7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _rfc7677_credential() -> ScramCredential:
    return ScramFormatter("sha256").credential("pencil", 4096, R7677_SALT)


def test_rfc7677_client_exchange() -> None:
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_256, "user", "pencil", R7677_CLIENT_NONCE)
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.evaluate_challenge(R7677_SERVER_FIRST) == R7677_CLIENT_FINAL
    assert client.evaluate_challenge(R7677_SERVER_FINAL) == b""
    assert client.is_complete()


def test_rfc7677_server_exchange() -> None:
    credential = _rfc7677_credential()
    server = ScramSaslServer(
        ScramMechanism.SCRAM_SHA_256,
        {"user": credential}.get,
        server_nonce=lambda: R7677_SERVER_NONCE,
    )
    assert server.evaluate_response(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == R7677_SERVER_FIRST
    assert server.evaluate_response(R7677_CLIENT_FINAL) == R7677_SERVER_FINAL
    assert server.is_complete()
    assert server.authorization_id == "user"


def test_rfc5802_sha1_math() -> None:
    """RFC 5802 section 5: the proof and the server signature with SHA-1."""
    f = ScramFormatter("sha1")
    salted = f.salted_password("pencil", base64.b64decode("QSXCR+Q6sek8bf92"), 4096)
    auth_message = (
        b"n=user,r=fyko+d2lbbFgONRv9qkxdawL,"
        b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096,"
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j"
    )
    proof = f.client_proof(salted, auth_message)
    assert base64.b64encode(proof) == b"v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    signature = f.server_signature(f.server_key(salted), auth_message)
    assert base64.b64encode(signature) == b"rmF9pqV8S7suAoZWja4dJRkFsKQ="


def test_credential_string_is_kafkas_form() -> None:
    credential = _rfc7677_credential()
    text = credential.to_credential_string()
    assert text == (
        "salt=W22ZaJ0SNY7soEsUEjb6gQ==,"
        f"stored_key={base64.b64encode(credential.stored_key).decode()},"
        f"server_key={base64.b64encode(credential.server_key).decode()},iterations=4096"
    )
    assert ScramCredential.from_credential_string(text) == credential


def test_credential_string_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="missing iterations"):
        ScramCredential.from_credential_string("salt=AA==,stored_key=AA==,server_key=AA==")
    with pytest.raises(ValueError, match="salt is not valid base64"):
        ScramCredential.from_credential_string(
            "salt=***,stored_key=AA==,server_key=AA==,iterations=4096"
        )


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_client_and_server_agree(mechanism: ScramMechanism) -> None:
    credential = ScramFormatter(mechanism.hash_name).credential("alice-secret", 4096)
    server = ScramSaslServer(mechanism, {"alice": credential}.get)
    client = ScramSaslClient(mechanism, "alice", "alice-secret")
    challenge = server.evaluate_response(client.first_message())
    server_final = server.evaluate_response(client.evaluate_challenge(challenge))
    client.evaluate_challenge(server_final)
    assert server.is_complete() and client.is_complete()
    assert server.authorization_id == "alice"


def _attempt(lookup: dict[str, ScramCredential], user: str, password: str) -> tuple[bytes, str]:
    server = ScramSaslServer(ScramMechanism.SCRAM_SHA_256, lookup.get)
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_256, user, password)
    challenge = server.evaluate_response(client.first_message())
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(client.evaluate_challenge(challenge))
    assert not server.is_complete()
    return challenge, str(e.value)


def test_wrong_password_and_unknown_user_fail_alike() -> None:
    users = {"alice": ScramFormatter("sha256").credential("alice-secret", 4096)}
    _, wrong = _attempt(users, "alice", "nope")
    first, unknown = _attempt(users, "mallory", "nope")
    expected = (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )
    assert wrong == unknown == expected
    # an unknown user sees a stable salt and the default iterations, like a real user
    again, _ = _attempt(users, "mallory", "other")
    salt = [p for p in first.split(b",") if p.startswith(b"s=")]
    assert salt == [p for p in again.split(b",") if p.startswith(b"s=")]
    assert first.endswith(b",i=4096")


def test_client_refuses_a_server_that_does_not_know_the_password() -> None:
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_256, "user", "pencil", R7677_CLIENT_NONCE)
    client.first_message()
    client.evaluate_challenge(R7677_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError, match="server signature"):
        client.evaluate_challenge(b"v=AAAA")


def test_malformed_client_first_fails_with_kafkas_message() -> None:
    server = ScramSaslServer(ScramMechanism.SCRAM_SHA_512, lambda user: None)
    with pytest.raises(SaslAuthenticationError, match="SASL mechanism SCRAM-SHA-512"):
        server.evaluate_response(b"\xff garbage")


def test_saslname_escapes() -> None:
    credential = ScramFormatter("sha256").credential("pw", 4096)
    server = ScramSaslServer(ScramMechanism.SCRAM_SHA_256, {"a,b=c": credential}.get)
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_256, "a,b=c", "pw")
    first = client.first_message()
    assert b"n=a=2Cb=3Dc," in first
    client.evaluate_challenge(
        server.evaluate_response(client.evaluate_challenge(server.evaluate_response(first)))
    )
    assert server.authorization_id == "a,b=c"


def test_server_accepts_librdkafkas_repeated_client_nonce_but_not_a_foreign_one() -> None:
    credential = _rfc7677_credential()
    server = ScramSaslServer(
        ScramMechanism.SCRAM_SHA_256, {"user": credential}.get,
        server_nonce=lambda: R7677_SERVER_NONCE,
    )  # fmt: skip
    server.evaluate_response(b"n,,n=user,r=" + R7677_CLIENT_NONCE.encode())
    full_nonce = R7677_CLIENT_NONCE + R7677_SERVER_NONCE
    f = ScramFormatter("sha256")
    salted = f.salted_password("pencil", R7677_SALT, 4096)
    without_proof = f"c=biws,r={R7677_CLIENT_NONCE}{full_nonce}"
    auth_message = (
        f"n=user,r={R7677_CLIENT_NONCE},{R7677_SERVER_FIRST.decode()},{without_proof}".encode()
    )
    proof = base64.b64encode(f.client_proof(salted, auth_message)).decode()
    assert server.evaluate_response(f"{without_proof},p={proof}".encode()).startswith(b"v=")

    other = ScramSaslServer(
        ScramMechanism.SCRAM_SHA_256, {"user": credential}.get,
        server_nonce=lambda: R7677_SERVER_NONCE,
    )  # fmt: skip
    other.evaluate_response(b"n,,n=user,r=" + R7677_CLIENT_NONCE.encode())
    stale = f"c=biws,r={R7677_CLIENT_NONCE}stale-server-nonce"
    auth_message = f"n=user,r={R7677_CLIENT_NONCE},{R7677_SERVER_FIRST.decode()},{stale}".encode()
    proof = base64.b64encode(f.client_proof(salted, auth_message)).decode()
    with pytest.raises(SaslAuthenticationError):
        other.evaluate_response(f"{stale},p={proof}".encode())


# -- delegation tokens: the tokenauth extension (KIP-48) -----------------------------------


def test_client_first_extensions_are_parsed_after_the_nonce() -> None:
    first = ClientFirstMessage.parse(b"n,,n=tok,r=abc,tokenauth=true")
    assert (first.username, first.nonce, first.token_authenticated) == ("tok", "abc", True)
    assert first.bare == "n=tok,r=abc,tokenauth=true"  # the proof covers the extensions
    assert not ClientFirstMessage.parse(b"n,,n=tok,r=abc,tokenauth=false").token_authenticated
    assert ClientFirstMessage.parse(b"n,,n=tok,r=abc,tokenauth=TRUE").token_authenticated
    assert not ClientFirstMessage.parse(b"n,,n=tok,r=abc").token_authenticated


def _token_exchange(password: str, tokenauth: bool = True) -> ScramSaslServer:
    mechanism = ScramMechanism.SCRAM_SHA_256
    credential = ScramFormatter(mechanism.hash_name).credential("hmac-b64", 4096)
    tokens = {"tok": (credential, "alice", 1000)}
    # a user named like the token must not be used for token authentication
    users = {"tok": ScramFormatter(mechanism.hash_name).credential(password, 4096)}
    server = ScramSaslServer(mechanism, users.get, token_lookup=tokens.get)
    extensions = {"tokenauth": "true"} if tokenauth else None
    client = ScramSaslClient(mechanism, "tok", password, extensions=extensions)
    challenge = server.evaluate_response(client.first_message())
    client.evaluate_challenge(server.evaluate_response(client.evaluate_challenge(challenge)))
    return server


def test_a_token_authenticates_as_its_owner() -> None:
    server = _token_exchange("hmac-b64")
    assert server.is_complete() and server.token_authenticated
    assert server.authorization_id == "alice" and server.credential_expiration_ms == 1000


def test_a_forged_token_hmac_or_an_unknown_token_fails() -> None:
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        _token_exchange("forged")
    server = ScramSaslServer(ScramMechanism.SCRAM_SHA_256, {}.get)  # no token lookup
    client = ScramSaslClient(
        ScramMechanism.SCRAM_SHA_256, "tok", "x", extensions={"tokenauth": "true"}
    )
    challenge = server.evaluate_response(client.first_message())
    with pytest.raises(SaslAuthenticationError):
        server.evaluate_response(client.evaluate_challenge(challenge))


def test_without_the_extension_the_name_is_a_user() -> None:
    server = _token_exchange("user-password", tokenauth=False)
    assert server.authorization_id == "tok" and not server.token_authenticated
