"""The advertised version table against Kafka 2.8's message schemas.

KAFKA_2_8 holds, per API, the `validVersions` and first flexible version of
clients/src/main/resources/common/message/*Request.json at Kafka's 2.8.2 tag.
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS, api_versions_entries, is_supported
from kafpy.protocol.messages import REQUESTS, RESPONSES

K = ApiKey
KAFKA_2_8: dict[ApiKey, tuple[int, int, int | None]] = {
    K.PRODUCE: (0, 9, 9), K.FETCH: (0, 12, 12), K.LIST_OFFSETS: (0, 6, 6),
    K.METADATA: (0, 11, 9), K.LEADER_AND_ISR: (0, 5, 4), K.STOP_REPLICA: (0, 3, 2),
    K.UPDATE_METADATA: (0, 7, 6), K.CONTROLLED_SHUTDOWN: (0, 3, 3),
    K.OFFSET_COMMIT: (0, 8, 8), K.OFFSET_FETCH: (0, 7, 6), K.FIND_COORDINATOR: (0, 3, 3),
    K.JOIN_GROUP: (0, 7, 6), K.HEARTBEAT: (0, 4, 4), K.LEAVE_GROUP: (0, 4, 4),
    K.SYNC_GROUP: (0, 5, 4), K.DESCRIBE_GROUPS: (0, 5, 5), K.LIST_GROUPS: (0, 4, 3),
    K.SASL_HANDSHAKE: (0, 1, None), K.API_VERSIONS: (0, 3, 3), K.CREATE_TOPICS: (0, 7, 5),
    K.DELETE_TOPICS: (0, 6, 4), K.DELETE_RECORDS: (0, 2, 2), K.INIT_PRODUCER_ID: (0, 4, 2),
    K.OFFSET_FOR_LEADER_EPOCH: (0, 4, 4), K.DESCRIBE_CONFIGS: (0, 4, 4),
    K.ALTER_CONFIGS: (0, 2, 2), K.CREATE_PARTITIONS: (0, 3, 2), K.DELETE_GROUPS: (0, 2, 2),
    K.ELECT_LEADERS: (0, 2, 2), K.INCREMENTAL_ALTER_CONFIGS: (0, 1, 1),
    K.OFFSET_DELETE: (0, 0, None), K.DESCRIBE_CLUSTER: (0, 0, 0),
    K.DESCRIBE_CLIENT_QUOTAS: (0, 1, 1), K.ALTER_CLIENT_QUOTAS: (0, 1, 1),
    K.WRITE_TXN_MARKERS: (0, 1, 1), K.TXN_OFFSET_COMMIT: (0, 3, 3),
    K.ADD_PARTITIONS_TO_TXN: (0, 3, 3), K.ADD_OFFSETS_TO_TXN: (0, 3, 3), K.END_TXN: (0, 3, 3),
    K.DESCRIBE_ACLS: (0, 2, 2), K.CREATE_ACLS: (0, 2, 2), K.DELETE_ACLS: (0, 2, 2),
    K.SASL_AUTHENTICATE: (0, 2, 2), K.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0, 0),
    K.ALTER_USER_SCRAM_CREDENTIALS: (0, 0, 0),
    K.ALTER_REPLICA_LOG_DIRS: (0, 2, 2), K.DESCRIBE_LOG_DIRS: (0, 2, 2),
    K.ALTER_PARTITION_REASSIGNMENTS: (0, 0, 0), K.LIST_PARTITION_REASSIGNMENTS: (0, 0, 0),
    K.ALTER_ISR: (0, 0, 0), K.UPDATE_FEATURES: (0, 0, 0),
    K.CREATE_DELEGATION_TOKEN: (0, 2, 2), K.RENEW_DELEGATION_TOKEN: (0, 2, 2),
    K.EXPIRE_DELEGATION_TOKEN: (0, 2, 2), K.DESCRIBE_DELEGATION_TOKEN: (0, 2, 2),
}  # fmt: skip

# Where kafpy advertises less than Kafka 2.8, and why (nowhere now).
NARROWER: dict[ApiKey, tuple[int, int]] = {}

# Served beyond Kafka 2.8, and why: Kafka 3.0's (KIP-664) APIs `kafpy transactions` needs,
# and InitProducerId v5-6 for KIP-939's two-phase commit (v5 answered as v4).
BEYOND_2_8 = {
    K.DESCRIBE_TRANSACTIONS: (0, 0), K.LIST_TRANSACTIONS: (0, 0), K.DESCRIBE_PRODUCERS: (0, 0),
    K.INIT_PRODUCER_ID: (0, 6),
}  # fmt: skip


def test_advertised_ranges_are_kafka_2_8s() -> None:
    for key, rng in SUPPORTED_VERSIONS.items():
        if key in BEYOND_2_8:
            assert rng == BEYOND_2_8[key], key.api_name
            continue
        lo, hi, _ = KAFKA_2_8[key]
        assert rng == NARROWER.get(key, (lo, hi)), key.api_name


def test_flexible_versions_are_kafka_2_8s() -> None:
    for key, (_, hi, flexible) in KAFKA_2_8.items():
        for messages in (REQUESTS, RESPONSES):
            m = messages.get(key)
            if m is None:
                continue
            assert m.valid_versions[0] == 0 and m.valid_versions[1] >= hi, m.name
            assert m.flexible_versions == flexible, m.name


def test_advertised_ranges_are_declared() -> None:
    for key, (lo, hi) in SUPPORTED_VERSIONS.items():
        for messages in (REQUESTS, RESPONSES):
            m = messages[key]
            assert m.valid_versions[0] <= lo <= hi <= m.valid_versions[1], m.name


def test_is_supported_and_entries() -> None:
    assert is_supported(ApiKey.PRODUCE, 9)
    assert not is_supported(ApiKey.PRODUCE, 10)
    assert is_supported(ApiKey.PRODUCE, 0) and not is_supported(ApiKey.LEADER_AND_ISR, 6)
    assert not is_supported(999, 0)
    entries = api_versions_entries()
    assert {"api_key": 18, "min_version": 0, "max_version": 3} in entries
    assert [e["api_key"] for e in entries] == sorted(e["api_key"] for e in entries)
