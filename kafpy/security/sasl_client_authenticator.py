"""SaslClientAuthenticator: the client's side of a SASL exchange, mechanism by mechanism
(Kafka's SaslClientAuthenticator): the tokens kafpy's client sends in SaslAuthenticate
requests and its checks of the broker's answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kafpy.common.errors import InvalidConfigurationError, SaslAuthenticationError
from kafpy.security.gssapi_client import GssapiSaslClient
from kafpy.security.kerberos_login import GSSAPI, KerberosLogin
from kafpy.security.oauthbearer import (
    OAUTHBEARER,
    OAuthBearerClientInitialResponse,
    OAuthBearerLogin,
    OAuthBearerSaslClient,
)
from kafpy.security.plain import PLAIN, plain_client_message
from kafpy.security.scram import TOKEN_AUTH_CONFIG, ScramMechanism, ScramSaslClient

if TYPE_CHECKING:
    import gssapi


class _Credentials(Protocol):
    @property
    def mechanism(self) -> str: ...
    @property
    def username(self) -> str: ...
    @property
    def password(self) -> str: ...
    @property
    def token_auth(self) -> bool: ...
    @property
    def kerberos(self) -> KerberosLogin | None: ...
    @property
    def oauthbearer(self) -> OAuthBearerLogin | None: ...


class SaslClientAuthenticator:
    """One exchange: `first_message()`, then `evaluate_challenge(answer)` for each broker
    answer, which gives the next token or None once authentication is complete. `host` is
    the broker's, which GSSAPI's target principal names."""

    def __init__(self, credentials: _Credentials, host: str = "") -> None:
        self.mechanism = credentials.mechanism
        self._scram: ScramSaslClient | None = None
        self._plain: bytes | None = None
        self._oauthbearer: OAuthBearerSaslClient | None = None
        self._gssapi: GssapiSaslClient | None = None
        if credentials.mechanism == GSSAPI:
            assert credentials.kerberos is not None, "GSSAPI credentials carry their login"
            self._gssapi = _gssapi_client(credentials.kerberos, host)
        elif credentials.mechanism == PLAIN:
            self._plain = plain_client_message(credentials.username, credentials.password)
        elif credentials.mechanism == OAUTHBEARER:
            login = credentials.oauthbearer
            if login is None:
                raise SaslAuthenticationError("OAUTHBEARER needs a token and none was given")
            self._oauthbearer = OAuthBearerSaslClient(
                OAuthBearerClientInitialResponse(
                    login.token_value(), extensions=dict(login.extensions)
                )
            )
        else:
            scram = ScramMechanism.for_name(credentials.mechanism)
            if scram is None:
                raise SaslAuthenticationError(
                    f"kafpy's client does not speak SASL mechanism {credentials.mechanism}"
                )
            extensions = {TOKEN_AUTH_CONFIG: "true"} if credentials.token_auth else None
            self._scram = ScramSaslClient(
                scram, credentials.username, credentials.password, extensions=extensions
            )

    def first_message(self) -> bytes:
        """The first token (for GSSAPI this may ask the KDC for a ticket: blocking I/O)."""
        if self._gssapi is not None:
            return self._gssapi.first_message()
        if self._plain is not None:
            return self._plain
        if self._oauthbearer is not None:
            return self._oauthbearer.first_message()
        assert self._scram is not None
        return self._scram.first_message()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._gssapi is not None:
            return self._gssapi.evaluate_challenge(challenge)
        if self._oauthbearer is not None:
            # an error JSON is answered with \x01, after which the broker fails the exchange
            answer = self._oauthbearer.evaluate_challenge(challenge)
            return None if self._oauthbearer.is_complete() else answer
        if self._scram is None or self._scram.is_complete():
            return None
        token = self._scram.evaluate_challenge(challenge)
        return None if self._scram.is_complete() else token


_kerberos_credentials: dict[KerberosLogin, gssapi.Credentials] = {}
"""One set of credentials per login, so each connection does not log in again (the
library renews a keytab login's tickets when they expire)."""


def _gssapi_client(login: KerberosLogin, host: str) -> GssapiSaslClient:
    credentials = _kerberos_credentials.get(login)
    if credentials is None:
        try:
            credentials = login.credentials(acceptor=False, where=f"SASL/GSSAPI to {host}")
        except InvalidConfigurationError as e:
            raise SaslAuthenticationError(str(e)) from None
        _kerberos_credentials[login] = credentials
    return GssapiSaslClient(login, credentials, host)
