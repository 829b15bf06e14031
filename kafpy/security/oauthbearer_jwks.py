"""kafpy's validator of signed OAUTHBEARER tokens against a JSON Web Key Set (a kafpy
extension: Kafka 2.8 ships only the unsecured validator and leaves signed tokens to a
custom callback class).

A listener uses it by naming it as its OAUTHBEARER server callback handler,
`listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class=` JWKS_VALIDATOR_
CALLBACK_HANDLER, with these options in the listener's OAuthBearerLoginModule entry:

- `kafpyJwksUrl` (required): the key set, `file://...` or `https://...`, read at start-up
  (a broker that cannot read it does not start) and again, off the event loop, when a
  token names a key it does not hold or `kafpyJwksRefreshMs` (default 3600000) passed;
- `kafpyJwksAlgorithms`: the signature algorithms accepted (default `RS256 ES256`; `none`
  and the HMAC ones are refused);
- `kafpyJwksIssuer`, `kafpyJwksAudience`: when set, the `iss` claim must equal it and the
  `aud` claim must hold it;
- `kafpyJwksPrincipalClaimName` (default `sub`), `kafpyJwksScopeClaimName` (default
  `scope`; a string is split at spaces, RFC 8693), `kafpyJwksRequiredScope` and
  `kafpyJwksAllowableClockSkewMs`, as the unsecured validator's options.

Tokens must carry `exp`; `iat` and `nbf` are checked when present. A refused token gets
Kafka's error JSON, as with the unsecured validator. The signatures are checked with the
cryptography library: without `kafpy[crypto]` the listener is refused at start-up.
"""

from __future__ import annotations

import json
import threading
import time as _time
import urllib.request
from collections.abc import Mapping
from typing import Any

import jwt

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.common.logger import component_logger
from kafpy.security.oauthbearer import OAuthBearerIllegalTokenError, OAuthBearerToken
from kafpy.security.oauthbearer_unsecured import clock_skew_option, ensure_scope, parse_scope

JWKS_VALIDATOR_CALLBACK_HANDLER = "kafpy.security.oauthbearer_jwks.OAuthBearerJwksValidator"
"""The class name a listener's OAUTHBEARER server callback handler key gives to use it."""

_PREFIX = "kafpyJwks"
URL_OPTION = _PREFIX + "Url"
ALGORITHMS_OPTION = _PREFIX + "Algorithms"
ISSUER_OPTION = _PREFIX + "Issuer"
AUDIENCE_OPTION = _PREFIX + "Audience"
REFRESH_MS_OPTION = _PREFIX + "RefreshMs"
PRINCIPAL_CLAIM_NAME_OPTION = _PREFIX + "PrincipalClaimName"
SCOPE_CLAIM_NAME_OPTION = _PREFIX + "ScopeClaimName"
REQUIRED_SCOPE_OPTION = _PREFIX + "RequiredScope"
ALLOWABLE_CLOCK_SKEW_MS_OPTION = _PREFIX + "AllowableClockSkewMs"

SIGNED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                     "ES512", "EdDSA")  # fmt: skip
"""The asymmetric algorithms the validator may be told to accept."""

_REFETCH_AT_MOST_EVERY_S = 10.0
_FETCH_TIMEOUT_S = 10.0


def fetch_jwks(url: str) -> jwt.PyJWKSet:
    """The key set at `url` (file:// or https://); ValueError saying why it cannot be read."""
    if not url.startswith(("file://", "https://")):
        raise ValueError(f"{url} is neither a file:// nor an https:// URL")
    try:
        with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT_S) as response:  # noqa: S310
            data = json.loads(response.read())
        return jwt.PyJWKSet.from_dict(data)
    except (OSError, ValueError, jwt.PyJWKSetError, jwt.PyJWKError) as e:
        raise ValueError(f"cannot read the JSON Web Key Set at {url}: {e}") from None


class OAuthBearerJwksValidator:
    """Validates RS256/ES256 (and other asymmetric) JWTs against a JSON Web Key Set."""

    def __init__(self, options: Mapping[str, str], *, key: str = "sasl.jaas.config") -> None:
        self.log = component_logger(
            "kafpy.security.oauthbearer_jwks.OAuthBearerJwksValidator", "OAuthBearerJwksValidator"
        )
        try:  # pyjwt checks signatures with the cryptography library
            require_extra("crypto", f"{JWKS_VALIDATOR_CALLBACK_HANDLER} ({key})")
        except MissingExtraError as e:
            raise InvalidConfigurationError(str(e)) from None
        url = options.get(URL_OPTION, "").strip()
        if not url:
            raise InvalidConfigurationError(
                f"{JWKS_VALIDATOR_CALLBACK_HANDLER} needs the {URL_OPTION} option (a file:// or "
                f"https:// URL of the JSON Web Key Set) in {key}"
            )
        self.url = url
        algorithms = options.get(ALGORITHMS_OPTION, "RS256 ES256").replace(",", " ").split()
        bad = [a for a in algorithms if a not in SIGNED_ALGORITHMS]
        if bad or not algorithms:
            raise InvalidConfigurationError(
                f"{ALGORITHMS_OPTION} in {key} names {', '.join(bad) or 'nothing'}: it takes "
                f"asymmetric signature algorithms among {', '.join(SIGNED_ALGORITHMS)}"
            )
        self.algorithms = algorithms
        self.issuer = options.get(ISSUER_OPTION) or None
        self.audience = options.get(AUDIENCE_OPTION) or None
        self.principal_claim_name = options.get(PRINCIPAL_CLAIM_NAME_OPTION, "").strip() or "sub"
        self.scope_claim_name = options.get(SCOPE_CLAIM_NAME_OPTION, "").strip() or "scope"
        self.required_scope = parse_scope(
            options.get(REQUIRED_SCOPE_OPTION, "").strip(), key=f"{REQUIRED_SCOPE_OPTION} of {key}"
        )
        self.allowable_clock_skew_ms = clock_skew_option(
            options, ALLOWABLE_CLOCK_SKEW_MS_OPTION, key=key
        )
        refresh = options.get(REFRESH_MS_OPTION, "3600000").strip()
        if not refresh.isdigit():
            raise InvalidConfigurationError(
                f"Invalid value {refresh} for {REFRESH_MS_OPTION} in {key}: it must be a whole "
                "number of milliseconds"
            )
        self.refresh_ms = int(refresh)
        try:
            self._jwks = fetch_jwks(url)
        except ValueError as e:
            raise InvalidConfigurationError(f"{URL_OPTION} in {key}: {e}") from None
        self._fetched_at = _time.monotonic()
        self._refreshing = threading.Lock()

    # -- keys ---------------------------------------------------------------------------------

    def _key(self, kid: str | None) -> jwt.PyJWK:
        keys = self._jwks.keys
        if kid is None:
            if len(keys) == 1:
                return keys[0]
            raise OAuthBearerIllegalTokenError(
                "The token names no key (kid) and the key set holds more than one"
            )
        for candidate in keys:
            if candidate.key_id == kid:
                return candidate
        self._refresh_soon(force=True)
        raise OAuthBearerIllegalTokenError(f"No key with kid {kid} in the key set at {self.url}")

    def _refresh_soon(self, *, force: bool = False) -> None:
        """Fetch the key set again in a thread (never on the event loop), at most every few
        seconds; a failed fetch keeps the keys held and is logged."""
        age = _time.monotonic() - self._fetched_at
        if age < _REFETCH_AT_MOST_EVERY_S or (not force and age * 1000 < self.refresh_ms):
            return
        if not self._refreshing.acquire(blocking=False):
            return
        self._fetched_at = _time.monotonic()

        def fetch() -> None:
            try:
                self._jwks = fetch_jwks(self.url)
            except ValueError as e:
                self.log.warning("%s; keeping the keys read before", e)
            finally:
                self._refreshing.release()

        threading.Thread(target=fetch, name="kafpy-jwks-refresh", daemon=True).start()

    # -- validation -----------------------------------------------------------------------------

    def validate(self, token_value: str, now_ms: int) -> OAuthBearerToken:
        self._refresh_soon()
        try:
            header = jwt.get_unverified_header(token_value)
        except jwt.PyJWTError as e:
            raise OAuthBearerIllegalTokenError(f"Malformed JWT: {e}") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise OAuthBearerIllegalTokenError(
                f"The token's algorithm {alg} is not one of {' '.join(self.algorithms)}"
            )
        key = self._key(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                token_value,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                options={
                    "require": ["exp"],
                    "verify_exp": False,  # checked below against the broker's clock
                    "verify_iat": False,
                    "verify_nbf": False,
                    "verify_aud": self.audience is not None,
                    "verify_iss": self.issuer is not None,
                },
            )
        except jwt.PyJWTError as e:
            raise OAuthBearerIllegalTokenError(f"{type(e).__name__}: {e}") from None
        return self._token(token_value, claims, now_ms)

    def _token(self, token_value: str, claims: dict[str, Any], now_ms: int) -> OAuthBearerToken:
        skew = self.allowable_clock_skew_ms
        times: dict[str, float] = {}
        for name in ("exp", "iat", "nbf"):
            value = claims.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise OAuthBearerIllegalTokenError(f"The '{name}' claim is not a number")
            times[name] = float(value)
        exp, iat, nbf = times["exp"], times.get("iat"), times.get("nbf")
        if iat is not None and 1000 * iat > now_ms + skew:
            raise OAuthBearerIllegalTokenError(f"The token was issued in the future (iat {iat})")
        if nbf is not None and 1000 * nbf > now_ms + skew:
            raise OAuthBearerIllegalTokenError(f"The token is not valid yet (nbf {nbf})")
        if now_ms - skew >= 1000 * exp:
            raise OAuthBearerIllegalTokenError(f"The token expired (exp {exp})")
        if iat is not None and exp <= iat:
            raise OAuthBearerIllegalTokenError("The token's exp is not after its iat")
        principal = claims.get(self.principal_claim_name)
        if not isinstance(principal, str) or not principal.strip():
            raise OAuthBearerIllegalTokenError(
                "No principal name in JWT claim: " + self.principal_claim_name
            )
        raw_scope = claims.get(self.scope_claim_name)
        if isinstance(raw_scope, str):
            scope = frozenset(raw_scope.split())
        elif isinstance(raw_scope, list):
            scope = frozenset(str(s).strip() for s in raw_scope if str(s).strip())
        elif raw_scope is None:
            scope = frozenset()
        else:
            raise OAuthBearerIllegalTokenError(
                f"The '{self.scope_claim_name}' claim is neither a string nor a list"
            )
        ensure_scope(scope, self.required_scope)
        return OAuthBearerToken(
            token_value,
            principal,
            scope,
            round(exp * 1000),
            None if iat is None else round(iat * 1000),
        )

    def invalid_extensions(
        self, token: OAuthBearerToken, extensions: Mapping[str, str]
    ) -> dict[str, str]:
        return {}
