"""GssapiSaslClient: the client's side of SASL/GSSAPI (Kerberos V5, RFC 4752), as Kafka's
client runs it through the JDK's GSSAPI SaslClient: kafpy's tools and the broker's own
connections to other brokers (`sasl.mechanism.inter.broker.protocol=GSSAPI`).

The target is the host-based service `<sasl.kerberos.service.name>@<broker host>` (the
broker's principal `kafka/<host>@REALM`); the client establishes the security context
with mutual authentication, then reads the broker's wrapped security-layer offer and
answers with "no security layer" and no authorization id (Kafka's client asks for none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafpy.common.errors import SaslAuthenticationError
from kafpy.security.gssapi_server import (
    NO_SECURITY_LAYER,
    layers_message,
    parse_layers_message,
)
from kafpy.security.kerberos_login import KerberosLogin, gss_error_text

if TYPE_CHECKING:
    import gssapi


class GssapiSaslClient:
    """One GSSAPI exchange with the broker at `host`: `first_message()`, then
    `evaluate_challenge(answer)` for each answer, None once complete."""

    def __init__(self, login: KerberosLogin, credentials: gssapi.Credentials, host: str) -> None:
        import gssapi

        target = gssapi.Name(f"{login.service_name}@{host}", gssapi.NameType.hostbased_service)
        self._context = gssapi.SecurityContext(
            name=target,
            creds=credentials,
            usage="initiate",
            mech=gssapi.MechType.kerberos,
            flags=gssapi.RequirementFlag.mutual_authentication,
        )
        self._target = f"{login.service_name}@{host}"
        self._final = False
        self._complete = False

    def is_complete(self) -> bool:
        return self._complete

    def first_message(self) -> bytes:
        return self._step(None)

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._complete:
            return None
        if not self._final:
            return self._step(challenge)
        try:
            layers, _, _ = parse_layers_message(bytes(self._context.unwrap(challenge).message))
        except Exception as e:  # GSSError or a short message
            raise SaslAuthenticationError(
                f"GSSAPI: the broker's security layer offer does not unwrap: {gss_error_text(e)}"
            ) from None
        if not layers & NO_SECURITY_LAYER:
            raise SaslAuthenticationError(
                f"GSSAPI: the broker offers no 'no security layer' option (0x{layers:02x}), "
                "the only one Kafka supports"
            )
        self._complete = True
        return bytes(self._context.wrap(layers_message(NO_SECURITY_LAYER, 0), False).message)

    def _step(self, token: bytes | None) -> bytes:
        from gssapi.raw.misc import GSSError

        try:
            out = self._context.step(token)
        except GSSError as e:
            raise SaslAuthenticationError(
                f"GSSAPI could not authenticate to {self._target}: {gss_error_text(e)}"
            ) from None
        if self._context.complete:
            self._final = True
        return out or b""
