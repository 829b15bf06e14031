"""Kafka's unsecured OAUTHBEARER tokens: OAuthBearerUnsecuredJws's reading, the validator's
rules and JAAS options (principal and scope claim names, required scope, clock skew) and
the login's tokens."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.oauthbearer import OAuthBearerIllegalTokenError
from kafpy.security.oauthbearer_unsecured import (
    OAuthBearerUnsecuredJws,
    OAuthBearerUnsecuredLogin,
    OAuthBearerUnsecuredValidator,
)

NOW_MS = 1_700_000_000_000
NOW_S = NOW_MS // 1000


def b64(data: Any) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jws(claims: Any, header: Any = None, signature: str = "") -> str:
    return f"{b64(header if header is not None else {'alg': 'none'})}.{b64(claims)}.{signature}"


def claims(**extra: Any) -> dict[str, Any]:
    return {"sub": "alice", "iat": NOW_S - 10, "exp": NOW_S + 3600, **extra}


def refused(token: str, **options: str) -> OAuthBearerIllegalTokenError:
    with pytest.raises(OAuthBearerIllegalTokenError) as raised:
        OAuthBearerUnsecuredValidator(options).validate(token, NOW_MS)
    return raised.value


def test_valid_token() -> None:
    token = OAuthBearerUnsecuredValidator({}).validate(jws(claims(scope=["a", " b "])), NOW_MS)
    assert token.principal_name == "alice"
    assert token.scope == frozenset({"a", "b"})
    assert token.lifetime_ms == (NOW_S + 3600) * 1000
    assert token.start_time_ms == (NOW_S - 10) * 1000


def test_string_scope_is_one_item() -> None:
    token = OAuthBearerUnsecuredValidator({}).validate(jws(claims(scope="a b")), NOW_MS)
    assert token.scope == frozenset({"a b"})


@pytest.mark.parametrize(
    "token,why",
    [
        ("a..b", "Malformed compact serialization contains '..'"),
        ("abc.def", "3 dot-separated"),
        (jws(claims(), {"alg": "HS256"}), "Unsecured JWS must have 'none' for an algorithm"),
        (jws(claims(), {"typ": "JWT"}), "JWS header must have an Algorithm value"),
        (jws(claims(), signature="c2ln"), "must not contain a digital signature"),
        (jws({"sub": "alice"}), "No expiration time in JWT"),
        (jws(claims(exp="soon")), "The 'exp' claim was not of type Number: String"),
        (jws(claims(sub=" ")), "No principal name in JWT claim: sub"),
        (jws(claims(sub=7)), "The 'sub' claim was not of type String: Integer"),
        (jws(claims(scope=3)), "The 'scope' claim was not of type List: Integer"),
        ("!!!." + b64(claims()) + ".", "malformed Base64 URL encoded value"),
        (b64(b"{") + "." + b64(claims()) + ".", "malformed JSON"),
        (jws(claims(exp=NOW_S)), "(1700000000000 ms) minus allowable clock skew (0 ms)"),
        (jws(claims(iat=NOW_S + 5)), "The Issued At value (1700000005.000000 seconds) was after"),
        (jws(claims(iat=NOW_S - 5, exp=NOW_S - 6)), "was on or after the Expiration Time"),
    ],
)
def test_invalid_token(token: str, why: str) -> None:
    error = refused(token)
    assert error.status == "invalid_token"
    assert error.json_error_response() == '{"status":"invalid_token"}'
    assert why in error.description


def test_kafka_decodes_with_the_basic_base64_alphabet() -> None:
    # "~" makes "-" in base64url: Kafka 2.8's validator (Base64.getDecoder) refuses it
    token = jws(claims(note="~~~"))
    assert "-" in token.split(".")[1]
    assert refused(token).description == "malformed Base64 URL encoded value"


def test_exp_not_after_iat() -> None:
    token = jws(claims(iat=NOW_S - 5, exp=NOW_S - 5))
    error = refused(token, unsecuredValidatorAllowableClockSkewMs="10000")
    assert error.description == (
        "The Expiration Time time (1699999995.000000 seconds) was not after the Issued At time "
        "(1699999995.000000 seconds)"
    )


def test_clock_skew_allows_a_just_expired_token() -> None:
    token = jws(claims(exp=NOW_S - 1))
    refused(token)
    validator = OAuthBearerUnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "1001"})
    assert validator.validate(token, NOW_MS).principal_name == "alice"


def test_principal_and_scope_claim_names() -> None:
    validator = OAuthBearerUnsecuredValidator({
        "unsecuredValidatorPrincipalClaimName": "client_id",
        "unsecuredValidatorScopeClaimName": "scp",
        "unsecuredValidatorRequiredScope": "read write",
    })  # fmt: skip
    token = validator.validate(jws(claims(client_id="svc", scp=["read", "write"])), NOW_MS)
    assert (token.principal_name, token.scope) == ("svc", frozenset({"read", "write"}))


def test_missing_required_scope_is_insufficient_scope() -> None:
    error = refused(jws(claims(scope=["read"])), unsecuredValidatorRequiredScope="read write")
    assert error.json_error_response() == (
        '{"status":"insufficient_scope", "scope":"[read, write]"}'
    )
    assert "was mising a required scope (write)" in error.description


@pytest.mark.parametrize(
    "options,why",
    [
        ({"unsecuredValidatorAllowableClockSkewMs": "-1"}, "allowable clock skew"),
        ({"unsecuredValidatorAllowableClockSkewMs": "soon"}, "allowable clock skew"),
        ({"unsecuredValidatorRequiredScope": 'a "b"'}, "Invalid scope value"),
    ],
)
def test_bad_options_refused_at_configuration(options: dict[str, str], why: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=why):
        OAuthBearerUnsecuredValidator(options)


def test_parse_reports_header_and_claims() -> None:
    parsed = OAuthBearerUnsecuredJws.parse(jws(claims(flag=True, obj={"x": 1}, n=[1, "a"])))
    assert parsed.header == {"alg": "none"}
    assert parsed.claims["flag"] == "true" and parsed.claims["obj"] == ""
    assert parsed.claims["n"] == ["1", "a"]


def test_login_makes_tokens_the_validator_accepts() -> None:
    login = OAuthBearerUnsecuredLogin({
        "unsecuredLoginStringClaim_sub": "admin",
        "unsecuredLoginListClaim_scope": ",kafka,other",
        "unsecuredLoginNumberClaim_level": "3",
        "unsecuredLoginLifetimeSeconds": "60",
        "unsecuredLoginExtension_traceId": "abc",
    })  # fmt: skip
    assert login.extensions == {"traceId": "abc"}
    token = login.token(NOW_S)
    assert token.lifetime_ms == (NOW_S + 60) * 1000
    validator = OAuthBearerUnsecuredValidator({"unsecuredValidatorRequiredScope": "kafka"})
    checked = validator.validate(token.value, NOW_MS)
    assert (checked.principal_name, checked.scope) == ("admin", frozenset({"kafka", "other"}))


@pytest.mark.parametrize(
    "options,why",
    [
        ({}, "no unsecured token to log in with"),
        ({"unsecuredLoginExtension_a": "b"}, "Extensions provided in login context without a token"),
        ({"unsecuredLoginStringClaim_exp": "1"}, "Cannot explicitly set the 'exp' claim"),
        ({"unsecuredLoginStringClaim_name": "x"}, "No principal name in JWT claim: sub"),
        ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "x"}, "whole"),
        ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_auth": "x"},
         "Extension name auth is invalid"),
    ],
)  # fmt: skip
def test_login_refuses_bad_options(options: dict[str, str], why: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=why):
        OAuthBearerUnsecuredLogin(options)
