"""Tests for LogConfig: Kafka's defaults, parsing overrides, validation, broker mapping."""

from __future__ import annotations

import dataclasses

import pytest

from kafpy.common.config_def import LONG_MAX
from kafpy.common.errors import InvalidConfigurationError
from kafpy.storage.log_config import (
    LOG_CONFIG_DEF,
    LogConfig,
    broker_config_synonym,
    log_config_defaults_from_broker,
    parse_api_version,
    record_version_for,
    topic_config_names,
    validate_topic_config,
)

DAY_MS = 24 * 60 * 60 * 1000

KAFKA_DEFAULTS = {
    "segment.bytes": 1024 * 1024 * 1024,
    "segment.ms": 7 * DAY_MS,
    "segment.jitter.ms": 0,
    "segment.index.bytes": 10 * 1024 * 1024,
    "flush.messages": LONG_MAX,
    "flush.ms": LONG_MAX,
    "retention.bytes": -1,
    "retention.ms": 7 * DAY_MS,
    "max.message.bytes": 1048588,
    "index.interval.bytes": 4096,
    "file.delete.delay.ms": 60000,
    "delete.retention.ms": DAY_MS,
    "min.compaction.lag.ms": 0,
    "max.compaction.lag.ms": LONG_MAX,
    "min.cleanable.dirty.ratio": 0.5,
    "cleanup.policy": ["delete"],
    "unclean.leader.election.enable": False,
    "min.insync.replicas": 1,
    "compression.type": "producer",
    "preallocate": False,
    "message.format.version": "2.8-IV1",
    "message.timestamp.type": "CreateTime",
    "message.timestamp.difference.max.ms": LONG_MAX,
    "message.downconversion.enable": True,
    "leader.replication.throttled.replicas": [],
    "follower.replication.throttled.replicas": [],
}


def test_every_topic_key_and_default() -> None:
    assert topic_config_names() == sorted(KAFKA_DEFAULTS)
    assert LogConfig().values() == KAFKA_DEFAULTS


def test_attributes_mirror_keys() -> None:
    c = LogConfig()
    for key, value in KAFKA_DEFAULTS.items():
        assert getattr(c, key.replace(".", "_")) == value
        assert c.get(key) == value
    with pytest.raises(KeyError, match="Unknown topic config name: nope"):
        c.get("nope")


def test_immutable_and_lists_not_shared() -> None:
    a, b = LogConfig(), LogConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.retention_ms = 1  # type: ignore[misc]
    a.cleanup_policy.append("compact")
    assert b.cleanup_policy == ["delete"]


def test_from_props_strings_override_defaults() -> None:
    c = LogConfig.from_props(
        {"retention.ms": 1000, "segment.bytes": 2048},
        {"retention.ms": "5000", "cleanup.policy": "compact, delete", "preallocate": "true"},
    )
    assert c.retention_ms == 5000
    assert c.segment_bytes == 2048
    assert c.cleanup_policy == ["compact", "delete"]
    assert c.compact and c.delete
    assert c.preallocate and c.init_file_size == 2048
    assert c.originals == {
        "retention.ms": "5000",
        "cleanup.policy": "compact, delete",
        "preallocate": "true",
    }
    assert c.overridden_keys == {"retention.ms", "cleanup.policy", "preallocate"}


def test_compact_only() -> None:
    c = LogConfig(cleanup_policy=["compact"])
    assert c.compact and not c.delete


def test_constructor_validates() -> None:
    with pytest.raises(InvalidConfigurationError, match="Value must be at least 14"):
        LogConfig(segment_bytes=10)
    assert LogConfig(segment_bytes=14).segment_bytes == 14


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"retention.ms": "5"}, None),
        ({"retention.ms": "-1"}, None),
        ({"retention.ms": "-5"}, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
        ({"foo": "1"}, "Unknown topic config name: foo"),
        ({"segment.bytes": "13"}, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
        ({"segment.bytes": "1GB"}, "Invalid value 1GB for configuration segment.bytes: Not a number of type INT"),
        ({"segment.ms": "0"}, "Value must be at least 1"),
        ({"segment.index.bytes": "3"}, "Value must be at least 4"),
        ({"flush.messages": "0"}, "Value must be at least 1"),
        ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "Value must be no more than 1"),
        ({"cleanup.policy": "delete,foo"}, "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"),
        ({"compression.type": "brotli"}, "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        ({"message.timestamp.type": "createtime"}, "String must be one of: CreateTime, LogAppendTime"),
        ({"unclean.leader.election.enable": "yes"}, "Expected value to be either true or false"),
        ({"message.format.version": "9.9"}, "Version `9.9` is not a valid version"),
        ({"message.format.version": "2.4.1"}, None),
        ({"leader.replication.throttled.replicas": "*"}, None),
        ({"follower.replication.throttled.replicas": "0:1, 1:2"}, None),
        ({"leader.replication.throttled.replicas": "0-1"}, "must be the literal '\\*' or a list of replicas"),
        ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
         "conflict topic config setting min.compaction.lag.ms \\(10\\) > max.compaction.lag.ms \\(5\\)"),
    ],
)  # fmt: skip
def test_validate_topic_config(props: dict[str, str], message: str | None) -> None:
    if message is None:
        parsed = validate_topic_config(props)
        assert set(parsed) == set(props)
        LogConfig.from_props(None, props)
    else:
        with pytest.raises(InvalidConfigurationError, match=message):
            validate_topic_config(props)
        with pytest.raises(InvalidConfigurationError, match=message):
            LogConfig.from_props(None, props)


def test_validate_returns_parsed_values() -> None:
    assert validate_topic_config({"retention.ms": "100", "cleanup.policy": "compact"}) == {
        "retention.ms": 100,
        "cleanup.policy": ["compact"],
    }


def test_broker_defaults_are_kafkas() -> None:
    d = log_config_defaults_from_broker({})
    # the throttled-replica lists have no broker synonym
    assert "leader.replication.throttled.replicas" not in d
    expected = {k: v for k, v in KAFKA_DEFAULTS.items() if "throttled" not in k}
    assert d == expected


def test_broker_mapping() -> None:
    d = log_config_defaults_from_broker(
        {
            "log.segment.bytes": "1048576",
            "log.roll.hours": "2",
            "log.roll.jitter.hours": "1",
            "log.index.size.max.bytes": "4096",
            "log.flush.interval.messages": "10",
            "log.flush.scheduler.interval.ms": "3000",
            "log.retention.bytes": "100",
            "log.retention.hours": "1",
            "message.max.bytes": "500",
            "log.index.interval.bytes": "100",
            "log.segment.delete.delay.ms": "1000",
            "log.cleaner.delete.retention.ms": "7",
            "log.cleaner.min.compaction.lag.ms": "8",
            "log.cleaner.max.compaction.lag.ms": "9",
            "log.cleaner.min.cleanable.ratio": "0.1",
            "log.cleanup.policy": "compact",
            "unclean.leader.election.enable": "true",
            "min.insync.replicas": "2",
            "compression.type": "lz4",
            "log.preallocate": "true",
            "log.message.format.version": "2.1",
            "log.message.timestamp.type": "LogAppendTime",
            "log.message.timestamp.difference.max.ms": "60000",
            "log.message.downconversion.enable": "false",
            "broker.id": "3",  # not a log key: ignored
        }
    )
    assert d["segment.bytes"] == 1048576
    assert d["segment.ms"] == 2 * 3600 * 1000
    assert d["segment.jitter.ms"] == 3600 * 1000
    assert d["segment.index.bytes"] == 4096
    assert d["flush.messages"] == 10
    assert d["flush.ms"] == 3000  # log.flush.interval.ms unset: the scheduler interval
    assert d["retention.bytes"] == 100
    assert d["retention.ms"] == 3600 * 1000
    assert d["max.message.bytes"] == 500
    assert d["index.interval.bytes"] == 100
    assert d["file.delete.delay.ms"] == 1000
    assert d["delete.retention.ms"] == 7
    assert d["min.compaction.lag.ms"] == 8
    assert d["max.compaction.lag.ms"] == 9
    assert d["min.cleanable.dirty.ratio"] == 0.1
    assert d["cleanup.policy"] == ["compact"]
    assert d["unclean.leader.election.enable"] is True
    assert d["min.insync.replicas"] == 2
    assert d["compression.type"] == "lz4"
    assert d["preallocate"] is True
    assert d["message.format.version"] == "2.1"
    assert d["message.timestamp.type"] == "LogAppendTime"
    assert d["message.timestamp.difference.max.ms"] == 60000
    assert d["message.downconversion.enable"] is False
    c = LogConfig.from_props(d, {"retention.ms": "10"})
    assert c.retention_ms == 10 and c.segment_bytes == 1048576


@pytest.mark.parametrize(
    ("props", "retention"),
    [
        ({"log.retention.hours": "2"}, 2 * 3600 * 1000),
        ({"log.retention.hours": "2", "log.retention.minutes": "3"}, 3 * 60 * 1000),
        ({"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "4"}, 4),
        ({"log.retention.ms": "-1"}, -1),
        ({"log.retention.hours": "-2"}, -1),
    ],
)
def test_retention_ms_wins_over_minutes_over_hours(props: dict[str, str], retention: int) -> None:
    assert log_config_defaults_from_broker(props)["retention.ms"] == retention


def test_roll_and_flush_ms_win() -> None:
    d = log_config_defaults_from_broker(
        {"log.roll.hours": "2", "log.roll.ms": "5", "log.roll.jitter.ms": "3",
         "log.flush.interval.ms": "9", "log.flush.scheduler.interval.ms": "100"}
    )  # fmt: skip
    assert (d["segment.ms"], d["segment.jitter.ms"], d["flush.ms"]) == (5, 3, 9)


def test_broker_values_validated() -> None:
    with pytest.raises(
        InvalidConfigurationError,
        match="configuration log.segment.bytes: Value must be at least 14",
    ):
        log_config_defaults_from_broker({"log.segment.bytes": "1"})
    with pytest.raises(InvalidConfigurationError, match="log.cleanup.policy"):
        log_config_defaults_from_broker({"log.cleanup.policy": "nope"})


def test_synonyms() -> None:
    assert broker_config_synonym("retention.ms") == "log.retention.ms"
    assert broker_config_synonym("segment.ms") == "log.roll.ms"
    assert broker_config_synonym("leader.replication.throttled.replicas") is None
    assert broker_config_synonym("nope") is None
    assert all(k.doc for k in LOG_CONFIG_DEF)


def test_random_segment_jitter() -> None:
    assert LogConfig().random_segment_jitter() == 0
    c = LogConfig(segment_ms=10, segment_jitter_ms=1000)
    assert all(0 <= c.random_segment_jitter() < 10 for _ in range(200))


def test_max_segment_ms_for_compacted_topics() -> None:
    assert LogConfig(segment_ms=100, max_compaction_lag_ms=50).max_segment_ms == 100
    assert (
        LogConfig(
            segment_ms=100, max_compaction_lag_ms=50, cleanup_policy=["compact"]
        ).max_segment_ms
        == 50
    )


def test_api_versions() -> None:
    assert parse_api_version("2.4") == "2.4-IV1"
    assert parse_api_version("2.4.1") == "2.4-IV1"
    assert parse_api_version("0.10.0") == "0.10.0-IV1"
    assert parse_api_version("0.10.2-IV0") == "0.10.2-IV0"
    with pytest.raises(ValueError, match="Version `1.2` is not a valid version"):
        parse_api_version("1.2")
    assert record_version_for("0.9.0") == 0
    assert record_version_for("0.10.2") == 1
    assert record_version_for("0.11.0") == 2
    assert LogConfig().record_version == 2


def test_with_overrides() -> None:
    c = LogConfig.from_props(None, {"retention.ms": "10"}).with_overrides({"segment.bytes": "100"})
    assert (c.retention_ms, c.segment_bytes) == (10, 100)
    assert c.originals == {"retention.ms": "10", "segment.bytes": "100"}
    with pytest.raises(InvalidConfigurationError, match="Unknown topic config name: x"):
        c.with_overrides({"x": "1"})


@pytest.mark.parametrize(
    ("version", "magic"),
    [("0.8.0", 0), ("0.8.2", 0), ("0.9.0", 0), ("0.9.0.1", 0), ("0.10.0-IV0", 1), ("0.10.0", 1),
     ("0.10.1-IV2", 1), ("0.10.2", 1), ("0.11.0-IV0", 2), ("0.11.0", 2), ("1.0", 2), ("2.8", 2),
     ("2.8-IV1", 2)],
)  # fmt: skip
def test_message_format_versions_map_to_their_magic(version: str, magic: int) -> None:
    # ApiVersion.recordVersion: v0 up to 0.9.0, v1 from 0.10.0-IV0, v2 from 0.11.0-IV0
    assert LogConfig.from_props(None, {"message.format.version": version}).record_version == magic
    defaults = {"log.message.format.version": version}
    assert LogConfig.from_props(log_config_defaults_from_broker(defaults)).record_version == magic


@pytest.mark.parametrize("version", ["1.2", "0.7", "3.0", "x"])
def test_unknown_message_format_versions_are_refused_with_kafkas_message(version: str) -> None:
    with pytest.raises(
        InvalidConfigurationError,
        match=f"^Invalid value {version} for configuration message.format.version: Version "
        f"`{version}` is not a valid version$",
    ):
        LogConfig.from_props(None, {"message.format.version": version})
