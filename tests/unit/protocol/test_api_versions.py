"""The advertised version table."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS, api_versions_entries, is_supported
from kafpy.protocol.messages import REQUESTS, RESPONSES

# Advertised at a flexible version because the agreed table says so (Kafka 2.8's range).
FLEXIBLE_ADVERTISED = {ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ELECT_LEADERS}


def test_advertised_ranges_are_declared_and_not_flexible() -> None:
    for key, (lo, hi) in SUPPORTED_VERSIONS.items():
        for messages in (REQUESTS, RESPONSES):
            m = messages[key]
            assert m.valid_versions[0] <= lo <= hi <= m.valid_versions[1], m.name
            assert m.is_flexible(hi) == (key in FLEXIBLE_ADVERTISED), m.name


def test_reads_as_a_modern_broker_to_kafka_python() -> None:
    assert SUPPORTED_VERSIONS[ApiKey.METADATA][1] >= 8
    assert SUPPORTED_VERSIONS[ApiKey.FETCH][1] >= 11
    assert SUPPORTED_VERSIONS[ApiKey.API_VERSIONS] == (0, 2)


def test_is_supported_and_entries() -> None:
    assert is_supported(ApiKey.PRODUCE, 8)
    assert not is_supported(ApiKey.PRODUCE, 9)
    assert not is_supported(999, 0)
    entries = api_versions_entries()
    assert {"api_key": 18, "min_version": 0, "max_version": 2} in entries
    assert [e["api_key"] for e in entries] == sorted(e["api_key"] for e in entries)
