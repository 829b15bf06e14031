"""GroupConfig and OffsetConfig: the broker settings the group coordinator reads (group.* and offsets.*).

The keys are declared here (`GROUP_CONFIG_DEF`, `OFFSET_CONFIG_DEF`, which KafkaConfig takes
in), and the dataclass defaults are those declarations' defaults, so a default is written once.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafpy.common.config_def import INT_MAX, ConfigDef, ConfigSource, ConfigType, Importance, Range


def _group_config_def() -> ConfigDef:
    m = Importance.MEDIUM
    t = ConfigType
    return (
        ConfigDef()
        .define("group.min.session.timeout.ms", t.INT, 6000, None, m)
        .define("group.max.session.timeout.ms", t.INT, 1800000, None, m)
        .define("group.initial.rebalance.delay.ms", t.INT, 3000, None, m)
        .define("group.max.size", t.INT, INT_MAX, Range.at_least(1), m)
    )  # fmt: skip


def _offset_config_def() -> ConfigDef:
    h = Importance.HIGH
    t = ConfigType
    return (
        ConfigDef()
        .define("offsets.topic.num.partitions", t.INT, 50, Range.at_least(1), h)
        .define("offsets.topic.replication.factor", t.SHORT, 3, Range.at_least(1), h)
        .define("offsets.topic.segment.bytes", t.INT, 104857600, Range.at_least(1), h)
        .define("offsets.topic.compression.codec", t.INT, 0, Range.between(0, 4), h)
        .define("offsets.load.buffer.size", t.INT, 5242880, Range.at_least(1), h)
        .define("offsets.retention.minutes", t.INT, 10080, Range.at_least(1), h)
        .define("offsets.retention.check.interval.ms", t.LONG, 600000, Range.at_least(1), h)
        .define("offsets.commit.timeout.ms", t.INT, 5000, Range.at_least(1), h)
        .define("offsets.commit.required.acks", t.SHORT, -1, Range.between(-1, 1), h)
        .define("offset.metadata.max.bytes", t.INT, 4096, None, h)
    )  # fmt: skip


GROUP_CONFIG_DEF: ConfigDef = _group_config_def()
"""The server.properties keys of consumer groups (a subset of KafkaConfig)."""

OFFSET_CONFIG_DEF: ConfigDef = _offset_config_def()
"""The server.properties keys of committed offsets and __consumer_offsets (a subset of KafkaConfig)."""

_MS_PER_MINUTE = 60 * 1000


@dataclass(frozen=True)
class GroupConfig:
    """Session timeout bounds, the largest group, and the delay of a new group's first rebalance."""

    group_min_session_timeout_ms: int = GROUP_CONFIG_DEF.default("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = GROUP_CONFIG_DEF.default("group.max.session.timeout.ms")
    group_initial_rebalance_delay_ms: int = GROUP_CONFIG_DEF.default(
        "group.initial.rebalance.delay.ms"
    )
    group_max_size: int = GROUP_CONFIG_DEF.default("group.max.size")

    @classmethod
    def from_config(cls, config: ConfigSource) -> GroupConfig:
        return cls(
            config.get("group.min.session.timeout.ms"),
            config.get("group.max.session.timeout.ms"),
            config.get("group.initial.rebalance.delay.ms"),
            config.get("group.max.size"),
        )


@dataclass(frozen=True)
class OffsetConfig:
    """How __consumer_offsets is laid out and written, and how long offsets are kept."""

    offsets_topic_num_partitions: int = OFFSET_CONFIG_DEF.default("offsets.topic.num.partitions")
    offsets_topic_replication_factor: int = OFFSET_CONFIG_DEF.default(
        "offsets.topic.replication.factor"
    )
    offsets_topic_segment_bytes: int = OFFSET_CONFIG_DEF.default("offsets.topic.segment.bytes")
    offsets_topic_compression_codec: int = OFFSET_CONFIG_DEF.default(
        "offsets.topic.compression.codec"
    )
    offsets_load_buffer_size: int = OFFSET_CONFIG_DEF.default("offsets.load.buffer.size")
    offsets_retention_ms: int = (
        OFFSET_CONFIG_DEF.default("offsets.retention.minutes") * _MS_PER_MINUTE
    )
    offsets_retention_check_interval_ms: int = OFFSET_CONFIG_DEF.default(
        "offsets.retention.check.interval.ms"
    )
    offsets_commit_timeout_ms: int = OFFSET_CONFIG_DEF.default("offsets.commit.timeout.ms")
    offsets_commit_required_acks: int = OFFSET_CONFIG_DEF.default("offsets.commit.required.acks")
    max_metadata_size: int = OFFSET_CONFIG_DEF.default("offset.metadata.max.bytes")

    @classmethod
    def from_config(cls, config: ConfigSource) -> OffsetConfig:
        return cls(
            config.get("offsets.topic.num.partitions"),
            config.get("offsets.topic.replication.factor"),
            config.get("offsets.topic.segment.bytes"),
            config.get("offsets.topic.compression.codec"),
            config.get("offsets.load.buffer.size"),
            config.get("offsets.retention.minutes") * _MS_PER_MINUTE,
            config.get("offsets.retention.check.interval.ms"),
            config.get("offsets.commit.timeout.ms"),
            config.get("offsets.commit.required.acks"),
            config.get("offset.metadata.max.bytes"),
        )
