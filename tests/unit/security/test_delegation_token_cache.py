"""DelegationTokenCache: tokens by id and by HMAC, their credentials, removal."""

from __future__ import annotations

from kafpy.security.delegation_token_cache import (
    DelegationToken,
    DelegationTokenCache,
    TokenInformation,
)
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.scram import ScramCredential

ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")
CREDENTIAL = ScramCredential(b"s", b"k", b"v", 4096)


def test_update_lookup_and_remove() -> None:
    cache = DelegationTokenCache()
    token = DelegationToken(TokenInformation("tok", ALICE, (BOB,), 1, 3, 2), b"\x01\x02")
    cache.update_cache(token, {"SCRAM-SHA-256": CREDENTIAL})
    assert token.hmac_as_base64_string == "AQI="
    assert cache.token("tok") == token.token_info == cache.token_for_hmac("AQI=")
    assert cache.owner("tok") == ALICE and cache.credential("SCRAM-SHA-256", "tok") == CREDENTIAL
    assert cache.credential("SCRAM-SHA-512", "tok") is None
    assert token.token_info.owner_or_renewer(BOB)
    assert not token.token_info.owner_or_renewer(KafkaPrincipal("User", "eve"))
    # a renewal replaces the entry; the HMAC stays the same
    renewed = DelegationToken(TokenInformation("tok", ALICE, (BOB,), 1, 3, 3), b"\x01\x02")
    cache.update_cache(renewed, {"SCRAM-SHA-256": CREDENTIAL})
    assert cache.tokens() == [renewed.token_info]
    cache.remove_cache("tok")
    assert cache.token("tok") is None and cache.token_for_hmac("AQI=") is None
    assert cache.credential("SCRAM-SHA-256", "tok") is None and cache.owner("tok") is None


def test_token_authenticated_takes_no_part_in_equality() -> None:
    assert KafkaPrincipal("User", "alice", token_authenticated=True) == ALICE
    assert hash(KafkaPrincipal("User", "alice", token_authenticated=True)) == hash(ALICE)
