"""CredentialProvider: a user's stored config becomes (or stops being) its credentials."""

from __future__ import annotations

from kafpy.common.sanitizer import desanitize, sanitize
from kafpy.security.credential_cache import CredentialCache, CredentialProvider
from kafpy.security.scram import ScramFormatter


def test_update_and_delete() -> None:
    cache = CredentialCache()
    provider = CredentialProvider(cache)
    credential = ScramFormatter("sha256").credential("pw", 4096)
    provider.process_config_changes(
        sanitize("a b*"), {"SCRAM-SHA-256": credential.to_credential_string()}
    )
    assert cache.get("SCRAM-SHA-256", "a b*") == credential
    assert cache.get("SCRAM-SHA-512", "a b*") is None
    provider.process_config_changes(sanitize("a b*"), {})
    assert cache.get("SCRAM-SHA-256", "a b*") is None


def test_a_malformed_credential_is_ignored() -> None:
    cache = CredentialCache()
    CredentialProvider(cache).process_config_changes("bob", {"SCRAM-SHA-256": "salt=oops"})
    assert cache.get("SCRAM-SHA-256", "bob") is None


def test_sanitizer_is_kafkas() -> None:
    assert sanitize("alice") == "alice"
    assert sanitize("a b*c@d") == "a%20b%2Ac%40d"
    assert desanitize("a%20b%2Ac%40d") == "a b*c@d"
