"""GroupConfig and OffsetConfig read the broker's KafkaConfig; their defaults are its keys'."""

from __future__ import annotations

from pathlib import Path

from kafpy.coordinator.group_config import GroupConfig, OffsetConfig
from kafpy.server.kafka_config import KafkaConfig


def test_defaults_are_the_broker_config_defaults(tmp_path: Path) -> None:
    config = KafkaConfig({"log.dirs": str(tmp_path)})
    assert GroupConfig.from_config(config) == GroupConfig()
    assert OffsetConfig.from_config(config) == OffsetConfig()


def test_values_from_kafka_config(tmp_path: Path) -> None:
    config = KafkaConfig({
        "log.dirs": str(tmp_path),
        "group.initial.rebalance.delay.ms": "0",
        "offsets.retention.minutes": "2",
        "offsets.topic.num.partitions": "3",
    })  # fmt: skip
    assert GroupConfig.from_config(config).group_initial_rebalance_delay_ms == 0
    offsets = OffsetConfig.from_config(config)
    assert (offsets.offsets_retention_ms, offsets.offsets_topic_num_partitions) == (120000, 3)
