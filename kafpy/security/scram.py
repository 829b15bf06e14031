"""SCRAM (RFC 5802, RFC 7677): the mechanisms, the key derivation, the credential Kafka
stores, and the server and client sides of the exchange.

Kafka's names: ScramMechanism (SCRAM-SHA-256, SCRAM-SHA-512, 4096 iterations at least),
ScramFormatter (Hi, ClientKey, StoredKey, ServerKey, proofs and signatures),
ScramCredential with ScramCredentialUtils' text form
`salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>` (the value of the mechanism's
key in `/config/users/<user>`), ScramSaslServer and ScramSaslClient, ScramExtensions (the
`key=value` attributes after the nonce of the client's first message; `tokenauth=true` says
the user name is a delegation token id and the password its HMAC, KIP-48).

The server never says whether a user exists: an unknown user gets a salt derived from its
name and a random credential, goes through the same steps and fails at the same point, with
the same error, as a wrong password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from kafpy.common.errors import SaslAuthenticationError

MIN_ITERATIONS = 4096
"""Kafka's ScramMechanism minimum (and the default of kafka-configs.sh)."""

MAX_ITERATIONS = 16384
"""The most AlterUserScramCredentials accepts, as Kafka."""

INVALID_CREDENTIALS = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism {mechanism}"
)
"""Kafka's message for a failed exchange (SaslServerAuthenticator)."""


class ScramMechanism(Enum):
    """A SCRAM mechanism Kafka offers: its SASL name and hash."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    def __init__(self, mechanism_name: str, hash_name: str, type_id: int) -> None:
        self.mechanism_name = mechanism_name
        self.hash_name = hash_name
        self.type_id = type_id  # the mechanism's int8 in the UserScramCredentials APIs

    @property
    def min_iterations(self) -> int:
        return MIN_ITERATIONS

    @classmethod
    def for_name(cls, name: str) -> ScramMechanism | None:
        for m in cls:
            if m.mechanism_name == name:
                return m
        return None

    @classmethod
    def for_type(cls, type_id: int) -> ScramMechanism | None:
        for m in cls:
            if m.type_id == type_id:
                return m
        return None

    @classmethod
    def names(cls) -> list[str]:
        return [m.mechanism_name for m in cls]


class ScramFormatter:
    """RFC 5802's functions over one hash (`sha1` for the RFC's own vector, `sha256`,
    `sha512`)."""

    def __init__(self, hash_name: str) -> None:
        self.hash_name = hash_name

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hi(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        """Hi(): PBKDF2 with HMAC over this hash."""
        return hashlib.pbkdf2_hmac(self.hash_name, password, salt, iterations)

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return self.hi(password.encode(), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def client_signature(self, stored_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(stored_key, auth_message)

    def server_signature(self, server_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(server_key, auth_message)

    def client_proof(self, salted_password: bytes, auth_message: bytes) -> bytes:
        client_key = self.client_key(salted_password)
        signature = self.client_signature(self.stored_key(client_key), auth_message)
        return _xor(client_key, signature)

    def credential(
        self, password: str, iterations: int, salt: bytes | None = None
    ) -> ScramCredential:
        """A new credential for `password` (a random salt unless one is given)."""
        salt = salt if salt is not None else secure_random_bytes()
        salted = self.salted_password(password, salt, iterations)
        return ScramCredential(
            salt, self.stored_key(self.client_key(salted)), self.server_key(salted), iterations
        )


def secure_random_bytes() -> bytes:
    """A salt: random base-36 text as bytes, as Kafka's ScramFormatter makes them."""
    return _base36(secrets.randbits(130)).encode()


def secure_random_nonce() -> str:
    return _base36(secrets.randbits(130))


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as e:
        raise ValueError(f"{what} is not valid base64: {e}") from None


@dataclass(frozen=True)
class ScramCredential:
    """What the broker keeps for a user and mechanism: salt, StoredKey, ServerKey,
    iterations (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_credential_string(self) -> str:
        """ScramCredentialUtils.credentialToString: the value stored in ZooKeeper."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @classmethod
    def from_credential_string(cls, text: str) -> ScramCredential:
        """Parse the stored form; ValueError naming what is wrong."""
        fields: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"Invalid SCRAM credential '{text}': '{part}' is not key=value")
            fields[key.strip()] = value.strip()
        missing = {"salt", "stored_key", "server_key", "iterations"} - fields.keys()
        if missing:
            raise ValueError(
                f"Invalid SCRAM credential: missing {', '.join(sorted(missing))} (expected "
                "salt=...,stored_key=...,server_key=...,iterations=...)"
            )
        try:
            iterations = int(fields["iterations"])
        except ValueError:
            raise ValueError(
                f"Invalid SCRAM credential: iterations={fields['iterations']} is not a number"
            ) from None
        return cls(
            _unb64(fields["salt"], "salt"),
            _unb64(fields["stored_key"], "stored_key"),
            _unb64(fields["server_key"], "server_key"),
            iterations,
        )


# -- messages ------------------------------------------------------------------------------


def _attributes(text: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslAuthenticationError(f"Invalid SCRAM {what}: '{part}' is not an attribute")
        out.setdefault(part[0], part[2:])
    return out


def _saslname_decode(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise SaslAuthenticationError(f"Invalid SCRAM user name '{name}'")
    return name.replace("=2C", ",").replace("=3D", "=")


def _saslname_encode(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


TOKEN_AUTH_CONFIG = "tokenauth"
"""The SCRAM extension (and ScramLoginModule option) of delegation token authentication."""


@dataclass(frozen=True)
class ClientFirstMessage:
    """`n,[a=authzid],n=user,r=nonce[,extensions]` (gs2 header without channel binding)."""

    username: str
    authorization_id: str
    nonce: str
    bare: str
    gs2_header: str
    extensions: Mapping[str, str] = field(default_factory=dict)

    @property
    def token_authenticated(self) -> bool:
        """Kafka's ScramExtensions.tokenAuthenticated: `tokenauth=true` (any case)."""
        return self.extensions.get(TOKEN_AUTH_CONFIG, "").lower() == "true"

    @classmethod
    def parse(cls, data: bytes) -> ClientFirstMessage:
        text = _utf8(data)
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise SaslAuthenticationError(
                "Invalid SCRAM client first message: it must start with the gs2 header 'n,,' "
                "(channel binding is not supported)"
            )
        authzid = ""
        if parts[1]:
            if not parts[1].startswith("a="):
                raise SaslAuthenticationError("Invalid SCRAM client first message: bad authzid")
            authzid = _saslname_decode(parts[1][2:])
        bare = parts[2]
        # extensions have names longer than one letter (RFC 5802 attributes have one)
        core, extensions = [], {}
        for part in bare.split(","):
            key, sep, value = part.partition("=")
            if sep and len(key) > 1 and key.isalnum():
                extensions[key] = value
            else:
                core.append(part)
        attrs = _attributes(",".join(core), "client first message")
        if "n" not in attrs or "r" not in attrs or "m" in attrs:
            raise SaslAuthenticationError(
                "Invalid SCRAM client first message: it needs n=<user> and r=<nonce>"
            )
        return cls(
            _saslname_decode(attrs["n"]), authzid, attrs["r"], bare,
            f"{parts[0]},{parts[1]},", extensions,
        )  # fmt: skip


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError("Invalid SCRAM message: not UTF-8") from None


# -- server --------------------------------------------------------------------------------

CredentialLookup = Callable[[str], "ScramCredential | None"]
TokenLookup = Callable[[str], "tuple[ScramCredential, str, int] | None"]
"""A delegation token's credential for the mechanism, its owner's name and its expiry
timestamp (ms), by token id."""


class ScramSaslServer:
    """The broker's side of one SCRAM exchange (two client messages, two answers).

    `lookup(user)` answers the user's credential for this mechanism, or None;
    `token_lookup(token id)` a delegation token's credential and owner (a client sending
    `tokenauth=true` authenticates as the owner, `token_authenticated` then true; without a
    token lookup such a client fails; `credential_expiration_ms` is then the token's expiry,
    which ends the session). `evaluate_response` raises SaslAuthenticationError when
    authentication fails.
    """

    _fake_key = os.urandom(32)  # one per process: an unknown user always sees one salt

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: CredentialLookup,
        server_nonce: Callable[[], str] = secure_random_nonce,
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.token_lookup = token_lookup
        self.token_authenticated = False
        self.credential_expiration_ms: int | None = None
        self._token: tuple[str, int] | None = None  # owner, expiry
        self._server_nonce = server_nonce
        self.formatter = ScramFormatter(mechanism.hash_name)
        self.lookup = lookup
        self._state = "receive_client_first"
        self._client_first: ClientFirstMessage | None = None
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None
        self._known = False
        self.authorization_id = ""

    @property
    def mechanism_name(self) -> str:
        return self.mechanism.mechanism_name

    def is_complete(self) -> bool:
        return self._state == "complete"

    def _fail(self) -> SaslAuthenticationError:
        self._state = "failed"
        return SaslAuthenticationError(INVALID_CREDENTIALS.format(mechanism=self.mechanism_name))

    def evaluate_response(self, response: bytes) -> bytes:
        if self._state == "receive_client_first":
            try:
                first = ClientFirstMessage.parse(response)
            except SaslAuthenticationError:
                raise self._fail() from None
            if first.authorization_id and first.authorization_id != first.username:
                raise self._fail()
            if first.token_authenticated:
                token = self.token_lookup(first.username) if self.token_lookup else None
                credential = token[0] if token is not None else None
                self._token = token[1:] if token is not None else None
            else:
                credential = self.lookup(first.username)
            self._known = credential is not None
            self._credential = credential or self._fake_credential(first.username)
            self._client_first = first
            self._nonce = first.nonce + self._server_nonce()
            self._server_first = (
                f"r={self._nonce},s={_b64(self._credential.salt)},i={self._credential.iterations}"
            )
            self._state = "receive_client_final"
            return self._server_first.encode()
        if self._state == "receive_client_final":
            assert self._client_first is not None and self._credential is not None
            server_final = self._verify_client_final(response)
            # checked last so an unknown user costs what a wrong password costs
            if server_final is None or not self._known:
                raise self._fail()
            if self._client_first.token_authenticated:
                assert self._token is not None
                self.authorization_id, self.credential_expiration_ms = self._token
                self.token_authenticated = True
            else:
                self.authorization_id = self._client_first.username
            self._state = "complete"
            return server_final
        raise SaslAuthenticationError(
            f"Unexpected SCRAM message in state {self._state}: the exchange is over"
        )

    def _verify_client_final(self, response: bytes) -> bytes | None:
        assert self._client_first is not None and self._credential is not None
        try:
            text = _utf8(response)
            without_proof, sep, proof_b64 = text.rpartition(",p=")
            attrs = _attributes(without_proof, "client final message") if sep else {}
            proof = base64.b64decode(proof_b64, validate=True)
        except (SaslAuthenticationError, ValueError):
            return None
        channel_binding = base64.b64encode(self._client_first.gs2_header.encode()).decode()
        auth_message = f"{self._client_first.bare},{self._server_first},{without_proof}".encode()
        cred = self._credential
        signature = self.formatter.client_signature(cred.stored_key, auth_message)
        ok = len(proof) == len(signature)
        client_key = _xor(proof if ok else signature, signature)
        ok = hmac.compare_digest(self.formatter.hash(client_key), cred.stored_key) and ok
        # The final nonce must carry this exchange's nonce. librdkafka before 2.6.1 sends the
        # client nonce twice (client + server nonce appended to the client nonce); Kafka 2.8
        # did not look, so like Kafka's later fix this accepts a nonce ending in ours.
        ok = attrs.get("r", "").endswith(self._nonce) and ok
        ok = attrs.get("c") == channel_binding and ok
        if not ok:
            return None
        server_signature = self.formatter.server_signature(cred.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()

    def _fake_credential(self, username: str) -> ScramCredential:
        salt = _base36(
            int.from_bytes(hmac.new(self._fake_key, username.encode(), "sha256").digest()[:17])
        ).encode()
        size = hashlib.new(self.mechanism.hash_name).digest_size
        return ScramCredential(salt, os.urandom(size), os.urandom(size), MIN_ITERATIONS)


# -- client --------------------------------------------------------------------------------


class ScramSaslClient:
    """kafpy's client side of one SCRAM exchange: `first_message()`, then
    `evaluate_challenge(server_first)` -> client final, then `evaluate_challenge(server_final)`
    checks the server's signature (a broker that does not know the password is refused).
    `extensions` go after the nonce of the first message (`{"tokenauth": "true"}`)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: str | None = None,
        extensions: Mapping[str, str] | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.formatter = ScramFormatter(mechanism.hash_name)
        self.username = username
        self.password = password
        self.nonce = nonce or secure_random_nonce()
        extra = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        self._client_first_bare = f"n={_saslname_encode(username)},r={self.nonce}{extra}"
        self._server_signature = b""
        self._state = "first"

    def first_message(self) -> bytes:
        self._state = "receive_server_first"
        return f"n,,{self._client_first_bare}".encode()

    def is_complete(self) -> bool:
        return self._state == "complete"

    def evaluate_challenge(self, challenge: bytes) -> bytes:
        if self._state == "receive_server_first":
            server_first = _utf8(challenge)
            attrs = _attributes(server_first, "server first message")
            if "e" in attrs:
                raise SaslAuthenticationError(f"SCRAM server error: {attrs['e']}")
            nonce, salt_b64, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
            if not nonce.startswith(self.nonce) or not iterations.isdigit():
                raise SaslAuthenticationError("Invalid SCRAM server first message")
            if int(iterations) < MIN_ITERATIONS:
                raise SaslAuthenticationError(
                    f"Requested iterations {iterations} is less than the minimum "
                    f"{MIN_ITERATIONS} for {self.mechanism.mechanism_name}"
                )
            salted = self.formatter.salted_password(
                self.password, _unb64(salt_b64, "salt"), int(iterations)
            )
            without_proof = f"c=biws,r={nonce}"
            auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
            proof = self.formatter.client_proof(salted, auth_message)
            self._server_signature = self.formatter.server_signature(
                self.formatter.server_key(salted), auth_message
            )
            self._state = "receive_server_final"
            return f"{without_proof},p={_b64(proof)}".encode()
        if self._state == "receive_server_final":
            attrs = _attributes(_utf8(challenge), "server final message")
            if "e" in attrs:
                raise SaslAuthenticationError(f"SCRAM server error: {attrs['e']}")
            if not hmac.compare_digest(attrs.get("v", ""), _b64(self._server_signature)):
                raise SaslAuthenticationError(
                    "Invalid server signature in the SCRAM server final message: the broker "
                    "does not hold this user's credential"
                )
            self._state = "complete"
            return b""
        raise SaslAuthenticationError(f"Unexpected SCRAM challenge in state {self._state}")
