"""GroupConfig and OffsetConfig: the broker settings the group coordinator reads (group.* and offsets.*)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class _ConfigSource(Protocol):
    def get(self, key: str) -> Any: ...


@dataclass(frozen=True)
class GroupConfig:
    """Session timeout bounds, the largest group, and the delay of a new group's first rebalance."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2**31 - 1

    @classmethod
    def from_config(cls, config: _ConfigSource) -> GroupConfig:
        return cls(
            config.get("group.min.session.timeout.ms"),
            config.get("group.max.session.timeout.ms"),
            config.get("group.initial.rebalance.delay.ms"),
            config.get("group.max.size"),
        )


@dataclass(frozen=True)
class OffsetConfig:
    """How __consumer_offsets is laid out and written, and how long offsets are kept."""

    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104857600
    offsets_topic_compression_codec: int = 0
    offsets_load_buffer_size: int = 5242880
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offsets_commit_timeout_ms: int = 5000
    offsets_commit_required_acks: int = -1
    max_metadata_size: int = 4096

    @classmethod
    def from_config(cls, config: _ConfigSource) -> OffsetConfig:
        return cls(
            config.get("offsets.topic.num.partitions"),
            config.get("offsets.topic.replication.factor"),
            config.get("offsets.topic.segment.bytes"),
            config.get("offsets.topic.compression.codec"),
            config.get("offsets.load.buffer.size"),
            config.get("offsets.retention.minutes") * 60 * 1000,
            config.get("offsets.retention.check.interval.ms"),
            config.get("offsets.commit.timeout.ms"),
            config.get("offsets.commit.required.acks"),
            config.get("offset.metadata.max.bytes"),
        )
