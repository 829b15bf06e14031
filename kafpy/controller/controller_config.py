"""ControllerConfig: the broker settings the controller reads, typed, with Kafka's defaults.

Built from the broker's configuration object (anything with `get(key)` and `broker_id`,
such as `kafpy.server.kafka_config.KafkaConfig`), so the controller does not depend on
the server layer above it. Keys the configuration does not define take their default.

The controller's own keys are declared here (`CONTROLLER_CONFIG_DEF`, which KafkaConfig
takes in); `unclean.leader.election.enable` is a log key (`kafpy.storage.log_config`). The
dataclass defaults are those declarations' defaults, so a default is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kafpy.common.config_def import ConfigDef, ConfigType, Importance, Range
from kafpy.storage.log_config import BROKER_LOG_CONFIG_DEF


class BrokerConfigSource(Protocol):
    @property
    def broker_id(self) -> int: ...

    def get(self, key: str) -> Any: ...


def _controller_config_def() -> ConfigDef:
    h, m = Importance.HIGH, Importance.MEDIUM
    t = ConfigType
    return (
        ConfigDef()
        .define("delete.topic.enable", t.BOOLEAN, True, None, h)
        .define("controller.socket.timeout.ms", t.INT, 30000, None, m)
        .define("auto.leader.rebalance.enable", t.BOOLEAN, True, None, h)
        .define("leader.imbalance.check.interval.seconds", t.LONG, 300, Range.at_least(1), h)
        .define("leader.imbalance.per.broker.percentage", t.INT, 10, Range.at_least(0), h)
    )  # fmt: skip


CONTROLLER_CONFIG_DEF: ConfigDef = _controller_config_def()
"""The server.properties keys only the controller reads (a subset of KafkaConfig)."""

# security.inter.broker.protocol's default, which KafkaConfig declares with the protocols it
# validates; tests/unit/controller/test_controller_config.py holds the two equal
_INTER_BROKER_LISTENER_NAME = "PLAINTEXT"


def _default(key: str) -> Any:
    if key in CONTROLLER_CONFIG_DEF:
        return CONTROLLER_CONFIG_DEF.default(key)
    return BROKER_LOG_CONFIG_DEF.default(key)


def _get(config: BrokerConfigSource, key: str, default: Any) -> Any:
    try:
        value = config.get(key)
    except KeyError:
        return default
    return default if value is None else value


def _get_key(config: BrokerConfigSource, key: str) -> Any:
    return _get(config, key, _default(key))


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


@dataclass(frozen=True)
class ControllerConfig:
    """What the controller needs to know about its broker's configuration."""

    broker_id: int
    delete_topic_enable: bool = _default("delete.topic.enable")
    unclean_leader_election_enable: bool = _default("unclean.leader.election.enable")
    inter_broker_listener_name: str = _INTER_BROKER_LISTENER_NAME
    controller_socket_timeout_ms: int = _default("controller.socket.timeout.ms")
    auto_leader_rebalance_enable: bool = _default("auto.leader.rebalance.enable")
    leader_imbalance_check_interval_seconds: int = _default(
        "leader.imbalance.check.interval.seconds"
    )
    leader_imbalance_per_broker_percentage: int = _default("leader.imbalance.per.broker.percentage")

    @classmethod
    def from_config(cls, config: BrokerConfigSource) -> ControllerConfig:
        listener = _get(config, "inter.broker.listener.name", None) or _get(
            config, "security.inter.broker.protocol", _INTER_BROKER_LISTENER_NAME
        )
        return cls(
            broker_id=int(config.broker_id),
            delete_topic_enable=_bool(_get_key(config, "delete.topic.enable")),
            unclean_leader_election_enable=_bool(
                _get_key(config, "unclean.leader.election.enable")
            ),
            inter_broker_listener_name=str(listener),
            controller_socket_timeout_ms=int(_get_key(config, "controller.socket.timeout.ms")),
            auto_leader_rebalance_enable=_bool(_get_key(config, "auto.leader.rebalance.enable")),
            leader_imbalance_check_interval_seconds=int(
                _get_key(config, "leader.imbalance.check.interval.seconds")
            ),
            leader_imbalance_per_broker_percentage=int(
                _get_key(config, "leader.imbalance.per.broker.percentage")
            ),
        )
