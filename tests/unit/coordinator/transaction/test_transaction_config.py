"""TransactionConfig reads the broker's KafkaConfig; its defaults are the keys' defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.coordinator.transaction.transaction_config import TransactionConfig
from kafpy.server.kafka_config import KafkaConfig


def test_defaults_are_the_broker_config_defaults(tmp_path: Path) -> None:
    config = KafkaConfig({"log.dirs": str(tmp_path)})
    assert TransactionConfig.from_config(config) == TransactionConfig()


def test_values_from_kafka_config(tmp_path: Path) -> None:
    config = KafkaConfig({"log.dirs": str(tmp_path), "transaction.state.log.min.isr": "1"})
    txn = TransactionConfig.from_config(config)
    assert txn.transaction_log_min_isr == 1
    assert txn.topic_configs()["min.insync.replicas"] == "1"


def test_two_phase_commit_is_off_by_default_and_a_boolean(tmp_path: Path) -> None:
    assert TransactionConfig().transaction_two_phase_commit_enable is False
    on = KafkaConfig({"log.dirs": str(tmp_path), "transaction.two.phase.commit.enable": "true"})
    assert TransactionConfig.from_config(on).transaction_two_phase_commit_enable is True
    with pytest.raises(InvalidConfigurationError, match="transaction.two.phase.commit.enable"):
        KafkaConfig({"log.dirs": str(tmp_path), "transaction.two.phase.commit.enable": "maybe"})
