"""The API versions this broker advertises in ApiVersions and answers.

Kafka 2.8's ranges for every client-facing API kafpy serves, flexible versions included
(KIP-482), the inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown) included: a Kafka 2.8 controller may send any of them. Produce v0-2 and
Fetch v0-3 carry message format v0/v1: kafpy converts it (kafpy/server/record_conversion.py).
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey

SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 12),
    ApiKey.LIST_OFFSETS: (0, 6),
    ApiKey.METADATA: (0, 11),
    ApiKey.LEADER_AND_ISR: (0, 5),
    ApiKey.STOP_REPLICA: (0, 3),
    ApiKey.CONTROLLED_SHUTDOWN: (0, 3),
    ApiKey.UPDATE_METADATA: (0, 7),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.OFFSET_COMMIT: (0, 8),
    ApiKey.OFFSET_FETCH: (0, 7),
    ApiKey.FIND_COORDINATOR: (0, 3),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 4),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    # transactions (issue 15): Kafka 2.8's ranges; the coordinator side
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    # Kafka 3.0's (KIP-664), served beyond 2.8 for `kafpy transactions`
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 0),
    # transactions, the log and group side (issue 15)
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    ApiKey.DESCRIBE_ACLS: (0, 2),
    ApiKey.CREATE_ACLS: (0, 2),
    ApiKey.DELETE_ACLS: (0, 2),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 2),
}


def is_supported(api_key: int, api_version: int) -> bool:
    """Whether the broker answers this API at this version."""
    rng = SUPPORTED_VERSIONS.get(api_key)  # type: ignore[call-overload]
    return rng is not None and rng[0] <= api_version <= rng[1]


def api_versions_entries() -> list[dict[str, int]]:
    """The `api_keys` array of an ApiVersions response body."""
    return [
        {"api_key": int(key), "min_version": lo, "max_version": hi}
        for key, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
    ]
