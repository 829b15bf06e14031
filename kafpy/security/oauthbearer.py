"""SASL/OAUTHBEARER (RFC 7628, KIP-255): the client's first message, the token a validator
accepts, and the broker's OAuthBearerSaslServer.

The client sends `n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01]...\\x01`.
The listener's validator (Kafka's server callback handler) turns the token into an
OAuthBearerToken or refuses it; a refused token is answered, as Kafka does, with an error
JSON (`{"status":"invalid_token"}`) sent as a challenge, the client answers `\\x01` and
authentication then fails with that JSON as the message. The session's principal is the
token's principal claim and its credential lifetime is the token's expiry (KIP-368).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafpy.common.errors import SaslAuthenticationError
from kafpy.common.logger import component_logger
from kafpy.common.time import SystemTime, Time

OAUTHBEARER = "OAUTHBEARER"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

AUTH_KEY = "auth"
"""The reserved key of the first message that carries the token; never an extension."""

_SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_CLIENT_FIRST_MESSAGE = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEPARATOR}"
    rf"(?P<kvpairs>(?:{_KEY}={_VALUE}{_SEPARATOR})*){_SEPARATOR}"
)
_AUTH = re.compile(r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_.a-zA-Z0-9]+)")
EXTENSION_KEY = re.compile(_KEY)
EXTENSION_VALUE = re.compile(_VALUE)

INVALID_CREDENTIALS = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    f"mechanism {OAUTHBEARER}"
)
"""What the client is told when its first message does not parse (Kafka hides the cause)."""


class InvalidClientResponseError(ValueError):
    """A first message that is not RFC 7628's (Kafka's SaslException)."""


def validate_extensions(extensions: Mapping[str, str]) -> None:
    """RFC 7628 section 3.1's rules for extension names and values, and `auth` reserved;
    InvalidClientResponseError naming the bad one."""
    if AUTH_KEY in extensions:
        raise InvalidClientResponseError(f"Extension name {AUTH_KEY} is invalid")
    for name, value in extensions.items():
        if not EXTENSION_KEY.fullmatch(name):
            raise InvalidClientResponseError(f"Extension name {name} is invalid")
        if not EXTENSION_VALUE.fullmatch(value):
            raise InvalidClientResponseError(
                f"Extension value ({value}) for extension {name} is invalid"
            )


@dataclass(frozen=True)
class OAuthBearerClientInitialResponse:
    """The client's first (and only) message: the token, the optional authorization id and
    the SASL extensions (Kafka's OAuthBearerClientInitialResponse)."""

    token_value: str
    authorization_id: str = ""
    extensions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, response: bytes) -> OAuthBearerClientInitialResponse:
        """The message's parts; InvalidClientResponseError when it is not RFC 7628's."""
        text = bytes(response).decode("utf-8", errors="replace")
        match = _CLIENT_FIRST_MESSAGE.fullmatch(text)
        if match is None:
            raise InvalidClientResponseError("Invalid OAUTHBEARER client first message")
        properties: dict[str, str] = {}
        for pair in match.group("kvpairs").split(_SEPARATOR)[:-1]:
            key, _, value = pair.partition("=")
            properties[key] = value
        auth = properties.pop(AUTH_KEY, None)
        if auth is None:
            raise InvalidClientResponseError(
                "Invalid OAUTHBEARER client first message: 'auth' not specified"
            )
        validate_extensions(properties)
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise InvalidClientResponseError(
                "Invalid OAUTHBEARER client first message: invalid 'auth' format"
            )
        if auth_match.group("scheme").lower() != "bearer":
            raise InvalidClientResponseError(
                "Invalid scheme in OAUTHBEARER client first message: " + auth_match.group("scheme")
            )
        return cls(auth_match.group("token"), match.group("authzid") or "", properties)

    def to_bytes(self) -> bytes:
        """The message as a client sends it."""
        validate_extensions(self.extensions)
        authzid = f"a={self.authorization_id}" if self.authorization_id else ""
        extensions = "".join(f"{_SEPARATOR}{k}={v}" for k, v in self.extensions.items())
        return (
            f"n,{authzid},{_SEPARATOR}auth=Bearer {self.token_value}{extensions}"
            f"{_SEPARATOR}{_SEPARATOR}"
        ).encode()


@dataclass(frozen=True)
class OAuthBearerToken:
    """A validated token (Kafka's OAuthBearerToken): its compact serialization, the
    principal named by its principal claim, its scope, its expiry (`lifetime_ms`, ms since
    the epoch) and its issue time when it has one."""

    value: str = field(repr=False)
    principal_name: str
    scope: frozenset[str]
    lifetime_ms: int
    start_time_ms: int | None = None


class OAuthBearerIllegalTokenError(Exception):
    """A token a validator refuses (Kafka's OAuthBearerIllegalTokenException): why
    (`description`, logged, never sent), and the scope it lacks when that is why."""

    def __init__(
        self, description: str, failure_scope: str | None = None, openid_config: str | None = None
    ) -> None:
        super().__init__(description)
        self.description = description
        self.failure_scope = failure_scope
        self.openid_config = openid_config

    @property
    def status(self) -> str:
        """RFC 6750's error code: `insufficient_scope` when a scope is missing, else
        `invalid_token`."""
        return "insufficient_scope" if self.failure_scope is not None else "invalid_token"

    def json_error_response(self) -> str:
        """The error JSON the broker sends as its challenge, in Kafka's exact text."""
        text = f'{{"status":"{self.status}"'
        if self.failure_scope is not None:
            text += f', "scope":"{self.failure_scope}"'
        if self.openid_config is not None:
            text += f', "openid-configuration":"{self.openid_config}"'
        return text + "}"


class OAuthBearerValidator(Protocol):
    """A listener's token validation (Kafka's OAUTHBEARER server callback handler)."""

    def validate(self, token_value: str, now_ms: int) -> OAuthBearerToken:
        """The token, or OAuthBearerIllegalTokenError."""
        ...

    def invalid_extensions(
        self, token: OAuthBearerToken, extensions: Mapping[str, str]
    ) -> dict[str, str]:
        """The extensions it refuses, each with why (Kafka's
        OAuthBearerExtensionsValidatorCallback); empty when all are accepted."""
        ...


class OAuthBearerLogin(Protocol):
    """Where a client's token comes from (Kafka's OAUTHBEARER login callback)."""

    @property
    def extensions(self) -> Mapping[str, str]: ...

    def token_value(self) -> str:
        """A token to authenticate with now."""
        ...


@dataclass(frozen=True)
class OAuthBearerGivenToken:
    """A token made elsewhere (an identity provider's), given as it is."""

    value: str = field(repr=False)
    extensions: Mapping[str, str] = field(default_factory=dict)

    def token_value(self) -> str:
        return self.value


class OAuthBearerSaslServer:
    """The broker's side of one OAUTHBEARER exchange (Kafka's OAuthBearerSaslServer)."""

    mechanism_name = OAUTHBEARER
    token_authenticated = False

    def __init__(self, validator: OAuthBearerValidator, time: Time | None = None) -> None:
        self.validator = validator
        self.time = time or SystemTime()
        self.authorization_id = ""
        self.credential_expiration_ms: int | None = None
        self.extensions: dict[str, str] = {}
        self.token: OAuthBearerToken | None = None
        self._complete = False
        self._error_message: str | None = None
        self._log = component_logger("kafpy.security.oauthbearer.OAuthBearerSaslServer")

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise SaslAuthenticationError("Unexpected OAUTHBEARER message: the exchange is over")
        if response == b"\x01" and self._error_message is not None:
            self._log.debug("Received %%x01 response from client after it received our error")
            raise SaslAuthenticationError(self._error_message)
        self._error_message = None
        try:
            first = OAuthBearerClientInitialResponse.parse(response)
        except InvalidClientResponseError as e:
            self._log.debug("%s", e)
            raise SaslAuthenticationError(INVALID_CREDENTIALS) from None
        try:
            token = self.validator.validate(first.token_value, self.time.milliseconds())
        except OAuthBearerIllegalTokenError as e:
            self._error_message = e.json_error_response()
            self._log.debug("%s (%s)", self._error_message, e.description)
            return self._error_message.encode()
        if first.authorization_id and first.authorization_id != token.principal_name:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id "
                f"({first.authorization_id}) that is different from the token's principal "
                f"name ({token.principal_name})"
            )
        invalid = self.validator.invalid_extensions(token, first.extensions)
        if invalid:
            listed = "; ".join(f"{name}: {why}" for name, why in invalid.items())
            raise SaslAuthenticationError(
                f"Authentication failed: {len(invalid)} extensions are invalid! They are: {listed}"
            )
        self.token = token
        self.extensions = dict(first.extensions)
        self.authorization_id = token.principal_name
        self.credential_expiration_ms = token.lifetime_ms
        self._complete = True
        self._log.debug("Successfully authenticate User=%s", token.principal_name)
        return b""


class OAuthBearerSaslClient:
    """The client's side: the first message, then `\\x01` after an error JSON (Kafka's
    OAuthBearerSaslClient); the exchange is complete once the broker answers empty."""

    def __init__(self, first_message: OAuthBearerClientInitialResponse) -> None:
        self._first = first_message
        self.error: str | None = None
        self._complete = False

    def first_message(self) -> bytes:
        return self._first.to_bytes()

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_challenge(self, challenge: bytes) -> bytes:
        """The answer to the broker's reply to the first message."""
        if challenge:
            self.error = bytes(challenge).decode("utf-8", errors="replace")
            return b"\x01"
        self._complete = True
        return b""
