"""ControllerConfig reads the broker's KafkaConfig with Kafka's keys and defaults."""

from __future__ import annotations

from pathlib import Path

from kafpy.controller.controller_config import ControllerConfig
from kafpy.server.kafka_config import KafkaConfig


def test_defaults_from_kafka_config(tmp_path: Path) -> None:
    config = ControllerConfig.from_config(KafkaConfig({"broker.id": 3, "log.dirs": str(tmp_path)}))
    assert config == ControllerConfig(
        broker_id=3,
        delete_topic_enable=True,
        unclean_leader_election_enable=False,
        inter_broker_listener_name="PLAINTEXT",
        controller_socket_timeout_ms=30000,
    )


def test_overrides_from_kafka_config(tmp_path: Path) -> None:
    props = {
        "broker.id": 1,
        "log.dirs": str(tmp_path),
        "delete.topic.enable": "false",
        "unclean.leader.election.enable": "true",
    }
    config = ControllerConfig.from_config(KafkaConfig(props))
    assert not config.delete_topic_enable and config.unclean_leader_election_enable
