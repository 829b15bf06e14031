"""The API versions this broker advertises in ApiVersions and answers.

Non-flexible ranges (kafka-python, librdkafka and aiokafka all negotiate down), except
IncrementalAlterConfigs 0-1 and ElectLeaders 0-2 (Kafka 2.8's ranges; their last version
is flexible, which the codec handles). The ranges must read as Kafka >= 0.11 to
kafka-python's version guess (Metadata up to 8, Fetch up to 11), or it falls back to old
message formats.
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey

SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 8),
    ApiKey.FETCH: (4, 11),
    ApiKey.LIST_OFFSETS: (1, 5),
    ApiKey.METADATA: (0, 8),
    ApiKey.LEADER_AND_ISR: (0, 3),
    ApiKey.STOP_REPLICA: (0, 1),
    ApiKey.CONTROLLED_SHUTDOWN: (1, 2),
    ApiKey.UPDATE_METADATA: (0, 5),
    ApiKey.API_VERSIONS: (0, 2),
    ApiKey.CREATE_TOPICS: (0, 4),
    ApiKey.DELETE_TOPICS: (0, 3),
    ApiKey.DELETE_RECORDS: (0, 1),
    ApiKey.INIT_PRODUCER_ID: (0, 1),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 3),
    ApiKey.DESCRIBE_CONFIGS: (0, 3),
    ApiKey.ALTER_CONFIGS: (0, 1),
    ApiKey.CREATE_PARTITIONS: (0, 1),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ELECT_LEADERS: (0, 2),
    # the group APIs at Kafka 2.4's non-flexible ranges
    ApiKey.OFFSET_COMMIT: (0, 7),
    ApiKey.OFFSET_FETCH: (0, 5),
    ApiKey.FIND_COORDINATOR: (0, 2),
    ApiKey.JOIN_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 3),
    ApiKey.LEAVE_GROUP: (0, 3),
    ApiKey.SYNC_GROUP: (0, 3),
    ApiKey.DESCRIBE_GROUPS: (0, 4),
    ApiKey.LIST_GROUPS: (0, 2),
    ApiKey.DELETE_GROUPS: (0, 1),
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
