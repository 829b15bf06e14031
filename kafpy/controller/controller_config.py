"""ControllerConfig: the broker settings the controller reads, typed, with Kafka's defaults.

Built from the broker's configuration object (anything with `get(key)` and `broker_id`,
such as `kafpy.server.kafka_config.KafkaConfig`), so the controller does not depend on
the server layer above it. Keys the configuration does not define take Kafka's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class BrokerConfigSource(Protocol):
    @property
    def broker_id(self) -> int: ...

    def get(self, key: str) -> Any: ...


def _get(config: BrokerConfigSource, key: str, default: Any) -> Any:
    try:
        value = config.get(key)
    except KeyError:
        return default
    return default if value is None else value


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


@dataclass(frozen=True)
class ControllerConfig:
    """What the controller needs to know about its broker's configuration."""

    broker_id: int
    delete_topic_enable: bool = True
    unclean_leader_election_enable: bool = False
    inter_broker_listener_name: str = "PLAINTEXT"
    controller_socket_timeout_ms: int = 30000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10

    @classmethod
    def from_config(cls, config: BrokerConfigSource) -> ControllerConfig:
        listener = _get(config, "inter.broker.listener.name", None) or _get(
            config, "security.inter.broker.protocol", "PLAINTEXT"
        )
        return cls(
            broker_id=int(config.broker_id),
            delete_topic_enable=_bool(_get(config, "delete.topic.enable", True)),
            unclean_leader_election_enable=_bool(
                _get(config, "unclean.leader.election.enable", False)
            ),
            inter_broker_listener_name=str(listener),
            controller_socket_timeout_ms=int(_get(config, "controller.socket.timeout.ms", 30000)),
            auto_leader_rebalance_enable=_bool(_get(config, "auto.leader.rebalance.enable", True)),
            leader_imbalance_check_interval_seconds=int(
                _get(config, "leader.imbalance.check.interval.seconds", 300)
            ),
            leader_imbalance_per_broker_percentage=int(
                _get(config, "leader.imbalance.per.broker.percentage", 10)
            ),
        )
