"""The client quota configs of users and client ids, as Kafka 2.x stores them.

`producer_byte_rate`, `consumer_byte_rate` and `request_percentage` under
`/config/clients/<client-id>`, `/config/users/<user>` and `/config/users/<user>/clients/
<client-id>`, `<default>` standing for every user or client id. One home for the names and
their validation, used by the admin tools that write them and the broker that enforces them.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from kafpy.common import sanitizer

# the entity name of defaults (Kafka's ConfigEntityName.Default)
DEFAULT = "<default>"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_CONFIG_NAMES = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)


class QuotaType(Enum):
    """What a quota bounds, and the config that sets it."""

    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE
    REQUEST = REQUEST_PERCENTAGE


# A quota entity: (user, client id); None where the entity does not name that part.
QuotaEntity = tuple[str | None, str | None]


def validate_quota_configs(configs: Mapping[str, str]) -> dict[str, float]:
    """The quota values of an entity's configs; ValueError naming a key kafpy does not
    know or a value that is not a positive number."""
    values: dict[str, float] = {}
    for key, text in configs.items():
        if key not in QUOTA_CONFIG_NAMES:
            continue  # users also hold SCRAM credentials
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"Invalid value {text} for quota {key}: not a number") from None
        if value <= 0:
            raise ValueError(f"Invalid value {text} for quota {key}: it must be greater than 0")
        values[key] = value
    return values


def entity_from_path(entity_type: str, entity_name: str) -> QuotaEntity:
    """The quota entity of a config node: ("clients", "c1") -> (None, "c1");
    ("users", "alice") -> ("alice", None); ("users", "alice/clients/c1") -> ("alice", "c1")."""
    if entity_type == "clients":
        return None, desanitize(entity_name)
    user, sep, client = entity_name.partition("/clients/")
    return desanitize(user), (desanitize(client) if sep else None)


# what the client quota APIs call the parts of an entity
USER_ENTITY_TYPE = "user"
CLIENT_ID_ENTITY_TYPE = "client-id"
IP_ENTITY_TYPE = "ip"
# Kafka's quota configs that are LONGs (the others are DOUBLEs)
LONG_QUOTA_CONFIGS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)


def sanitize(name: str) -> str:
    """An entity name as a ZooKeeper node name (kafpy.common.sanitizer); `<default>` stays."""
    return name if name == DEFAULT else sanitizer.sanitize(name)


def desanitize(name: str) -> str:
    """The entity name a node name stands for; `<default>` stays."""
    return name if name == DEFAULT else sanitizer.desanitize(name)
