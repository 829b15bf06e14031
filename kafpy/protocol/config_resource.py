"""The ids the config APIs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) carry.

`ConfigResourceType` is Kafka's ConfigResource.Type, `ConfigSource` is
DescribeConfigsResponse.ConfigSource and `AlterConfigOp` is AlterConfigOp.OpType, with
Kafka 2.8's ids; the broker (server.admin) and the client (client.admin_client) share them.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["AlterConfigOp", "ConfigResourceType", "ConfigSource"]


class ConfigResourceType(IntEnum):
    """What a config belongs to (ConfigResource.Type)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8

    @classmethod
    def for_id(cls, type_id: int) -> ConfigResourceType:
        """The type of a wire id; UNKNOWN for an id Kafka does not define (as forId)."""
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


class ConfigSource(IntEnum):
    """Where a described config value comes from (DescribeConfigs v1+ `config_source`)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class AlterConfigOp(IntEnum):
    """IncrementalAlterConfigs operations (AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3

    @classmethod
    def name_of(cls, op_id: int) -> str:
        """Kafka's name of an operation id, or the id itself when it names none."""
        try:
            return cls(op_id).name
        except ValueError:
            return str(op_id)
