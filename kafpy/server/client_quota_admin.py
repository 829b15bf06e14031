"""AlterClientQuotas and DescribeClientQuotas on the metadata store (the client-quota half
of Kafka 2.8's ZkAdminManager).

An API entity is a list of (entity type, name) with types `user` and `client-id` (a null
name is the default); it lives in the store as `/config/users/<user>`,
`/config/clients/<client-id>` or `/config/users/<user>/clients/<client-id>` (names
sanitized, `<default>` for defaults). An `ip` entity (alone: Kafka refuses it beside a
user or client id) holds `connection_creation_rate` at `/config/ips/<ip>`. Brokers learn of
changes through `/config/changes`. `controller_mutation_rate` is refused: kafpy does not
enforce it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.client_quota_config import (
    CLIENT_ID_ENTITY_TYPE,
    DEFAULT,
    IP_ENTITY_TYPE,
    IP_QUOTA_CONFIG_NAMES,
    LONG_QUOTA_CONFIGS,
    QUOTA_CONFIG_NAMES,
    USER_ENTITY_TYPE,
    desanitize,
    is_valid_ip_entity,
    sanitize,
)
from kafpy.common.errors import KafkaError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigType
from kafpy.protocol.errors import Errors

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

# an entity as the store holds it: {"user": name or None (default), "client-id": ...}
Entity = dict[str, str | None]


class InvalidRequest(Exception):
    """A quota request Kafka answers with INVALID_REQUEST; the message says why."""


def _entity(parts: Sequence[Mapping[str, Any]]) -> Entity:
    entity: Entity = {}
    for part in parts:
        kind, name = part["entity_type"], part["entity_name"]
        if kind not in (USER_ENTITY_TYPE, CLIENT_ID_ENTITY_TYPE, IP_ENTITY_TYPE):
            raise InvalidRequest(f"Unexpected quota entity type {kind}")
        if kind in entity:
            raise InvalidRequest(f"Duplicate quota entity type {kind}")
        if name == "":
            raise InvalidRequest(f"The {kind} name of a quota entity must not be empty")
        entity[kind] = name
    if not entity:
        raise InvalidRequest("Invalid client quota entity")
    if IP_ENTITY_TYPE in entity:
        if len(entity) > 1:
            raise InvalidRequest(
                "Invalid quota entity combination, IP entity should not be used with "
                "user/client ID entity."
            )
        ip = entity[IP_ENTITY_TYPE]
        if ip is not None and not is_valid_ip_entity(ip):
            raise InvalidRequest(f"{ip} is not a valid IP or resolvable host.")
    return entity


def _path(entity: Entity) -> tuple[str, str]:
    """The (entity type, entity name) of the config node that holds `entity`'s quotas."""

    def name(kind: str) -> str:
        value = entity[kind]
        return DEFAULT if value is None else sanitize(value)

    if IP_ENTITY_TYPE in entity:
        return ConfigType.IP, name(IP_ENTITY_TYPE)
    if USER_ENTITY_TYPE in entity and CLIENT_ID_ENTITY_TYPE in entity:
        return ConfigType.USER, f"{name(USER_ENTITY_TYPE)}/clients/{name(CLIENT_ID_ENTITY_TYPE)}"
    if USER_ENTITY_TYPE in entity:
        return ConfigType.USER, name(USER_ENTITY_TYPE)
    return ConfigType.CLIENT, name(CLIENT_ID_ENTITY_TYPE)


def _format(key: str, value: float) -> str:
    if key in IP_QUOTA_CONFIG_NAMES:  # an INT (Kafka rounds within 1e-6)
        rounded = int(value + 1e-6)
        if abs(rounded - value) > 1e-6:
            raise InvalidRequest(f"Configuration {key} must be a INT value")
        return str(rounded)
    if key in LONG_QUOTA_CONFIGS:
        if value != int(value):
            raise InvalidRequest(f"Configuration {key} must be a Long value")
        return str(int(value))
    return str(float(value))


def _parse_name(name: str) -> str | None:
    return None if name == DEFAULT else desanitize(name)


class ClientQuotaAdmin:
    """Quota reads and writes for the client quota APIs, over the metadata store."""

    def __init__(self, zk_client: KafkaZkClient) -> None:
        self.zk_client = zk_client
        self.admin = AdminZkClient(zk_client)

    async def alter_client_quotas(self, body: Mapping[str, Any]) -> dict[str, Any]:
        results = []
        for entry in body["entries"]:
            result: dict[str, Any] = {"error_code": Errors.NONE, "error_message": None,
                                      "entity": entry["entity"]}  # fmt: skip
            try:
                await self._alter_one(entry, body["validate_only"])
            except InvalidRequest as e:
                result.update(error_code=Errors.INVALID_REQUEST, error_message=str(e))
            except KafkaError as e:
                result.update(error_code=e.code, error_message=str(e))
            results.append(result)
        return {"throttle_time_ms": 0, "entries": results}

    async def _alter_one(self, entry: Mapping[str, Any], validate_only: bool) -> None:
        entity = _entity(entry["entity"])
        entity_type, entity_name = _path(entity)
        configs = await self.zk_client.get_entity_configs(entity_type, entity_name)
        known = IP_QUOTA_CONFIG_NAMES if entity_type == ConfigType.IP else QUOTA_CONFIG_NAMES
        for op in entry["ops"]:
            key = op["key"]
            if key not in known:
                raise InvalidRequest(
                    f"Invalid configuration key {key}: kafpy enforces the quotas {', '.join(known)}"
                )
            if op["remove"]:
                configs.pop(key, None)
                continue
            if entity_type == ConfigType.IP:
                # Kafka's ConfigDef for the IP quota: an INT, at least 0 (0 blocks the IP)
                if not 0 <= op["value"] <= 2**31 - 1:
                    raise InvalidRequest(
                        f"Invalid value {op['value']} for configuration {key}: Value must be "
                        "at least 0"
                    )
            elif not op["value"] > 0:
                raise InvalidRequest(f"Invalid value {op['value']} for {key}: it must be positive")
            configs[key] = _format(key, op["value"])
        if not validate_only:
            await self.admin.change_configs(entity_type, entity_name, configs)

    async def _all_entities(self) -> list[tuple[Entity, dict[str, str]]]:
        zk = self.zk_client
        found: list[tuple[Entity, dict[str, str]]] = []
        for client in await zk.get_all_entities_with_config(ConfigType.CLIENT):
            found.append(({CLIENT_ID_ENTITY_TYPE: _parse_name(client)},
                          await zk.get_entity_configs(ConfigType.CLIENT, client)))  # fmt: skip
        for user in await zk.get_all_entities_with_config(ConfigType.USER):
            found.append(({USER_ENTITY_TYPE: _parse_name(user)},
                          await zk.get_entity_configs(ConfigType.USER, user)))  # fmt: skip
            nested = f"{ConfigType.USER}/{user}/clients"
            for client in await zk.get_all_entities_with_config(nested):
                configs = await zk.get_entity_configs(ConfigType.USER, f"{user}/clients/{client}")
                entity = {USER_ENTITY_TYPE: _parse_name(user),
                          CLIENT_ID_ENTITY_TYPE: _parse_name(client)}  # fmt: skip
                found.append((entity, configs))
        for ip in await zk.get_all_entities_with_config(ConfigType.IP):
            found.append(({IP_ENTITY_TYPE: _parse_name(ip)},
                          await zk.get_entity_configs(ConfigType.IP, ip)))  # fmt: skip
        return found

    async def describe_client_quotas(self, body: Mapping[str, Any]) -> dict[str, Any]:
        components = body["components"]
        try:
            kinds = [c["entity_type"] for c in components]
            for c in components:
                if c["entity_type"] not in (
                    USER_ENTITY_TYPE,
                    CLIENT_ID_ENTITY_TYPE,
                    IP_ENTITY_TYPE,
                ):
                    raise InvalidRequest(f"Unexpected quota entity type {c['entity_type']}")
                if c["match_type"] not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
                    raise InvalidRequest(f"Unexpected match type {c['match_type']}")
                if c["match_type"] == MATCH_EXACT and not c["match"]:
                    raise InvalidRequest(f"An exact match of {c['entity_type']} needs a name")
            if len(set(kinds)) != len(kinds):
                raise InvalidRequest("Duplicate entity type in the filter")
        except InvalidRequest as e:
            return {"throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST,
                    "error_message": str(e), "entries": None}  # fmt: skip
        entries = []
        for entity, configs in await self._all_entities():
            if body["strict"] and set(entity) != set(kinds):
                continue
            if not all(_matches(entity, c) for c in components):
                continue
            names = IP_QUOTA_CONFIG_NAMES if IP_ENTITY_TYPE in entity else QUOTA_CONFIG_NAMES
            values = [{"key": k, "value": float(v)} for k, v in sorted(configs.items())
                      if k in names]  # fmt: skip
            if values:
                entries.append({
                    "entity": [{"entity_type": k, "entity_name": n} for k, n in entity.items()],
                    "values": values,
                })  # fmt: skip
        return {"throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
                "entries": entries}  # fmt: skip


def _matches(entity: Entity, component: Mapping[str, Any]) -> bool:
    kind = component["entity_type"]
    if kind not in entity:
        return False
    name = entity[kind]
    if component["match_type"] == MATCH_EXACT:
        return bool(name == component["match"])
    if component["match_type"] == MATCH_DEFAULT:
        return name is None
    return True  # any name the entity gives this type, the default included
