"""kafpy's JWKS validator of signed OAUTHBEARER tokens: RS256 and ES256 tokens signed with
keys the test makes, checked against a key set in a file; issuer, audience, expiry, scope
and the key id; options refused at configuration."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.oauthbearer import OAuthBearerIllegalTokenError
from kafpy.security.oauthbearer_jwks import OAuthBearerJwksValidator

NOW_S = 1_700_000_000
NOW_MS = NOW_S * 1000
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def jwk(key: Any, kid: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPublicKey) else (
        jwt.algorithms.ECAlgorithm
    )  # fmt: skip
    return {**json.loads(algorithm.to_jwk(key)), "kid": kid}


@pytest.fixture
def jwks_url(tmp_path: Path) -> str:
    path = tmp_path / "jwks.json"
    keys = [jwk(RSA_KEY.public_key(), "r1"), jwk(EC_KEY.public_key(), "e1")]
    path.write_text(json.dumps({"keys": keys}))
    return path.as_uri()


def token(alg: str = "RS256", kid: str | None = None, key: Any = None, **claims: Any) -> str:
    body = {"sub": "alice", "iss": "idp", "aud": "kafka", "iat": NOW_S - 5, "exp": NOW_S + 60,
            **claims}  # fmt: skip
    signing = key if key is not None else (RSA_KEY if alg == "RS256" else EC_KEY)
    headers = {"kid": kid or ("r1" if alg == "RS256" else "e1")}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, signing, alg, headers)


def validator(url: str, **options: str) -> OAuthBearerJwksValidator:
    return OAuthBearerJwksValidator({"kafpyJwksUrl": url, **options})


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_signed_token_accepted(jwks_url: str, alg: str) -> None:
    checked = validator(jwks_url, kafpyJwksIssuer="idp", kafpyJwksAudience="kafka").validate(
        token(alg, scope="read write"), NOW_MS
    )
    assert checked.principal_name == "alice"
    assert checked.scope == frozenset({"read", "write"})
    assert checked.lifetime_ms == (NOW_S + 60) * 1000


@pytest.mark.parametrize(
    "bad,why",
    [
        (lambda: token(key=rsa.generate_private_key(public_exponent=65537, key_size=2048)),
         "InvalidSignatureError"),
        (lambda: token(aud="other"), "InvalidAudienceError"),
        (lambda: token(iss="evil"), "InvalidIssuerError"),
        (lambda: token(exp=NOW_S), "expired"),
        (lambda: token(exp=None), "MissingRequiredClaimError"),
        (lambda: token(iat=NOW_S + 10), "issued in the future"),
        (lambda: token(nbf=NOW_S + 10), "not valid yet"),
        (lambda: token(sub=None), "No principal name in JWT claim: sub"),
        (lambda: token(kid="unknown"), "No key with kid unknown"),
        (lambda: jwt.encode({"sub": "a", "exp": NOW_S + 9}, "secret-" * 6, "HS256"),
         "algorithm HS256 is not one of RS256 ES256"),
        (lambda: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.", "algorithm none is not one of"),
        (lambda: "garbage", "Malformed JWT"),
    ],
)  # fmt: skip
def test_bad_tokens_are_invalid_token(jwks_url: str, bad: Any, why: str) -> None:
    with pytest.raises(OAuthBearerIllegalTokenError) as raised:
        validator(jwks_url, kafpyJwksIssuer="idp", kafpyJwksAudience="kafka").validate(
            bad(), NOW_MS
        )
    assert why in raised.value.description
    assert raised.value.json_error_response() == '{"status":"invalid_token"}'


def test_issuer_and_audience_unchecked_unless_configured(jwks_url: str) -> None:
    assert validator(jwks_url).validate(token(iss="x", aud="y"), NOW_MS).principal_name == "alice"


def test_required_scope_and_claim_names(jwks_url: str) -> None:
    v = validator(jwks_url, kafpyJwksPrincipalClaimName="client_id",
                  kafpyJwksScopeClaimName="scp", kafpyJwksRequiredScope="produce")  # fmt: skip
    good = v.validate(token(client_id="svc", scp=["produce"]), NOW_MS)
    assert good.principal_name == "svc"
    with pytest.raises(OAuthBearerIllegalTokenError) as raised:
        v.validate(token(client_id="svc", scp="consume"), NOW_MS)
    assert raised.value.json_error_response() == (
        '{"status":"insufficient_scope", "scope":"[produce]"}'
    )


def test_clock_skew(jwks_url: str) -> None:
    expired = token(exp=NOW_S - 1)
    with pytest.raises(OAuthBearerIllegalTokenError):
        validator(jwks_url).validate(expired, NOW_MS)
    assert validator(jwks_url, kafpyJwksAllowableClockSkewMs="2000").validate(expired, NOW_MS)


def test_algorithms_option_narrows(jwks_url: str) -> None:
    with pytest.raises(OAuthBearerIllegalTokenError, match="not one of RS256"):
        validator(jwks_url, kafpyJwksAlgorithms="RS256").validate(token("ES256"), NOW_MS)


@pytest.mark.parametrize(
    "options,why",
    [
        ({}, "needs the kafpyJwksUrl option"),
        ({"kafpyJwksUrl": "http://idp/jwks"}, "neither a file:// nor an https:// URL"),
        ({"kafpyJwksUrl": "file:///nonexistent/jwks.json"}, "cannot read the JSON Web Key Set"),
        ({"kafpyJwksAlgorithms": "HS256"}, "names HS256"),
        ({"kafpyJwksAllowableClockSkewMs": "-5"}, "allowable clock skew"),
        ({"kafpyJwksRefreshMs": "soon"}, "kafpyJwksRefreshMs"),
    ],
)
def test_bad_options_refused(jwks_url: str, options: dict[str, str], why: str) -> None:
    given = (
        options
        if not options or "kafpyJwksUrl" in options
        else {"kafpyJwksUrl": jwks_url, **options}
    )
    with pytest.raises(InvalidConfigurationError, match=why):
        OAuthBearerJwksValidator(given)


def test_key_set_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text("not json")
    with pytest.raises(InvalidConfigurationError, match="cannot read the JSON Web Key Set"):
        validator(path.as_uri())


def test_unknown_kid_refetches_the_key_set_in_the_background(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(RSA_KEY.public_key(), "r1")]}))
    v = validator(path.as_uri())
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    keys = [jwk(RSA_KEY.public_key(), "r1"), jwk(rotated.public_key(), "r2")]
    path.write_text(json.dumps({"keys": keys}))
    new = token(kid="r2", key=rotated)
    v._fetched_at -= 60  # the last fetch is old enough to fetch again
    with pytest.raises(OAuthBearerIllegalTokenError, match="No key with kid r2"):
        v.validate(new, NOW_MS)
    for refresh in [t for t in threading.enumerate() if t.name == "kafpy-jwks-refresh"]:
        refresh.join(10)  # (it may have finished already)
    assert v.validate(new, NOW_MS).principal_name == "alice"


def test_unknown_kid_soon_after_a_fetch_does_not_refetch(jwks_url: str) -> None:
    v = validator(jwks_url)
    with pytest.raises(OAuthBearerIllegalTokenError, match="No key with kid r9"):
        v.validate(token(kid="r9"), NOW_MS)
    assert not any(t.name == "kafpy-jwks-refresh" for t in threading.enumerate())
