"""ControllerConfig reads the broker's KafkaConfig with Kafka's keys and defaults."""

from __future__ import annotations

from pathlib import Path

from kafpy.controller.controller_config import ControllerConfig
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF, KafkaConfig


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


def test_defaults_are_the_broker_config_defaults(tmp_path: Path) -> None:
    """A ControllerConfig nobody configured is the one a default broker configuration gives,
    so its defaults cannot drift from the declared keys' defaults."""
    config = ControllerConfig.from_config(KafkaConfig({"broker.id": 0, "log.dirs": str(tmp_path)}))
    assert config == ControllerConfig(broker_id=0)
    assert ControllerConfig(broker_id=0).inter_broker_listener_name == KAFKA_CONFIG_DEF.default(
        "security.inter.broker.protocol"
    )
