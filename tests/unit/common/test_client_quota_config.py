"""Quota config names, validation and entity paths as Kafka stores them."""

import pytest

from kafpy.common.client_quota_config import (
    desanitize,
    entity_from_path,
    sanitize,
    validate_quota_configs,
)


def test_validation() -> None:
    assert validate_quota_configs({"producer_byte_rate": "1048576", "x": "y"}) == {
        "producer_byte_rate": 1048576.0
    }
    for bad in ("abc", "0", "-5"):
        with pytest.raises(ValueError, match="producer_byte_rate"):
            validate_quota_configs({"producer_byte_rate": bad})


def test_entity_paths_and_sanitized_names() -> None:
    assert entity_from_path("clients", "c1") == (None, "c1")
    assert entity_from_path("users", "<default>") == ("<default>", None)
    assert entity_from_path("users", "alice/clients/<default>") == ("alice", "<default>")
    # Kafka's Sanitizer: URL encoding, %20 for a space and %2A for '*'
    assert sanitize("CN=alice smith,O=x*") == "CN%3Dalice%20smith%2CO%3Dx%2A"
    assert sanitize("a.b-c_d") == "a.b-c_d" and sanitize("<default>") == "<default>"
    assert desanitize(sanitize("User:CN=a b/c")) == "User:CN=a b/c"
    assert entity_from_path("users", "CN%3Dalice/clients/c%2A") == ("CN=alice", "c*")
