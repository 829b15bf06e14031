"""GssapiSaslServer: the broker's side of SASL/GSSAPI (Kerberos V5, RFC 4752), as Kafka
runs it through the JDK's GSSAPI SaslServer.

The client's tokens first establish a GSS-API security context with the broker's keys
(from the listener's key table); the server answers each with the context's token. Once
the context is established the client sends an empty token and the server answers with a
wrapped (integrity-protected) four bytes: the security layers it offers (Kafka offers only
"no security layer", 0x01) and its largest receive buffer (65536). The client answers with
a wrapped four bytes of its own: the layer it chose and its buffer size, then optionally
an authorization id. Kafka authorizes the authenticated principal itself (the
authorization id asked for is ignored), and its KafkaPrincipal is the principal's short
name under `sasl.kerberos.principal.to.local.rules`.

A client whose ticket the broker cannot accept (another key version, another service, a
forged or replayed token) gets SASL_AUTHENTICATION_FAILED with Kafka's message, which does
not say why; the broker logs the Kerberos reason.

python-gssapi (the `kerberos` extra) is imported when a listener enables GSSAPI.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafpy.common.errors import SaslAuthenticationError
from kafpy.common.logger import component_logger
from kafpy.security.kerberos_login import GSSAPI, KerberosLogin, default_realm, gss_error_text
from kafpy.security.kerberos_short_namer import (
    BadFormatString,
    KerberosName,
    KerberosShortNamer,
    NoMatchingRule,
)

if TYPE_CHECKING:
    import gssapi

NO_SECURITY_LAYER = 0x01
"""RFC 4752's bit for "no security layer", the only one Kafka offers."""
MAX_RECEIVE_BUFFER = 65536
"""The JDK's default `javax.security.sasl.maxbuffer`, which the server states."""

_LAYERS = struct.Struct(">I")
_log = component_logger("kafpy.security.gssapi_server", "GssapiSaslServer")


def layers_message(layers: int, max_buffer: int) -> bytes:
    """RFC 4752's four bytes: a layers bitmask, then a 3-byte big-endian buffer size."""
    return _LAYERS.pack((layers << 24) | (max_buffer & 0xFFFFFF))


def parse_layers_message(message: bytes) -> tuple[int, int, str | None]:
    """(layers, max buffer, authorization id or None) of an RFC 4752 message; ValueError
    for one shorter than four bytes."""
    if len(message) < 4:
        raise ValueError(f"the security layer message has {len(message)} bytes, not at least 4")
    (word,) = _LAYERS.unpack_from(message)
    authzid = message[4:].decode("utf-8") if len(message) > 4 else None
    return word >> 24, word & 0xFFFFFF, authzid


@dataclass
class GssapiServerConfig:
    """What a listener's GSSAPI needs: the acceptor credentials (its principal's keys) and
    the short namer; built at start-up, so a bad key table or rule fails there. Two are
    equal when built from the same login and rules (a dynamic update changing neither
    keeps the listener's)."""

    login: KerberosLogin
    rules: tuple[str, ...] | None
    listener_name: str
    credentials: gssapi.Credentials = field(compare=False, repr=False)
    short_namer: KerberosShortNamer = field(compare=False)

    @classmethod
    def create(
        cls, login: KerberosLogin, rules: list[str] | None, *, listener_name: str
    ) -> GssapiServerConfig:
        """Load the keys of `login`'s principal from its key table and parse the rules;
        InvalidConfigurationError naming what is wrong."""
        credentials = login.credentials(acceptor=True, where=f"listener {listener_name}")
        short_namer = KerberosShortNamer.from_rules(default_realm(), rules)
        frozen_rules = tuple(rules) if rules is not None else None
        return cls(login, frozen_rules, listener_name, credentials, short_namer)

    def create_sasl_server(self) -> GssapiSaslServer:
        return GssapiSaslServer(self.credentials, self.short_namer)


class GssapiSaslServer:
    """One GSSAPI exchange on the broker; `authorization_id` is the client's short name once
    complete, `kerberos_principal` its full Kerberos principal."""

    token_authenticated = False
    credential_expiration_ms: int | None = None  # the JDK's server states no lifetime

    def __init__(self, credentials: gssapi.Credentials, short_namer: KerberosShortNamer) -> None:
        import gssapi

        self._context = gssapi.SecurityContext(creds=credentials, usage="accept")
        self._short_namer = short_namer
        self._stage = 0  # 0: context exchange, 1: send the layers, 2: read the client's choice
        self._complete = False
        self.authorization_id = ""
        self.kerberos_principal = ""

    @property
    def mechanism_name(self) -> str:
        return GSSAPI

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_response(self, response: bytes) -> bytes:
        from gssapi.raw.misc import GSSError

        try:
            if self._stage == 1:
                return self._offer_layers(response)
            if self._stage == 2:
                return self._accept_layer(response)
            token = self._context.step(response)
            if not self._context.complete:
                return token or b""
            self._stage = 1
            self.kerberos_principal = str(self._context.initiator_name)
            return token if token else self._offer_layers(b"")
        except (GSSError, ValueError) as e:
            reason = gss_error_text(e) if isinstance(e, GSSError) else str(e)
            _log.info("GSSAPI authentication failed: %s", reason)
            raise SaslAuthenticationError(
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {GSSAPI}"
            ) from None

    def _offer_layers(self, response: bytes) -> bytes:
        if response:
            raise ValueError("the client sent data where the empty token ends the context exchange")
        self._stage = 2
        offer = layers_message(NO_SECURITY_LAYER, MAX_RECEIVE_BUFFER)
        return bytes(self._context.wrap(offer, False).message)

    def _accept_layer(self, response: bytes) -> bytes:
        layers, _, authzid = parse_layers_message(bytes(self._context.unwrap(response).message))
        if not layers & NO_SECURITY_LAYER:
            raise ValueError(f"the client selected an unsupported security layer (0x{layers:02x})")
        _log.info(
            "Successfully authenticated client: authenticationID=%s; authorizationID=%s.",
            self.kerberos_principal,
            authzid or self.kerberos_principal,
        )
        try:
            self.authorization_id = self._short_namer.short_name(
                KerberosName.parse(self.kerberos_principal)
            )
        except (NoMatchingRule, BadFormatString, ValueError) as e:
            _log.error("Failed to set name for '%s': %s", self.kerberos_principal, e)
            raise SaslAuthenticationError(
                f"Failed to set name for '{self.kerberos_principal}' based on Kerberos "
                "authentication rules."
            ) from None
        self._complete = True
        return b""
