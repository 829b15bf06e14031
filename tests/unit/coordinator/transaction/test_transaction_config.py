"""TransactionConfig reads the broker's KafkaConfig; its defaults are the keys' defaults."""

from __future__ import annotations

from pathlib import Path

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
