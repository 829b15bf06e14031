"""Topic-level log configuration (Kafka's LogConfig/TopicConfig) and its broker defaults.

Every topic-level key Kafka 2.x knows is declared in `LOG_CONFIG_DEF` with Kafka's type,
default and validation. A topic's effective config is the broker's defaults (mapped from
server.properties keys by `log_config_defaults_from_broker`) overridden by the topic's own
overrides (from `/config/topics/<topic>`), as `LogConfig.from_props(defaults, overrides)`.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafpy.common.config_def import (
    LONG_MAX,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    Range,
    ValidList,
    ValidString,
)
from kafpy.common.errors import InvalidConfigurationError

# --- topic-level key names (Kafka's TopicConfig) ---
SEGMENT_BYTES = "segment.bytes"
SEGMENT_MS = "segment.ms"
SEGMENT_JITTER_MS = "segment.jitter.ms"
SEGMENT_INDEX_BYTES = "segment.index.bytes"
FLUSH_MESSAGES = "flush.messages"
FLUSH_MS = "flush.ms"
RETENTION_BYTES = "retention.bytes"
RETENTION_MS = "retention.ms"
MAX_MESSAGE_BYTES = "max.message.bytes"
INDEX_INTERVAL_BYTES = "index.interval.bytes"
DELETE_RETENTION_MS = "delete.retention.ms"
MIN_COMPACTION_LAG_MS = "min.compaction.lag.ms"
MAX_COMPACTION_LAG_MS = "max.compaction.lag.ms"
FILE_DELETE_DELAY_MS = "file.delete.delay.ms"
MIN_CLEANABLE_DIRTY_RATIO = "min.cleanable.dirty.ratio"
CLEANUP_POLICY = "cleanup.policy"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
MIN_IN_SYNC_REPLICAS = "min.insync.replicas"
COMPRESSION_TYPE = "compression.type"
PREALLOCATE = "preallocate"
MESSAGE_FORMAT_VERSION = "message.format.version"
MESSAGE_TIMESTAMP_TYPE = "message.timestamp.type"
MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS = "message.timestamp.difference.max.ms"
MESSAGE_DOWNCONVERSION_ENABLE = "message.downconversion.enable"
LEADER_REPLICATION_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICATION_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"

COMPACT = "compact"
DELETE = "delete"

# LegacyRecord.RECORD_OVERHEAD_V0: the smallest message Kafka ever stored.
RECORD_OVERHEAD_V0 = 14

# compression.type values in Kafka's BrokerCompressionCodec order
BROKER_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# Kafka 2.8's ApiVersion ids (the values message.format.version accepts), oldest first.
API_VERSIONS = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2",
    "1.0-IV0", "1.1-IV0",
    "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1",
    "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0",
    "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1",
)  # fmt: skip
LATEST_API_VERSION = API_VERSIONS[-1]


def _api_version_map() -> dict[str, str]:
    versions: dict[str, str] = {}
    for v in API_VERSIONS:
        versions[v] = v
        short = v.split("-", 1)[0]
        versions[short] = v  # a short version ("2.4") means its latest IV
    return versions


_API_VERSION_BY_NAME = _api_version_map()


def parse_api_version(text: str) -> str:
    """The full ApiVersion id for a version string such as "2.4", "2.4.1", "0.10.0-IV1".

    As Kafka does, only the first 2 (3 for 0.x) dotted segments count, so "2.4.1" is "2.4".
    Raises ValueError for unknown versions.
    """
    segments = text.split(".")
    n = 3 if text.startswith("0.") else 2
    key = ".".join(segments[:n])
    try:
        return _API_VERSION_BY_NAME[key]
    except KeyError:
        raise ValueError(f"Version `{text}` is not a valid version") from None


def record_version_for(api_version: str) -> int:
    """The record batch magic (0, 1, 2) an ApiVersion's message format stands for."""
    full = parse_api_version(api_version)
    index = API_VERSIONS.index(full)
    if index < API_VERSIONS.index("0.10.0-IV0"):
        return 0
    if index < API_VERSIONS.index("0.11.0-IV0"):
        return 1
    return 2


def _check_api_version(value: object) -> str | None:
    try:
        record_version_for(str(value))
    except ValueError as e:
        return str(e)
    return None


def _check_throttled_replicas(name: str) -> LambdaValidator:
    def check(value: object) -> str | None:
        assert isinstance(value, list)
        if [v.strip() for v in value] == ["*"]:
            return None
        if all(re.fullmatch(r"([0-9]+:[0-9]+)?", v.strip()) for v in value):
            return None
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return LambdaValidator(check, "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _topic_config_def() -> ConfigDef:
    m = Importance.MEDIUM
    t = ConfigType
    return (
        ConfigDef()
        .define(SEGMENT_BYTES, t.INT, 1024 * 1024 * 1024, Range.at_least(RECORD_OVERHEAD_V0), m,
                "The size of a log segment file; a new segment is rolled when it is full.",
                "log.segment.bytes")
        .define(SEGMENT_MS, t.LONG, 7 * 24 * 60 * 60 * 1000, Range.at_least(1), m,
                "Roll a new segment after this long even if the active one is not full.",
                "log.roll.ms")
        .define(SEGMENT_JITTER_MS, t.LONG, 0, Range.at_least(0), m,
                "Maximum random jitter subtracted from segment.ms to avoid rolling all segments at once.",
                "log.roll.jitter.ms")
        .define(SEGMENT_INDEX_BYTES, t.INT, 10 * 1024 * 1024, Range.at_least(4), m,
                "The size of the offset index (preallocated, shrunk when the segment rolls).",
                "log.index.size.max.bytes")
        .define(FLUSH_MESSAGES, t.LONG, LONG_MAX, Range.at_least(1), m,
                "Force an fsync after this many messages.", "log.flush.interval.messages")
        .define(FLUSH_MS, t.LONG, LONG_MAX, Range.at_least(0), m,
                "Force an fsync after this long.", "log.flush.interval.ms")
        # may be negative: -1 means no size limit
        .define(RETENTION_BYTES, t.LONG, -1, None, m,
                "The size a partition may grow to before old segments are deleted (-1: unlimited).",
                "log.retention.bytes")
        .define(RETENTION_MS, t.LONG, 7 * 24 * 60 * 60 * 1000, Range.at_least(-1), m,
                "How long to keep a segment before deleting it (-1: forever).", "log.retention.ms")
        .define(MAX_MESSAGE_BYTES, t.INT, 1048588, Range.at_least(0), m,
                "The largest record batch size allowed.", "message.max.bytes")
        .define(INDEX_INTERVAL_BYTES, t.INT, 4096, Range.at_least(0), m,
                "Bytes of log between two offset index entries.", "log.index.interval.bytes")
        .define(DELETE_RETENTION_MS, t.LONG, 24 * 60 * 60 * 1000, Range.at_least(0), m,
                "How long delete tombstones are kept in compacted topics.",
                "log.cleaner.delete.retention.ms")
        .define(MIN_COMPACTION_LAG_MS, t.LONG, 0, Range.at_least(0), m,
                "The minimum time a message stays uncompacted.", "log.cleaner.min.compaction.lag.ms")
        .define(MAX_COMPACTION_LAG_MS, t.LONG, LONG_MAX, Range.at_least(1), m,
                "The maximum time a message stays ineligible for compaction.",
                "log.cleaner.max.compaction.lag.ms")
        .define(FILE_DELETE_DELAY_MS, t.LONG, 60000, Range.at_least(0), m,
                "How long to wait before deleting a file from the filesystem.",
                "log.segment.delete.delay.ms")
        .define(MIN_CLEANABLE_DIRTY_RATIO, t.DOUBLE, 0.5, Range.between(0, 1), m,
                "How dirty a log must be before the cleaner compacts it.",
                "log.cleaner.min.cleanable.ratio")
        .define(CLEANUP_POLICY, t.LIST, "delete", ValidList(COMPACT, DELETE), m,
                "'delete' discards old segments by time or size; 'compact' keeps the latest value per key.",
                "log.cleanup.policy")
        .define(UNCLEAN_LEADER_ELECTION_ENABLE, t.BOOLEAN, False, None, m,
                "Whether replicas outside the ISR may become leader, at the risk of data loss.",
                "unclean.leader.election.enable")
        .define(MIN_IN_SYNC_REPLICAS, t.INT, 1, Range.at_least(1), m,
                "The fewest in-sync replicas that must acknowledge an acks=all write.",
                "min.insync.replicas")
        .define(COMPRESSION_TYPE, t.STRING, "producer", ValidString(*BROKER_COMPRESSION_TYPES), m,
                "The final compression of the topic's data; 'producer' keeps the producer's codec.",
                "compression.type")
        .define(PREALLOCATE, t.BOOLEAN, False, None, m,
                "Preallocate the file when a new segment is created.", "log.preallocate")
        .define(MESSAGE_FORMAT_VERSION, t.STRING, LATEST_API_VERSION,
                LambdaValidator(_check_api_version, "[" + ", ".join(API_VERSIONS) + "]"), m,
                "The message format version the broker appends to the log with.",
                "log.message.format.version")
        .define(MESSAGE_TIMESTAMP_TYPE, t.STRING, "CreateTime", ValidString(*TIMESTAMP_TYPES), m,
                "Whether a message's timestamp is its create time or its log append time.",
                "log.message.timestamp.type")
        .define(MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS, t.LONG, LONG_MAX, Range.at_least(0), m,
                "The largest difference allowed between a message's timestamp and the broker's clock.",
                "log.message.timestamp.difference.max.ms")
        .define(LEADER_REPLICATION_THROTTLED_REPLICAS, t.LIST, "",
                _check_throttled_replicas(LEADER_REPLICATION_THROTTLED_REPLICAS), m,
                "Replicas whose log replication is throttled on the leader side.")
        .define(FOLLOWER_REPLICATION_THROTTLED_REPLICAS, t.LIST, "",
                _check_throttled_replicas(FOLLOWER_REPLICATION_THROTTLED_REPLICAS), m,
                "Replicas whose log replication is throttled on the follower side.")
        .define(MESSAGE_DOWNCONVERSION_ENABLE, t.BOOLEAN, True, None, Importance.LOW,
                "Whether the broker down-converts messages for old consumers.",
                "log.message.downconversion.enable")
    )  # fmt: skip


LOG_CONFIG_DEF: ConfigDef = _topic_config_def()
"""Every topic-level config key with Kafka's type, default and validator."""


def _broker_log_config_def() -> ConfigDef:
    m = Importance.MEDIUM
    h = Importance.HIGH
    t = ConfigType
    return (
        ConfigDef()
        .define("log.segment.bytes", t.INT, 1024 * 1024 * 1024, Range.at_least(RECORD_OVERHEAD_V0), h)
        .define("log.roll.ms", t.LONG, None, None, h)
        .define("log.roll.hours", t.INT, 24 * 7, Range.at_least(1), h)
        .define("log.roll.jitter.ms", t.LONG, None, None, h)
        .define("log.roll.jitter.hours", t.INT, 0, Range.at_least(0), h)
        .define("log.index.size.max.bytes", t.INT, 10 * 1024 * 1024, Range.at_least(4), m)
        .define("log.flush.interval.messages", t.LONG, LONG_MAX, Range.at_least(1), h)
        .define("log.flush.interval.ms", t.LONG, None, None, h)
        .define("log.flush.scheduler.interval.ms", t.LONG, LONG_MAX, None, h)
        .define("log.flush.offset.checkpoint.interval.ms", t.INT, 60000, Range.at_least(0), h)
        .define("log.flush.start.offset.checkpoint.interval.ms", t.INT, 60000, Range.at_least(0), h)
        .define("log.retention.bytes", t.LONG, -1, None, h)
        .define("log.retention.ms", t.LONG, None, None, h)
        .define("log.retention.minutes", t.INT, None, None, h)
        .define("log.retention.hours", t.INT, 24 * 7, None, h)
        .define("log.retention.check.interval.ms", t.LONG, 5 * 60 * 1000, Range.at_least(1), m)
        .define("log.initial.task.delay.ms", t.LONG, 30 * 1000, Range.at_least(0), m)
        .define("message.max.bytes", t.INT, 1048588, Range.at_least(0), h)
        .define("log.index.interval.bytes", t.INT, 4096, Range.at_least(0), m)
        .define("log.segment.delete.delay.ms", t.LONG, 60000, Range.at_least(0), h)
        .define("log.cleaner.enable", t.BOOLEAN, True, None, m)
        .define("log.cleaner.delete.retention.ms", t.LONG, 24 * 60 * 60 * 1000, Range.at_least(0), m)
        .define("log.cleaner.min.compaction.lag.ms", t.LONG, 0, Range.at_least(0), m)
        .define("log.cleaner.max.compaction.lag.ms", t.LONG, LONG_MAX, Range.at_least(1), m)
        .define("log.cleaner.min.cleanable.ratio", t.DOUBLE, 0.5, Range.between(0, 1), m)
        .define("log.cleanup.policy", t.LIST, "delete", ValidList(COMPACT, DELETE), m)
        .define("unclean.leader.election.enable", t.BOOLEAN, False, None, h)
        .define("min.insync.replicas", t.INT, 1, Range.at_least(1), h)
        .define("compression.type", t.STRING, "producer", ValidString(*BROKER_COMPRESSION_TYPES), h)
        .define("log.preallocate", t.BOOLEAN, False, None, m)
        .define("log.message.format.version", t.STRING, LATEST_API_VERSION,
                LambdaValidator(_check_api_version), m)
        .define("log.message.timestamp.type", t.STRING, "CreateTime", ValidString(*TIMESTAMP_TYPES), m)
        .define("log.message.timestamp.difference.max.ms", t.LONG, LONG_MAX, Range.at_least(0), m)
        .define("log.message.downconversion.enable", t.BOOLEAN, True, None, m)
        .define("num.recovery.threads.per.data.dir", t.INT, 1, Range.at_least(1), h)
    )  # fmt: skip


BROKER_LOG_CONFIG_DEF: ConfigDef = _broker_log_config_def()
"""The server.properties keys that govern logs (a subset of KafkaConfig), for KafkaConfig to reuse."""

_MS_PER_MINUTE = 60 * 1000
_MS_PER_HOUR = 60 * _MS_PER_MINUTE

# topic key -> broker key, for the keys that map one to one
_DIRECT_BROKER_SYNONYMS = {
    key.name: key.server_default_property
    for key in LOG_CONFIG_DEF
    if key.server_default_property is not None
    and key.name not in (SEGMENT_MS, SEGMENT_JITTER_MS, FLUSH_MS, RETENTION_MS)
}


def broker_config_synonym(topic_key: str) -> str | None:
    """The broker key a topic key defaults from (`retention.ms` -> `log.retention.ms`)."""
    if topic_key not in LOG_CONFIG_DEF:
        return None
    return LOG_CONFIG_DEF.key(topic_key).server_default_property


def log_config_defaults_from_broker(broker_props: Mapping[str, object]) -> dict[str, object]:
    """The topic-level defaults a broker's server.properties imply, keyed by topic key.

    Follows Kafka's copyKafkaConfigToLog: `log.roll.ms` wins over `log.roll.hours`,
    `log.retention.ms` over `.minutes` over `.hours` (a negative result means -1),
    `log.flush.interval.ms` falls back to `log.flush.scheduler.interval.ms`. Keys that are
    not about logs are ignored; bad values raise InvalidConfigurationError naming the key.
    """
    b = BROKER_LOG_CONFIG_DEF.parse(broker_props)
    out: dict[str, object] = {
        topic_key: b[broker_key] for topic_key, broker_key in _DIRECT_BROKER_SYNONYMS.items()
    }
    out[SEGMENT_MS] = (
        b["log.roll.ms"] if b["log.roll.ms"] is not None else b["log.roll.hours"] * _MS_PER_HOUR
    )
    out[SEGMENT_JITTER_MS] = (
        b["log.roll.jitter.ms"]
        if b["log.roll.jitter.ms"] is not None
        else b["log.roll.jitter.hours"] * _MS_PER_HOUR
    )
    out[FLUSH_MS] = (
        b["log.flush.interval.ms"]
        if b["log.flush.interval.ms"] is not None
        else b["log.flush.scheduler.interval.ms"]
    )
    if b["log.retention.ms"] is not None:
        retention = b["log.retention.ms"]
    elif b["log.retention.minutes"] is not None:
        retention = b["log.retention.minutes"] * _MS_PER_MINUTE
    else:
        retention = b["log.retention.hours"] * _MS_PER_HOUR
    out[RETENTION_MS] = -1 if retention < 0 else retention
    return out


def _default(key: str) -> Any:
    default = LOG_CONFIG_DEF.key(key).default
    if isinstance(default, list):
        return field(default_factory=lambda: list(default))
    return field(default=default)


@dataclass(frozen=True)
class LogConfig:
    """The effective configuration of one log (partition), immutable.

    One attribute per Kafka topic-level key (`segment.bytes` -> `segment_bytes`), each
    defaulting to Kafka's default; values given to the constructor are checked against
    Kafka's validators. Build one from the broker's defaults plus a topic's overrides with
    `LogConfig.from_props`. `originals` holds the overrides that were given (strings as
    they came), which is what DescribeConfigs reports as topic-level.
    """

    segment_bytes: int = _default(SEGMENT_BYTES)
    segment_ms: int = _default(SEGMENT_MS)
    segment_jitter_ms: int = _default(SEGMENT_JITTER_MS)
    segment_index_bytes: int = _default(SEGMENT_INDEX_BYTES)
    flush_messages: int = _default(FLUSH_MESSAGES)
    flush_ms: int = _default(FLUSH_MS)
    retention_bytes: int = _default(RETENTION_BYTES)
    retention_ms: int = _default(RETENTION_MS)
    max_message_bytes: int = _default(MAX_MESSAGE_BYTES)
    index_interval_bytes: int = _default(INDEX_INTERVAL_BYTES)
    file_delete_delay_ms: int = _default(FILE_DELETE_DELAY_MS)
    delete_retention_ms: int = _default(DELETE_RETENTION_MS)
    min_compaction_lag_ms: int = _default(MIN_COMPACTION_LAG_MS)
    max_compaction_lag_ms: int = _default(MAX_COMPACTION_LAG_MS)
    min_cleanable_dirty_ratio: float = _default(MIN_CLEANABLE_DIRTY_RATIO)
    cleanup_policy: list[str] = _default(CLEANUP_POLICY)
    unclean_leader_election_enable: bool = _default(UNCLEAN_LEADER_ELECTION_ENABLE)
    min_insync_replicas: int = _default(MIN_IN_SYNC_REPLICAS)
    compression_type: str = _default(COMPRESSION_TYPE)
    preallocate: bool = _default(PREALLOCATE)
    message_format_version: str = _default(MESSAGE_FORMAT_VERSION)
    message_timestamp_type: str = _default(MESSAGE_TIMESTAMP_TYPE)
    message_timestamp_difference_max_ms: int = _default(MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS)
    message_downconversion_enable: bool = _default(MESSAGE_DOWNCONVERSION_ENABLE)
    leader_replication_throttled_replicas: list[str] = _default(
        LEADER_REPLICATION_THROTTLED_REPLICAS
    )
    follower_replication_throttled_replicas: list[str] = _default(
        FOLLOWER_REPLICATION_THROTTLED_REPLICAS
    )
    originals: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Normalise and validate whatever the caller passed (strings are parsed too).
        for key in LOG_CONFIG_DEF:
            attr = _attr(key.name)
            object.__setattr__(
                self, attr, LOG_CONFIG_DEF.parse_value(key.name, getattr(self, attr))
            )
        object.__setattr__(self, "originals", dict(self.originals))
        _validate_values(self.min_compaction_lag_ms, self.max_compaction_lag_ms)

    @classmethod
    def from_props(
        cls,
        defaults: Mapping[str, object] | None = None,
        overrides: Mapping[str, object] | None = None,
    ) -> LogConfig:
        """`defaults` (topic keys, e.g. from `log_config_defaults_from_broker`) overridden by
        `overrides` (a topic's own config, usually strings). Unknown keys raise
        `Unknown topic config name: x`; bad values raise naming the key and the range."""
        merged: dict[str, object] = {}
        for props in (defaults or {}, overrides or {}):
            validate_names(props)
            merged.update(props)
        values: dict[str, Any] = {_attr(k): v for k, v in merged.items()}
        return cls(**values, originals=dict(overrides or {}))

    def with_overrides(self, overrides: Mapping[str, object]) -> LogConfig:
        """A copy with some keys (Kafka names) changed; `originals` gains them."""
        validate_names(overrides)
        changes: dict[str, Any] = {_attr(k): v for k, v in overrides.items()}
        return dataclasses.replace(self, **changes, originals={**self.originals, **overrides})

    def get(self, key: str) -> Any:
        """A value by its Kafka key name (`config.get("retention.ms")`)."""
        if key not in LOG_CONFIG_DEF:
            raise KeyError(f"Unknown topic config name: {key}")
        return getattr(self, _attr(key))

    def values(self) -> dict[str, Any]:
        """Every key (Kafka names) with its effective value."""
        return {k.name: getattr(self, _attr(k.name)) for k in LOG_CONFIG_DEF}

    @property
    def overridden_keys(self) -> frozenset[str]:
        return frozenset(self.originals)

    @property
    def compact(self) -> bool:
        return COMPACT in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return DELETE in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """segment.ms, capped by max.compaction.lag.ms on compacted topics (as Kafka 2.3+)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def init_file_size(self) -> int:
        """The size to preallocate a new segment file to (0 unless preallocate)."""
        return self.segment_bytes if self.preallocate else 0

    @property
    def record_version(self) -> int:
        """The record magic that message.format.version stands for (0, 1 or 2)."""
        return record_version_for(self.message_format_version)

    def random_segment_jitter(self) -> int:
        """A random jitter in [0, min(segment.jitter.ms, segment.ms)), or 0 without jitter."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))


def _attr(key: str) -> str:
    return key.replace(".", "_")


def _validate_values(min_lag: int, max_lag: int) -> None:
    if min_lag > max_lag:
        raise InvalidConfigurationError(
            f"conflict topic config setting {MIN_COMPACTION_LAG_MS} ({min_lag}) > "
            f"{MAX_COMPACTION_LAG_MS} ({max_lag})"
        )


def validate_names(props: Mapping[str, object]) -> None:
    """Raise `Unknown topic config name: x` for a key that is not a topic config."""
    for name in props:
        if name not in LOG_CONFIG_DEF:
            raise InvalidConfigurationError(f"Unknown topic config name: {name}")


def validate_topic_config(props: Mapping[str, object]) -> dict[str, object]:
    """Check a topic's overrides (as create-topics or alter-configs give them).

    Returns the given keys with their parsed values; raises InvalidConfigurationError
    naming the key and the allowed values or range.
    """
    validate_names(props)
    parsed = LOG_CONFIG_DEF.parse(props)
    _validate_values(parsed[MIN_COMPACTION_LAG_MS], parsed[MAX_COMPACTION_LAG_MS])
    return {k: parsed[k] for k in props}


def topic_config_names() -> list[str]:
    """All topic-level config names, sorted."""
    return LOG_CONFIG_DEF.names()
