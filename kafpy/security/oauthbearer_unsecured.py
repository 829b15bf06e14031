"""Kafka's unsecured OAUTHBEARER tokens: JWS with `"alg":"none"` and no signature, the
broker's validator of them (OAuthBearerUnsecuredValidatorCallbackHandler, Kafka 2.8's only
validator, the default on an OAUTHBEARER listener) and the login that makes them
(OAuthBearerUnsecuredLoginCallbackHandler), with their JAAS options and Kafka's rules.

Such tokens prove nothing (anyone can write one): Kafka ships them for development, and
production needs a validator of signed tokens (kafpy's: oauthbearer_jwks.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.oauthbearer import (
    InvalidClientResponseError,
    OAuthBearerIllegalTokenError,
    OAuthBearerToken,
    validate_extensions,
)

UNSECURED_VALIDATOR_CALLBACK_HANDLER = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredValidatorCallbackHandler"
)
UNSECURED_LOGIN_CALLBACK_HANDLER = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredLoginCallbackHandler"
)

_VALIDATOR = "unsecuredValidator"
PRINCIPAL_CLAIM_NAME_OPTION = _VALIDATOR + "PrincipalClaimName"
SCOPE_CLAIM_NAME_OPTION = _VALIDATOR + "ScopeClaimName"
REQUIRED_SCOPE_OPTION = _VALIDATOR + "RequiredScope"
ALLOWABLE_CLOCK_SKEW_MS_OPTION = _VALIDATOR + "AllowableClockSkewMs"

_LOGIN = "unsecuredLogin"
LOGIN_PRINCIPAL_CLAIM_NAME_OPTION = _LOGIN + "PrincipalClaimName"
LOGIN_LIFETIME_SECONDS_OPTION = _LOGIN + "LifetimeSeconds"
LOGIN_SCOPE_CLAIM_NAME_OPTION = _LOGIN + "ScopeClaimName"
STRING_CLAIM_PREFIX = _LOGIN + "StringClaim_"
NUMBER_CLAIM_PREFIX = _LOGIN + "NumberClaim_"
LIST_CLAIM_PREFIX = _LOGIN + "ListClaim_"
EXTENSION_PREFIX = _LOGIN + "Extension_"

_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")
_INT_MAX, _LONG_MAX = 2**31 - 1, 2**63 - 1


def parse_scope(space_delimited: str, *, key: str) -> list[str]:
    """A space-delimited scope (Kafka's OAuthBearerScopeUtils.parseScope);
    InvalidConfigurationError naming `key` for an item RFC 6749 does not allow."""
    items = []
    for item in space_delimited.split(" "):
        if item:
            if not _SCOPE_ITEM.fullmatch(item):
                raise InvalidConfigurationError(f"Invalid scope value in {key}: {item}")
            items.append(item)
    return items


def java_list(items: list[str]) -> str:
    """A list as Java prints it (`[a, b]`): Kafka reports a missing scope this way."""
    return "[" + ", ".join(items) + "]"


def _java_type(value: object) -> str:
    """The simple name of the Java type Jackson gives a JSON value, for Kafka's messages."""
    if isinstance(value, list):
        return "ArrayList"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, int):
        return "Integer" if -_INT_MAX - 1 <= value <= _INT_MAX else (
            "Long" if -_LONG_MAX - 1 <= value <= _LONG_MAX else "BigInteger"
        )  # fmt: skip
    return "String"


def _jackson_text(value: Any) -> str:
    """Jackson's asText of a scalar or an object (an object's is empty)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return ""
    return str(value)


def _to_map(split: str) -> dict[str, Any]:
    """One part of a compact serialization as Kafka reads it: Base64 (Kafka 2.8 decodes
    with the basic alphabet, padding optional) of a JSON object whose arrays become lists
    of text, numbers stay numbers and anything else becomes text."""
    try:
        raw = base64.b64decode(split + "=" * (-len(split) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise OAuthBearerIllegalTokenError("malformed Base64 URL encoded value") from None
    try:
        node = json.loads(raw) if raw else {}
    except (ValueError, UnicodeDecodeError):
        raise OAuthBearerIllegalTokenError("malformed JSON") from None
    if not isinstance(node, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, list):
            out[key] = [_jackson_text(v) for v in value]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = value
        else:
            out[key] = _jackson_text(value)
    return out


def _claim(claims: Mapping[str, Any], name: str, kind: str) -> Any:
    """A claim that must be of `kind` (String, Number or List) when present."""
    value = claims.get(name)
    if value is None:
        return None
    ok = {
        "String": isinstance(value, str),
        "Number": isinstance(value, (int, float)),
        "List": isinstance(value, list),
    }[kind]
    if not ok:
        raise OAuthBearerIllegalTokenError(
            f"The '{name}' claim was not of type {kind}: {_java_type(value)}"
        )
    return value


@dataclass(frozen=True)
class OAuthBearerUnsecuredJws:
    """An unsecured JWS read as Kafka reads it: header and claims, the principal (its
    principal claim), the scope (its scope claim: a string is one item, a list its items)
    and the expiry and issue time in ms."""

    token: OAuthBearerToken
    header: dict[str, Any]
    claims: dict[str, Any]

    @classmethod
    def parse(
        cls, compact: str, principal_claim_name: str = "sub", scope_claim_name: str = "scope"
    ) -> OAuthBearerUnsecuredJws:
        """OAuthBearerIllegalTokenError when it is not an unsecured JWS Kafka accepts."""
        if ".." in compact:
            raise OAuthBearerIllegalTokenError("Malformed compact serialization contains '..'")
        splits = compact.split(".")
        if len(splits) != 3:
            raise OAuthBearerIllegalTokenError(
                "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                "values"
            )
        header, claims = _to_map(splits[0]), _to_map(splits[1])
        alg = header.get("alg")
        if alg is None:
            raise OAuthBearerIllegalTokenError("JWS header must have an Algorithm value")
        if _jackson_text(alg) != "none":
            raise OAuthBearerIllegalTokenError("Unsecured JWS must have 'none' for an algorithm")
        if splits[2]:
            raise OAuthBearerIllegalTokenError("Unsecured JWS must not contain a digital signature")
        scope = _scope(claims, scope_claim_name)
        exp = _claim(claims, "exp", "Number")
        if exp is None:
            raise OAuthBearerIllegalTokenError("No expiration time in JWT")
        principal = _claim(claims, principal_claim_name, "String")
        if principal is None or not principal.strip():
            raise OAuthBearerIllegalTokenError(
                "No principal name in JWT claim: " + principal_claim_name
            )
        iat = _claim(claims, "iat", "Number")
        token = OAuthBearerToken(
            compact,
            principal,
            scope,
            round(exp * 1000),
            None if iat is None else round(iat * 1000),
        )
        return cls(token, header, claims)


def _scope(claims: Mapping[str, Any], name: str) -> frozenset[str]:
    value = claims.get(name)
    if isinstance(value, str):
        return frozenset([value.strip()]) if value.strip() else frozenset()
    items = _claim(claims, name, "List") or []
    return frozenset(item.strip() for item in items if item and item.strip())


class OAuthBearerUnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, configured by the listener's
    OAuthBearerLoginModule options `unsecuredValidatorPrincipalClaimName` (default `sub`),
    `unsecuredValidatorScopeClaimName` (default `scope`), `unsecuredValidatorRequiredScope`
    (space-delimited, default none) and `unsecuredValidatorAllowableClockSkewMs` (default
    0). Every SASL extension is accepted."""

    def __init__(self, options: Mapping[str, str], *, key: str = "sasl.jaas.config") -> None:
        self.principal_claim_name = _name_option(options, PRINCIPAL_CLAIM_NAME_OPTION, "sub")
        self.scope_claim_name = _name_option(options, SCOPE_CLAIM_NAME_OPTION, "scope")
        required = options.get(REQUIRED_SCOPE_OPTION, "").strip()
        self.required_scope = parse_scope(required, key=f"{REQUIRED_SCOPE_OPTION} of {key}")
        self.allowable_clock_skew_ms = clock_skew_option(
            options, ALLOWABLE_CLOCK_SKEW_MS_OPTION, key=key
        )

    def validate(self, token_value: str, now_ms: int) -> OAuthBearerToken:
        jws = OAuthBearerUnsecuredJws.parse(
            token_value, self.principal_claim_name, self.scope_claim_name
        )
        claims, skew = jws.claims, self.allowable_clock_skew_ms
        iat, exp = claims.get("iat"), claims["exp"]
        if iat is not None and 1000 * iat > now_ms + skew:
            raise OAuthBearerIllegalTokenError(
                f"The Issued At value ({float(iat):f} seconds) was after the indicated time "
                f"({now_ms} ms) plus allowable clock skew ({skew} ms)"
            )
        if now_ms - skew >= 1000 * exp:
            raise OAuthBearerIllegalTokenError(
                f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on "
                f"or after the Expiration Time value ({float(exp):f} seconds)"
            )
        if iat is not None and exp <= iat:
            raise OAuthBearerIllegalTokenError(
                f"The Expiration Time time ({float(exp):f} seconds) was not after the Issued At "
                f"time ({float(iat):f} seconds)"
            )
        ensure_scope(jws.token.scope, self.required_scope)
        return jws.token

    def invalid_extensions(
        self, token: OAuthBearerToken, extensions: Mapping[str, str]
    ) -> dict[str, str]:
        return {}


def ensure_scope(scope: frozenset[str], required: list[str]) -> None:
    """OAuthBearerIllegalTokenError (`insufficient_scope`) naming the required scope when
    `scope` lacks an item of it."""
    for item in required:
        if item not in scope:
            raise OAuthBearerIllegalTokenError(
                f"The provided scope ({java_list(sorted(scope))}) was mising a required scope "
                f"({item}).  All required scope elements: {java_list(required)}",
                failure_scope=java_list(required),
            )


def _name_option(options: Mapping[str, str], key: str, default: str) -> str:
    value = options.get(key, "").strip()
    return value or default


def clock_skew_option(options: Mapping[str, str], name: str, *, key: str) -> int:
    """A non-negative whole number of ms (default 0); InvalidConfigurationError naming the
    option and `key` otherwise."""
    raw = options.get(name, "").strip()
    try:
        value = int(raw) if raw else 0
    except ValueError:
        value = -1
    if value < 0 or value > _INT_MAX:
        raise InvalidConfigurationError(
            f"Invalid value {raw} for {name} in {key}: the allowable clock skew must be a "
            "whole, non-negative number of milliseconds"
        )
    return value


# -- the login: tokens this side makes ---------------------------------------------------


class OAuthBearerUnsecuredLogin:
    """Kafka's OAuthBearerUnsecuredLoginCallbackHandler: an unsecured token from the
    OAuthBearerLoginModule options (`unsecuredLoginStringClaim_<name>`,
    `unsecuredLoginNumberClaim_<name>`, `unsecuredLoginListClaim_<name>` with its first
    character as delimiter, `unsecuredLoginPrincipalClaimName`, `unsecuredLoginScopeClaimName`,
    `unsecuredLoginLifetimeSeconds` (default 3600) and `unsecuredLoginExtension_<name>`),
    made afresh for each authentication so it is never stale."""

    def __init__(self, options: Mapping[str, str], *, key: str = "sasl.jaas.config") -> None:
        self.options = dict(options)
        self.key = key
        if not any(not name.startswith(EXTENSION_PREFIX) for name in options):
            raise InvalidConfigurationError(
                f"{key} gives no unsecured token to log in with: set "
                f'{STRING_CLAIM_PREFIX}sub="<principal>" in its OAuthBearerLoginModule entry'
                if not options
                else f"Extensions provided in login context without a token ({key})"
            )
        self.principal_claim_name = _name_option(options, LOGIN_PRINCIPAL_CLAIM_NAME_OPTION, "sub")
        self.scope_claim_name = _name_option(options, LOGIN_SCOPE_CLAIM_NAME_OPTION, "scope")
        lifetime = options.get(LOGIN_LIFETIME_SECONDS_OPTION, "3600")
        try:
            self.lifetime_seconds = int(lifetime)
        except ValueError:
            raise InvalidConfigurationError(
                f"Invalid value {lifetime} for {LOGIN_LIFETIME_SECONDS_OPTION} in {key}: it must "
                "be a whole number of seconds"
            ) from None
        self.extensions = {
            name[len(EXTENSION_PREFIX) :]: value
            for name, value in options.items()
            if name.startswith(EXTENSION_PREFIX)
        }
        try:
            validate_extensions(self.extensions)
        except InvalidClientResponseError as e:
            raise InvalidConfigurationError(f"{e} ({key})") from None
        self.token()  # a bad option fails now, not at the first connection

    def token_value(self) -> str:
        return self.token().value

    def token(self, now_s: float | None = None) -> OAuthBearerToken:
        """A new token, issued now (in whole ms, as Kafka's: a finer `iat` could be after
        the validator's clock in ms)."""
        now = _time.time_ns() // 1_000_000 / 1000 if now_s is None else now_s
        claims: dict[str, Any] = {"exp": now + self.lifetime_seconds, "iat": now}
        for name, value in self.options.items():
            for prefix in (STRING_CLAIM_PREFIX, NUMBER_CLAIM_PREFIX, LIST_CLAIM_PREFIX):
                if name.startswith(prefix) and len(name) > len(prefix):
                    claim = name[len(prefix) :]
                    if claim in ("iat", "exp"):
                        raise InvalidConfigurationError(
                            f"Cannot explicitly set the '{claim}' claim ({name} in {self.key})"
                        )
                    claims[claim] = self._claim_value(prefix, name, value)
        header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")))
        body = _b64url(json.dumps(claims, separators=(",", ":")))
        try:
            jws = OAuthBearerUnsecuredJws.parse(
                f"{header}.{body}.", self.principal_claim_name, self.scope_claim_name
            )
        except OAuthBearerIllegalTokenError as e:
            raise InvalidConfigurationError(f"{e.description} ({self.key})") from None
        return jws.token

    def _claim_value(self, prefix: str, name: str, value: str) -> Any:
        if prefix == STRING_CLAIM_PREFIX:
            return value
        if prefix == NUMBER_CLAIM_PREFIX:
            try:
                return float(value)
            except ValueError:
                raise InvalidConfigurationError(
                    f"Invalid value {value} for {name} in {self.key}: it must be a number"
                ) from None
        if len(value) <= 1:
            return []
        delimiter, rest = value[0], value[1:]
        return rest.split(delimiter)


def _b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
