"""The client quota configs of users, client ids and IPs, as Kafka 2.x stores them.

`producer_byte_rate`, `consumer_byte_rate` and `request_percentage` under
`/config/clients/<client-id>`, `/config/users/<user>` and `/config/users/<user>/clients/
<client-id>`, `<default>` standing for every user or client id; `connection_creation_rate`
under `/config/ips/<ip>` (or `<default>`). One home for the names and their validation,
used by the admin tools that write them and the broker that enforces them.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from enum import Enum

from kafpy.common import sanitizer

# the entity name of defaults (Kafka's ConfigEntityName.Default)
DEFAULT = "<default>"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_CONFIG_NAMES = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
# Kafka's QuotaConfigs.IP_CONNECTION_RATE_OVERRIDE_CONFIG: an INT, at least 0 (0 refuses
# every connection of the address)
IP_CONNECTION_RATE = "connection_creation_rate"
IP_QUOTA_CONFIG_NAMES = (IP_CONNECTION_RATE,)


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


def normalize_ip(address: str) -> str:
    """An address in its canonical text, an IPv4-mapped IPv6 address as its IPv4 address
    (a dual-stack listener reports IPv4 clients so); anything else unchanged."""
    try:
        ip = ipaddress.ip_address(address.strip("[]").split("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def resolve_host(host: str) -> str | None:
    """The address of an IP or host name (Java's InetAddress.getByName); None when it
    neither parses nor resolves."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return normalize_ip(host)
    except ValueError:
        pass
    try:
        return normalize_ip(socket.gethostbyname(host))
    except (OSError, UnicodeError):
        return None


def is_valid_ip_entity(name: str) -> bool:
    """Kafka's DynamicConfig.Ip.isValidIpEntity: `<default>`, an IP or a resolvable host."""
    return name == DEFAULT or resolve_host(name) is not None


def validate_ip_quota_configs(configs: Mapping[str, str]) -> dict[str, int]:
    """An IP's quota values (Kafka's DynamicConfig.Ip.validate); ValueError with Kafka's
    words for an unknown key or a value that is not an int of at least 0."""
    unknown = sorted(k for k in configs if k not in IP_QUOTA_CONFIG_NAMES)
    if unknown:
        raise ValueError(f"Unknown Dynamic Configuration: Set({', '.join(unknown)}).")
    values: dict[str, int] = {}
    for key, text in configs.items():
        try:
            value = int(str(text).strip())
        except ValueError:
            raise ValueError(
                f"Invalid value {text} for configuration {key}: Not a number of type INT"
            ) from None
        if not 0 <= value <= 2**31 - 1:
            raise ValueError(
                f"Invalid value {text} for configuration {key}: Value must be at least 0"
            )
        values[key] = value
    return values
