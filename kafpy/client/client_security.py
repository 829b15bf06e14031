"""ClientSecurity: how kafpy's client secures its connections (`security.protocol`, the
`ssl.*` keys and the `sasl.*` keys of Kafka's clients), read from client properties.

SASL credentials come from `sasl.jaas.config` (the Java client's key: PlainLoginModule or
ScramLoginModule with username and password) or `sasl.username`/`sasl.password`
(librdkafka's); `sasl.mechanism` is GSSAPI (Kafka's default), PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 or OAUTHBEARER. GSSAPI (the `kerberos` extra) logs in with
Krb5LoginModule's keyTab and principal (or the ticket cache) from `sasl.jaas.config` and
`sasl.kerberos.service.name`, or librdkafka's `sasl.kerberos.keytab`,
`sasl.kerberos.principal` and `sasl.kerberos.service.name` (default kafka). An
OAUTHBEARER token is an unsecured one made for each connection from
OAuthBearerLoginModule's `unsecuredLogin*` options (the Java client's) or from
`sasl.oauthbearer.config` with `enable.sasl.oauthbearer.unsecure.jwt=true` (librdkafka's),
or a token given in code (`SaslCredentials(OAUTHBEARER, oauthbearer=OAuthBearerGivenToken(...))`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.jaas_config import SCRAM_LOGIN_MODULE, login_credentials, parse_jaas_config
from kafpy.security.kerberos_login import (
    GSSAPI,
    KRB5_LOGIN_MODULE,
    SERVICE_NAME_CONFIG,
    KerberosLogin,
)
from kafpy.security.oauthbearer import OAUTHBEARER, OAUTHBEARER_LOGIN_MODULE, OAuthBearerLogin
from kafpy.security.oauthbearer_unsecured import (
    EXTENSION_PREFIX,
    LIST_CLAIM_PREFIX,
    LOGIN_LIFETIME_SECONDS_OPTION,
    LOGIN_PRINCIPAL_CLAIM_NAME_OPTION,
    LOGIN_SCOPE_CLAIM_NAME_OPTION,
    STRING_CLAIM_PREFIX,
    OAuthBearerUnsecuredLogin,
)
from kafpy.security.sasl_configs import (
    ensure_callback_class_supported,
    ensure_sasl_mechanisms_supported,
)
from kafpy.security.scram import TOKEN_AUTH_CONFIG
from kafpy.security.ssl_configs import SSL_CONFIG_DEF
from kafpy.security.ssl_factory import SslFactory, SslMode

CLIENT_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""The `security.protocol` values kafpy's client can honour."""


@dataclass(frozen=True)
class SaslCredentials:
    """The SASL mechanism a client authenticates with, and its user and password;
    `token_auth` (ScramLoginModule's `tokenauth="true"`) for a delegation token: its id as
    the user, the base64 of its HMAC as the password; for OAUTHBEARER, where its tokens
    come from (`oauthbearer`); for GSSAPI, `kerberos` is the login (the principal is also
    the user; no password)."""

    mechanism: str
    username: str = ""
    password: str = field(default="", repr=False)
    token_auth: bool = False
    oauthbearer: OAuthBearerLogin | None = None
    kerberos: KerberosLogin | None = None

    @classmethod
    def from_config(cls, props: Mapping[str, object], *, source: str) -> SaslCredentials:
        """From `sasl.mechanism` and `sasl.jaas.config` or `sasl.username`/`sasl.password`;
        InvalidConfigurationError naming the key when something is missing or unsupported."""
        mechanism = str(props.get("sasl.mechanism", "GSSAPI")).strip().upper()
        ensure_sasl_mechanisms_supported([mechanism], f"sasl.mechanism in {source}")
        if mechanism == GSSAPI:
            return cls._kerberos(props, source=source)
        if mechanism == OAUTHBEARER:
            return cls(mechanism, oauthbearer=_oauthbearer_login(props, source))
        jaas = props.get("sasl.jaas.config")
        if jaas is not None:
            entries = parse_jaas_config(str(jaas), key=f"sasl.jaas.config in {source}")
            found = login_credentials(entries)
            if found is None:
                raise InvalidConfigurationError(
                    f"sasl.jaas.config in {source} has no username and password options"
                )
            token_auth = any(
                e.options.get(TOKEN_AUTH_CONFIG, "").lower() == "true" for e in entries
            )
            return cls(mechanism, *found, token_auth=token_auth)
        username, password = props.get("sasl.username"), props.get("sasl.password")
        if username is None or password is None:
            raise InvalidConfigurationError(
                f"SASL needs credentials in {source}: set sasl.jaas.config (e.g. "
                f'{SCRAM_LOGIN_MODULE} required username="alice" password="...";) or '
                "sasl.username and sasl.password"
            )
        return cls(mechanism, str(username), str(password))

    @classmethod
    def _kerberos(cls, props: Mapping[str, object], *, source: str) -> SaslCredentials:
        service_name = props.get(SERVICE_NAME_CONFIG)
        jaas = props.get("sasl.jaas.config")
        if jaas is not None:
            key = f"sasl.jaas.config in {source}"
            login = KerberosLogin.from_jaas(
                parse_jaas_config(str(jaas), key=key),
                key=key,
                configured_service_name=None if service_name is None else str(service_name),
                acceptor=False,
            )
        else:  # librdkafka's keys
            keytab = props.get("sasl.kerberos.keytab")
            principal = props.get("sasl.kerberos.principal")
            if keytab is None and principal is None:
                raise InvalidConfigurationError(
                    f"sasl.mechanism in {source} is GSSAPI, which needs a Kerberos login: set "
                    f"sasl.jaas.config (e.g. {KRB5_LOGIN_MODULE} required useKeyTab=true "
                    'keyTab="/path/client.keytab" principal="alice@EXAMPLE.COM"; or '
                    "useTicketCache=true; after kinit) or sasl.kerberos.keytab and "
                    "sasl.kerberos.principal"
                )
            options = {"useKeyTab": str(keytab is not None).lower()}
            if keytab is not None:
                options["keyTab"] = str(keytab)
            if principal is not None:
                options["principal"] = str(principal)
            login = KerberosLogin.from_options(
                options,
                key=f"sasl.kerberos.keytab and sasl.kerberos.principal in {source}",
                configured_service_name=str(service_name or "kafka"),
                acceptor=False,
            )
        return cls(GSSAPI, login.principal or "", "", kerberos=login)


def _oauthbearer_login(props: Mapping[str, object], source: str) -> OAuthBearerUnsecuredLogin:
    """The unsecured token login of a client's properties: OAuthBearerLoginModule's options
    in `sasl.jaas.config`, else librdkafka's `sasl.oauthbearer.config` (`principal=...
    [scope=a,b] [lifeSeconds=N] [principalClaimName=...] [scopeClaimName=...]
    [extension_<name>=...]`, with `enable.sasl.oauthbearer.unsecure.jwt=true`)."""
    for key in ("sasl.login.callback.handler.class", "sasl.login.class"):
        value = props.get(key)
        ensure_callback_class_supported(
            key, None if value is None else str(value), OAUTHBEARER, where=f"{key} in {source}"
        )
    jaas = props.get("sasl.jaas.config")
    if jaas is not None:
        key = f"sasl.jaas.config in {source}"
        entries = parse_jaas_config(str(jaas), key=key)
        if len(entries) != 1 or entries[0].login_module != OAUTHBEARER_LOGIN_MODULE:
            raise InvalidConfigurationError(
                f"{key} must hold one {OAUTHBEARER_LOGIN_MODULE} entry for OAUTHBEARER"
            )
        return OAuthBearerUnsecuredLogin(entries[0].options, key=key)
    config = props.get("sasl.oauthbearer.config")
    unsecure = str(props.get("enable.sasl.oauthbearer.unsecure.jwt", "false")).lower() == "true"
    if config is None or not unsecure:
        raise InvalidConfigurationError(
            f"OAUTHBEARER needs a token in {source}: set sasl.jaas.config to "
            f'{OAUTHBEARER_LOGIN_MODULE} required unsecuredLoginStringClaim_sub="alice"; or '
            "sasl.oauthbearer.config=principal=alice with "
            "enable.sasl.oauthbearer.unsecure.jwt=true (kafpy's tools make only unsecured "
            "tokens; a signed one is given in code)"
        )
    key = f"sasl.oauthbearer.config in {source}"
    given: dict[str, str] = {}
    for item in str(config).split():
        name, eq, value = item.partition("=")
        if not eq:
            raise InvalidConfigurationError(f"{key}: expected name=value, got {item}")
        given[name] = value
    principal_claim = given.pop("principalClaimName", "sub")
    scope_claim = given.pop("scopeClaimName", "scope")
    options = {
        LOGIN_PRINCIPAL_CLAIM_NAME_OPTION: principal_claim,
        LOGIN_SCOPE_CLAIM_NAME_OPTION: scope_claim,
    }
    if "principal" not in given:
        raise InvalidConfigurationError(f"{key} needs principal=<name>")
    options[STRING_CLAIM_PREFIX + principal_claim] = given.pop("principal")
    if "scope" in given:
        options[LIST_CLAIM_PREFIX + scope_claim] = "," + given.pop("scope")
    if "lifeSeconds" in given:
        options[LOGIN_LIFETIME_SECONDS_OPTION] = given.pop("lifeSeconds")
    for name in list(given):
        if name.startswith("extension_"):
            options[EXTENSION_PREFIX + name[len("extension_") :]] = given.pop(name)
    if given:
        raise InvalidConfigurationError(
            f"{key} has unknown attribute(s) {', '.join(given)} (librdkafka's are principal, "
            "scope, lifeSeconds, principalClaimName, scopeClaimName and extension_<name>)"
        )
    return OAuthBearerUnsecuredLogin(options, key=key)


@dataclass(frozen=True)
class ClientSecurity:
    """A client's security: the protocol, for SSL its TLS context, for SASL its
    credentials."""

    security_protocol: str = "PLAINTEXT"
    ssl: SslFactory | None = None
    sasl: SaslCredentials | None = None

    @classmethod
    def from_config(cls, props: Mapping[str, object], *, source: str) -> ClientSecurity:
        """From Kafka client properties (`security.protocol`, `ssl.*`); `source` names where
        they came from in messages. Raises InvalidConfigurationError for what kafpy cannot
        honour or read."""
        protocol = str(props.get("security.protocol", "PLAINTEXT")).strip().upper()
        if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise InvalidConfigurationError(
                f"Invalid value {props.get('security.protocol')} for configuration "
                f"security.protocol in {source}: it must be PLAINTEXT, SSL, SASL_PLAINTEXT or "
                "SASL_SSL"
            )
        sasl = (
            SaslCredentials.from_config(props, source=source)
            if protocol.startswith("SASL_")
            else None
        )
        if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
            return cls(protocol, None, sasl)
        ssl_props = {k: v for k, v in props.items() if k in SSL_CONFIG_DEF}
        values = SSL_CONFIG_DEF.parse(ssl_props)
        return cls(protocol, SslFactory(SslMode.CLIENT, values, where=source), sasl)

    @property
    def uses_tls(self) -> bool:
        return self.ssl is not None
