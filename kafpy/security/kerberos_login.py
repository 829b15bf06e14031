"""KerberosLogin: the Kerberos identity a GSSAPI side logs in with, from the JAAS
configuration as Kafka reads it (Kafka's KerberosLogin over the JDK's Krb5LoginModule),
and the GSS-API credentials it gives.

`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true
keyTab="/etc/kafka/kafka.keytab" principal="kafka/broker1.example.com@EXAMPLE.COM";`
- A broker (acceptor) needs `useKeyTab=true`, `storeKey=true`, `keyTab` and `principal`:
  its keys come from the key table, for that principal only.
- A client (initiator) logs in from `keyTab` with `useKeyTab=true`, or uses the ticket
  cache (`useTicketCache=true`, `KRB5CCNAME` or the default cache) as after `kinit`.
- The service name (the principal's first component, `kafka`) comes from the JAAS option
  `serviceName` or `sasl.kerberos.service.name`; Kafka refuses neither set, or both set
  and different.

MIT Kerberos reads krb5.conf from `KRB5_CONFIG` (Kafka's JVM: `java.security.krb5.conf`).
The library does the ticket refresh Kafka's login thread does with
`sasl.kerberos.kinit.cmd` and the renew keys: a keytab login gets fresh tickets from the
key table whenever the old ones expire, so those keys are accepted without effect.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.security.jaas_config import LoginModuleEntry

if TYPE_CHECKING:
    import gssapi

GSSAPI = "GSSAPI"
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
SERVICE_NAME_CONFIG = "sasl.kerberos.service.name"
_EXAMPLE = (
    f'{KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true keyTab="/path/kafka.keytab" '
    'principal="kafka/host@REALM";'
)


def require_kerberos_extra(what: str) -> None:
    """InvalidConfigurationError naming the extra unless python-gssapi is installed."""
    try:
        require_extra("kerberos", what)
    except MissingExtraError as e:
        raise InvalidConfigurationError(str(e)) from None


@dataclass(frozen=True)
class KerberosLogin:
    """Who a GSSAPI side is: its principal, its key table (None: the ticket cache) and the
    service name of the brokers' principals."""

    principal: str | None
    keytab: Path | None
    service_name: str

    @classmethod
    def from_jaas(
        cls,
        entries: list[LoginModuleEntry],
        *,
        key: str,
        configured_service_name: str | None,
        acceptor: bool,
    ) -> KerberosLogin:
        """From the Krb5LoginModule entry of a JAAS configuration (`key` names where it came
        from). InvalidConfigurationError naming what is missing or unreadable."""
        entry = next((e for e in entries if e.login_module == KRB5_LOGIN_MODULE), None)
        if entry is None:
            raise InvalidConfigurationError(
                f"{key} has no {KRB5_LOGIN_MODULE} entry, which SASL mechanism GSSAPI needs "
                f"(e.g. {_EXAMPLE})"
            )
        return cls.from_options(
            entry.options,
            key=key,
            configured_service_name=configured_service_name,
            acceptor=acceptor,
        )

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, str],
        *,
        key: str,
        configured_service_name: str | None,
        acceptor: bool,
    ) -> KerberosLogin:
        """From Krb5LoginModule's options (useKeyTab, storeKey, keyTab, principal,
        useTicketCache, serviceName)."""

        def flag(name: str) -> bool:
            return options.get(name, "false").strip().lower() == "true"

        jaas_service_name = options.get("serviceName")
        if (
            jaas_service_name is not None
            and configured_service_name is not None
            and jaas_service_name != configured_service_name
        ):
            raise InvalidConfigurationError(
                "Conflicting serviceName values found in JAAS and Kafka configs value in JAAS "
                f"file {jaas_service_name}, value in Kafka config {configured_service_name}"
            )
        service_name = jaas_service_name or configured_service_name
        if not service_name:
            raise InvalidConfigurationError(
                "No serviceName defined in either JAAS or Kafka config: set "
                f"{SERVICE_NAME_CONFIG} (e.g. kafka) or serviceName in {key}"
            )
        principal = options.get("principal")
        keytab = Path(options["keyTab"]) if "keyTab" in options else None
        use_keytab = flag("useKeyTab")
        if acceptor:
            missing = [
                what
                for what, ok in (
                    ("useKeyTab=true", use_keytab),
                    ("storeKey=true", flag("storeKey")),
                    ('keyTab="..."', keytab is not None),
                    ('principal="..."', principal is not None),
                )
                if not ok
            ]
            if missing:
                raise InvalidConfigurationError(
                    f"{key} cannot give a broker its Kerberos keys: {KRB5_LOGIN_MODULE} needs "
                    f"{', '.join(missing)} (e.g. {_EXAMPLE})"
                )
        elif not use_keytab:
            keytab = None  # the ticket cache, as after kinit
        elif keytab is None or principal is None:
            raise InvalidConfigurationError(
                f"{key} sets useKeyTab=true but not both keyTab and principal (e.g. {_EXAMPLE})"
            )
        if keytab is not None and not os.access(keytab, os.R_OK):
            raise InvalidConfigurationError(
                f"The keyTab {keytab} of {key} does not exist or cannot be read"
            )
        return cls(principal, keytab, service_name)

    def credentials(self, *, acceptor: bool, where: str) -> gssapi.Credentials:
        """The GSS-API credentials of this login: an acceptor's keys from the key table, or
        an initiator's tickets (fetched from the KDC with the key table when needed, into a
        memory cache of its own). InvalidConfigurationError with the library's reason when
        the key table lacks the principal or the KDC refuses the login."""
        import gssapi
        from gssapi.raw.misc import GSSError

        name = (
            gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            if self.principal is not None
            else None
        )
        try:
            if acceptor:
                return gssapi.Credentials(
                    name=name, usage="accept", store={"keytab": str(self.keytab)}
                )
            if self.keytab is None:
                return gssapi.Credentials(name=name, usage="initiate")
            return gssapi.Credentials(
                name=name,
                usage="initiate",
                store={
                    "client_keytab": str(self.keytab),
                    "ccache": f"MEMORY:kafpy-{uuid.uuid4().hex}",
                },
            )
        except GSSError as e:
            raise InvalidConfigurationError(
                f"Could not login as {self.principal or 'the ticket cache principal'} with "
                f"{'the keyTab ' + str(self.keytab) if self.keytab else 'the ticket cache'} "
                f"({where}): {gss_error_text(e)}"
            ) from None


def gss_error_text(error: Exception) -> str:
    """A GSS-API error's major and minor messages on one line."""
    gen = getattr(error, "gen_message", None)
    text = str(gen()) if callable(gen) else str(error)
    return " ".join(text.split())


def default_realm() -> str:
    """krb5.conf's `default_realm`, or "" when there is none (as Kafka's
    defaultKerberosRealm falls back)."""
    import gssapi
    from gssapi.raw.misc import GSSError

    try:
        name = gssapi.Name("kafpy", gssapi.NameType.kerberos_principal)
        canonical = str(name.canonicalize(gssapi.MechType.kerberos))
    except GSSError:
        return ""
    _, _, realm = canonical.partition("@")
    return realm
