"""SaslServerAuthenticator: the broker's side of SASL on one connection of a SASL_PLAINTEXT
or SASL_SSL listener (Kafka's SaslServerAuthenticator).

Until the connection has authenticated it may send only ApiVersions (answered by the
broker as usual), SaslHandshake and SaslAuthenticate, each frame at most
MAX_RECEIVE_SIZE bytes. SaslHandshake v1 picks a mechanism and the tokens then come in
SaslAuthenticate requests (v0-v2); after SaslHandshake v0 they come as raw size-prefixed
frames, as old clients send them; a first frame that is no Kafka request is a Kafka 0.9
client's GSSAPI token when the listener enables GSSAPI. An unknown mechanism is answered with
UNSUPPORTED_SASL_MECHANISM and the enabled list, a failed exchange with
SASL_AUTHENTICATION_FAILED and Kafka's message, a SaslAuthenticate before the handshake
with ILLEGAL_SASL_STATE; each then closes the connection. Any other request before
authentication closes it without an answer.

With `connections.max.reauth.ms` set the session has that lifetime (told to clients in
SaslAuthenticate v1+): the client may re-authenticate in-band with a new SaslHandshake,
and a connection that sends anything else after its session expired is closed (KIP-368).
A session authenticated with a token (a delegation token, an OAUTHBEARER token) ends at the
token's expiry at the latest, whatever `connections.max.reauth.ms` is.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from kafpy.common.errors import Errors, SaslAuthenticationError
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import ProtocolDecodeError
from kafpy.protocol.headers import RequestHeader, decode_request_header, encode_response
from kafpy.protocol.messages import REQUESTS
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.delegation_token_cache import DelegationTokenCache
from kafpy.security.gssapi_server import GssapiServerConfig
from kafpy.security.kafka_principal import USER_TYPE, KafkaPrincipal
from kafpy.security.kerberos_login import GSSAPI
from kafpy.security.oauthbearer import OAUTHBEARER, OAuthBearerSaslServer, OAuthBearerValidator
from kafpy.security.oauthbearer_jwks import (
    JWKS_VALIDATOR_CALLBACK_HANDLER,
    OAuthBearerJwksValidator,
)
from kafpy.security.oauthbearer_unsecured import OAuthBearerUnsecuredValidator
from kafpy.security.plain import PLAIN, PlainSaslServer
from kafpy.security.sasl_configs import MAX_RECEIVE_SIZE
from kafpy.security.scram import ScramCredential, ScramMechanism, ScramSaslServer

_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")
_HANDSHAKE_VERSIONS = (0, 1)
_AUTHENTICATE_VERSIONS = (0, 2)
_VERSIONS = {
    ApiKey.SASL_HANDSHAKE: _HANDSHAKE_VERSIONS,
    ApiKey.SASL_AUTHENTICATE: _AUTHENTICATE_VERSIONS,
}


class SaslServer(Protocol):
    """One mechanism's server side of an exchange."""

    authorization_id: str
    token_authenticated: bool
    credential_expiration_ms: int | None  # when the credential ends the session (a token)

    @property
    def mechanism_name(self) -> str: ...

    def is_complete(self) -> bool: ...

    def evaluate_response(self, response: bytes) -> bytes: ...


@dataclass(frozen=True)
class OAuthBearerListenerConfig:
    """A listener's OAUTHBEARER validation (Kafka's server callback handler for the
    mechanism): the handler class (Kafka's unsecured validator, or kafpy's JWKS one) and
    the options of the listener's OAuthBearerLoginModule entry. Equal settings are equal
    configs; the validator is built once, here, so a bad option or an unreadable key set
    fails at start-up."""

    callback_handler_class: str
    options: tuple[tuple[str, str], ...]
    jaas_key: str = "sasl.jaas.config"
    validator: OAuthBearerValidator = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        options = dict(self.options)
        validator: OAuthBearerValidator
        if self.callback_handler_class == JWKS_VALIDATOR_CALLBACK_HANDLER:
            validator = OAuthBearerJwksValidator(options, key=self.jaas_key)
        else:
            validator = OAuthBearerUnsecuredValidator(options, key=self.jaas_key)
        object.__setattr__(self, "validator", validator)


@dataclass
class SaslListenerConfig:
    """What a SASL listener offers: its enabled mechanisms, PLAIN's users (from its JAAS
    config), the SCRAM credential cache, the delegation tokens (SCRAM with `tokenauth`),
    OAUTHBEARER's validation, GSSAPI's keys and short-name rules, and
    `connections.max.reauth.ms` (per mechanism when
    `listener.name.<l>.<mechanism>.connections.max.reauth.ms` sets it)."""

    listener_name: str
    enabled_mechanisms: list[str]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    credential_cache: CredentialCache = field(default_factory=CredentialCache)
    max_reauth_ms: int = 0
    token_cache: DelegationTokenCache | None = None
    oauthbearer: OAuthBearerListenerConfig | None = None
    gssapi: GssapiServerConfig | None = None
    max_reauth_ms_by_mechanism: Mapping[str, int] = field(default_factory=dict)

    def max_reauth_ms_for(self, mechanism: str | None) -> int:
        return self.max_reauth_ms_by_mechanism.get(mechanism or "", self.max_reauth_ms)

    def create_sasl_server(self, mechanism: str) -> SaslServer:
        if mechanism == PLAIN:
            return PlainSaslServer(self.plain_users)
        if mechanism == GSSAPI:
            assert self.gssapi is not None, "GSSAPI listeners are configured at start-up"
            return self.gssapi.create_sasl_server()
        if mechanism == OAUTHBEARER:
            assert self.oauthbearer is not None, "OAUTHBEARER listeners are configured at start-up"
            return OAuthBearerSaslServer(self.oauthbearer.validator)
        scram = ScramMechanism.for_name(mechanism)
        assert scram is not None, "enabled mechanisms are validated at start-up"
        cache, tokens = self.credential_cache, self.token_cache

        def token_lookup(token_id: str) -> tuple[ScramCredential, str, int] | None:
            credential = tokens.credential(mechanism, token_id) if tokens else None
            info = tokens.token(token_id) if tokens else None
            if credential is None or info is None:
                return None
            return credential, info.owner.name, info.expiry_timestamp

        return ScramSaslServer(
            scram, lambda user: cache.get(mechanism, user), token_lookup=token_lookup
        )


class SaslState(Enum):
    """Where a connection is in its SASL exchange."""

    INITIAL_REQUEST = "INITIAL_REQUEST"  # ApiVersions or SaslHandshake
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"  # after ApiVersions: SaslHandshake
    AUTHENTICATE = "AUTHENTICATE"  # SaslAuthenticate requests (after handshake v1)
    RAW_TOKEN = "RAW_TOKEN"  # raw size-prefixed tokens (after handshake v0)
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass
class AuthenticationStep:
    """What the socket server does with one frame: send `response` (a whole frame as
    parts), pass the request on to the broker (`forward`: ApiVersions), and close the
    connection when `close_reason` is set (after sending). `failed_authentication` marks a
    close that Kafka logs as a failed authentication."""

    response: list[bytes | memoryview] | None = None
    forward: bool = False
    close_reason: str | None = None
    failed_authentication: bool = False


class SaslServerAuthenticator:
    """The SASL state of one connection; `handle_frame` takes the frames it `intercepts`."""

    def __init__(self, config: SaslListenerConfig) -> None:
        self.config = config
        self.state = SaslState.INITIAL_REQUEST
        self.principal: KafkaPrincipal | None = None
        self.mechanism: str | None = None
        self._server: SaslServer | None = None
        self._session_expiration_ms: int | None = None
        self._session_lifetime_ms: int | None = None
        self._reauthenticating = False

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    def max_frame_size(self, default: int) -> int:
        """The largest frame the connection may send now."""
        return default if self.complete else MAX_RECEIVE_SIZE

    def intercepts(self, frame: memoryview, now_ms: int) -> bool:
        """Whether this frame is the authenticator's: everything before authentication, a
        SaslHandshake starting re-authentication, anything once the session expired."""
        if not self.complete:
            return True
        if self._session_expiration_ms is None:
            return False
        if now_ms >= self._session_expiration_ms:
            return True
        return len(frame) >= 2 and _API_KEY.unpack_from(frame)[0] == ApiKey.SASL_HANDSHAKE

    def handle_frame(self, frame: memoryview, now_ms: int) -> AuthenticationStep:
        if self.state is SaslState.RAW_TOKEN:
            return self._raw_token(bytes(frame), now_ms)
        try:
            header, offset = decode_request_header(frame)
        except ProtocolDecodeError as e:
            if self._gssapi_without_handshake():
                return self._raw_token(bytes(frame), now_ms)
            return AuthenticationStep(
                close_reason=f"a frame during SASL authentication does not decode: {e}"
            )
        api_key = header.api_key
        if not _is_api_key(api_key) and self._gssapi_without_handshake():
            return self._raw_token(bytes(frame), now_ms)
        if self.complete:
            if api_key == ApiKey.SASL_HANDSHAKE and (self._session_expiration_ms is not None):
                self._reauthenticating = True
                self.state = SaslState.HANDSHAKE_REQUEST
            else:
                return AuthenticationStep(
                    close_reason=(
                        f"the SASL session of {self.principal} expired (connections.max.reauth.ms"
                        f"={self.config.max_reauth_ms_for(self.mechanism)}, or its token's "
                        "expiry) and "
                        "the client did not re-authenticate"
                    )
                )
        # again after an unsupported version, as clients retry at a lower one
        if api_key == ApiKey.API_VERSIONS and self.state in (
            SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_REQUEST,
        ) and not self._reauthenticating:  # fmt: skip
            self.state = SaslState.HANDSHAKE_REQUEST
            return AuthenticationStep(forward=True)
        if api_key == ApiKey.SASL_HANDSHAKE and self.state in (
            SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_REQUEST,
        ):  # fmt: skip
            return self._handshake(header, frame, offset)
        if api_key == ApiKey.SASL_AUTHENTICATE and self.state is SaslState.AUTHENTICATE:
            return self._authenticate(header, frame, offset, now_ms)
        name = _api_name(api_key)
        if (
            api_key == ApiKey.SASL_AUTHENTICATE
            and _AUTHENTICATE_VERSIONS[0] <= (header.api_version) <= _AUTHENTICATE_VERSIONS[1]
        ):
            message = f"Unexpected Kafka request of type {name} during SASL handshake."
            self.state = SaslState.FAILED
            return AuthenticationStep(
                response=_reply(
                    header, {"error_code": Errors.ILLEGAL_SASL_STATE, "error_message": message}
                ),
                close_reason=message,
            )
        self.state = SaslState.FAILED
        return AuthenticationStep(
            close_reason=f"Unexpected Kafka request of type {name} during SASL handshake."
        )

    def _request_body(
        self,
        api_key: ApiKey,
        name: str,
        header: RequestHeader,
        frame: memoryview,
        offset: int,
    ) -> dict[str, Any] | AuthenticationStep:
        """The decoded body of a SaslHandshake or SaslAuthenticate request, or the failed
        step that closes the connection: a version kafpy does not serve, or a body that
        does not decode."""
        version = header.api_version
        lowest, highest = _VERSIONS[api_key]
        if not lowest <= version <= highest:
            self.state = SaslState.FAILED
            return AuthenticationStep(
                close_reason=f"unsupported {name} version {version} (kafpy serves {lowest} to {highest})"
            )
        body = _decode(api_key, version, frame, offset)
        if body is None:
            self.state = SaslState.FAILED
            return AuthenticationStep(close_reason=f"the {name} request does not decode")
        return body

    def _gssapi_without_handshake(self) -> bool:
        """Kafka 0.9 clients send their first GSSAPI token with no SaslHandshake: a first
        frame that is no Kafka request is taken as one when the listener enables GSSAPI
        (then raw tokens follow, as after SaslHandshake v0)."""
        if (
            self.state is not SaslState.INITIAL_REQUEST
            or GSSAPI not in self.config.enabled_mechanisms
        ):
            return False
        self.mechanism = GSSAPI
        self._server = self.config.create_sasl_server(GSSAPI)
        self.state = SaslState.RAW_TOKEN
        return True

    # -- handshake ----------------------------------------------------------------------------

    def _handshake(
        self, header: RequestHeader, frame: memoryview, offset: int
    ) -> AuthenticationStep:
        version = header.api_version
        body = self._request_body(ApiKey.SASL_HANDSHAKE, "SaslHandshake", header, frame, offset)
        if isinstance(body, AuthenticationStep):
            return body
        mechanism = str(body["mechanism"])
        enabled = list(self.config.enabled_mechanisms)
        if mechanism not in enabled or (self._reauthenticating and mechanism != self.mechanism):
            self.state = SaslState.FAILED
            why = (
                f"SASL mechanism change from {self.mechanism} to {mechanism} is not allowed "
                "during re-authentication"
                if self._reauthenticating and mechanism in enabled
                else f"Unsupported SASL mechanism {mechanism} (enabled: {', '.join(enabled)})"
            )
            return AuthenticationStep(
                response=_reply(
                    header, {"error_code": Errors.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
                ),
                close_reason=why,
                failed_authentication=True,
            )
        self.mechanism = mechanism
        self._server = self.config.create_sasl_server(mechanism)
        self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.RAW_TOKEN
        return AuthenticationStep(
            response=_reply(header, {"error_code": Errors.NONE, "mechanisms": enabled})
        )

    # -- tokens -------------------------------------------------------------------------------

    def _evaluate(self, token: bytes, now_ms: int) -> tuple[bytes | None, str | None]:
        """The server's answer, or None and the failure message."""
        assert self._server is not None
        try:
            answer = self._server.evaluate_response(token)
        except SaslAuthenticationError as e:
            self.state = SaslState.FAILED
            return None, str(e)
        if self._server.is_complete():
            principal = KafkaPrincipal(
                USER_TYPE, self._server.authorization_id, self._server.token_authenticated
            )
            if self._reauthenticating and principal != self.principal:
                self.state = SaslState.FAILED
                return None, (
                    f"Cannot change principals during re-authentication from {self.principal}: "
                    f"{principal}"
                )
            self.principal = principal
            self.state = SaslState.COMPLETE
            self._reauthenticating = False
            self._session_lifetime_ms = self._session_lifetime(now_ms)
            if self._session_lifetime_ms is not None:
                self._session_expiration_ms = now_ms + self._session_lifetime_ms
        return answer, None

    def _session_lifetime(self, now_ms: int) -> int | None:
        """Kafka's calcCompletionTimesAndReturnSessionLifetimeMs: the session ends with
        `connections.max.reauth.ms` and with the credential (a delegation token's expiry),
        whichever comes first; None when neither limits it."""
        assert self._server is not None
        expiry = self._server.credential_expiration_ms
        max_reauth = self.config.max_reauth_ms_for(self.mechanism)
        if expiry is None:
            return max_reauth if max_reauth > 0 else None
        left = expiry - now_ms
        return max(0, min(left, max_reauth) if max_reauth > 0 else left)

    def _raw_token(self, token: bytes, now_ms: int) -> AuthenticationStep:
        answer, failure = self._evaluate(token, now_ms)
        if answer is None:
            return AuthenticationStep(close_reason=failure, failed_authentication=True)
        if self.complete and not answer:
            return AuthenticationStep()  # PLAIN's empty answer is not sent in v0
        return AuthenticationStep(response=[_SIZE.pack(len(answer)), answer])

    def _authenticate(
        self, header: RequestHeader, frame: memoryview, offset: int, now_ms: int
    ) -> AuthenticationStep:
        body = self._request_body(
            ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate", header, frame, offset
        )
        if isinstance(body, AuthenticationStep):
            return body
        answer, failure = self._evaluate(bytes(body["auth_bytes"]), now_ms)
        if answer is None:
            return AuthenticationStep(
                response=_reply(
                    header,
                    {"error_code": Errors.SASL_AUTHENTICATION_FAILED, "error_message": failure},
                ),
                close_reason=failure,
                failed_authentication=True,
            )
        lifetime = (self._session_lifetime_ms or 0) if self.complete else 0
        return AuthenticationStep(
            response=_reply(
                header,
                {"error_code": Errors.NONE, "auth_bytes": answer, "session_lifetime_ms": lifetime},
            )
        )


def _decode(api_key: ApiKey, version: int, frame: memoryview, offset: int) -> dict[str, Any] | None:
    try:
        return REQUESTS[api_key].decode(version, frame, offset)
    except ProtocolDecodeError:
        return None


def _is_api_key(api_key: int) -> bool:
    try:
        ApiKey(api_key)
    except ValueError:
        return False
    return True


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


def _reply(header: RequestHeader, body: Mapping[str, Any]) -> list[bytes | memoryview]:
    """The response frame to the SASL request of `header`, at its version."""
    return encode_response(header.api_key, header.api_version, header.correlation_id, body)
