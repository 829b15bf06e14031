"""ConfigHelper: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on a broker.

Kafka 2.8 describes configs in `kafka.server.ConfigHelper` and alters them in its
AdminManager; here both are one class, which AdminManager hands those requests to.
Topic configs are read from and written to `/config/topics/<topic>` (with a change
notification under `/config/changes`, which every broker's DynamicConfigManager applies to
its logs); broker configs are described from the broker's DynamicBrokerConfig (static
configs, `/config/brokers/<id>` and `/config/brokers/<default>`) with their synonyms and
sources, and altered there. Broker-logger configs are not built: altering them gets
INVALID_REQUEST saying so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common import topic as topic_rules
from kafpy.common.config_def import ConfigDef, ConfigKey, ConfigType
from kafpy.common.errors import (
    InvalidConfigurationError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.logger import PrefixAdapter
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigEntityName
from kafpy.metadata.zk_data import ConfigType as ZkConfigType
from kafpy.protocol.config_resource import AlterConfigOp, ConfigResourceType, ConfigSource
from kafpy.protocol.errors import Errors
from kafpy.server.admin_results import config_response, duplicates, set_error
from kafpy.server.dynamic_broker_config import (
    ALL_DYNAMIC_CONFIGS,
    DynamicBrokerConfig,
    broker_config_synonyms,
    loggable,
)
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF
from kafpy.storage.log_config import (
    LOG_CONFIG_DEF,
    LogConfig,
    broker_config_synonym,
    validate_names,
    validate_topic_config,
)

__all__ = ["ConfigHelper"]

_CONFIG_TYPE_IDS = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.SHORT: 4,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
    ConfigType.CLASS: 8,
    ConfigType.PASSWORD: 9,
}

_CONFIG_SOURCE_IDS = {
    "DYNAMIC_BROKER_CONFIG": ConfigSource.DYNAMIC_BROKER_CONFIG,
    "DYNAMIC_DEFAULT_BROKER_CONFIG": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    "STATIC_BROKER_CONFIG": ConfigSource.STATIC_BROKER_CONFIG,
    "DEFAULT_CONFIG": ConfigSource.DEFAULT_CONFIG,
}


def _config_string(type_: ConfigType | None, value: object) -> str | None:
    """A typed config value as Kafka's ConfigDef.convertToString writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


class ConfigHelper:
    """Describes and alters the configs of topics and of this broker.

    Parameters:
        dynamic_config: the broker's DynamicBrokerConfig (its static configs, dynamic
            configs and defaults, which it reports and alters).
        zk_client: the broker's KafkaZkClient.
        admin_zk_client: writes topic config overrides and their change notifications.
        log: the AdminManager's logger, which errors of single resources are logged to.
    """

    def __init__(
        self,
        dynamic_config: DynamicBrokerConfig,
        zk_client: KafkaZkClient,
        admin_zk_client: AdminZkClient,
        log: PrefixAdapter,
    ) -> None:
        self.dynamic_config = dynamic_config
        self.broker_id = dynamic_config.current.broker_id
        self.zk_client = zk_client
        self.admin_zk_client = admin_zk_client
        self.log = log

    # -- DescribeConfigs -------------------------------------------------------------------------------

    async def describe_configs(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The DescribeConfigs response body (v0–3); a null or empty key list means all keys."""
        include_synonyms = bool(body.get("include_synonyms", False)) if version >= 1 else False
        include_docs = bool(body.get("include_documentation", False)) if version >= 3 else False
        results = []
        for resource in body.get("resources") or []:
            rtype = int(resource["resource_type"])
            rname = resource["resource_name"]
            keys = resource.get("configuration_keys")
            result: dict[str, Any] = {
                "error_code": Errors.NONE,
                "error_message": None,
                "resource_type": rtype,
                "resource_name": rname,
                "configs": [],
            }
            try:
                if rtype == ConfigResourceType.TOPIC:
                    entries = await self._describe_topic(rname, include_synonyms, include_docs)
                elif rtype == ConfigResourceType.BROKER:
                    entries = self._describe_broker(rname, include_synonyms, include_docs)
                elif rtype == ConfigResourceType.BROKER_LOGGER:
                    self._check_broker_id(rname, allow_empty=False)
                    raise InvalidRequestError(
                        "Broker logger configs (BROKER_LOGGER) are not supported by kafpy; "
                        "set log levels with the broker's logging configuration."
                    )
                else:
                    raise InvalidRequestError(
                        f"Unsupported resource type: {ConfigResourceType.for_id(rtype).name}"
                    )
                if keys:
                    wanted = set(keys)
                    entries = [e for e in entries if e["name"] in wanted]
                result["configs"] = entries
            except Exception as e:
                set_error(
                    self.log,
                    result,
                    e,
                    f"Error processing describe configs request for resource {rname}",
                )
            results.append(result)
        return {"throttle_time_ms": 0, "results": results}

    async def _describe_topic(
        self, topic: str, include_synonyms: bool, include_docs: bool
    ) -> list[dict[str, Any]]:
        topic_rules.validate(topic)
        if not await self.zk_client.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        overrides = await self.admin_zk_client.fetch_entity_config(ZkConfigType.TOPIC, topic)
        return self.topic_config_entries(overrides, include_synonyms, include_docs)

    def topic_config_entries(
        self,
        overrides: Mapping[str, Any],
        include_synonyms: bool = False,
        include_docs: bool = False,
    ) -> list[dict[str, Any]]:
        """DescribeConfigs entries of a topic with these overrides of the broker's defaults
        (CreateTopics v5+ reports them for the topics it creates, validate_only too)."""
        defaults = self.dynamic_config.current.log_default_config()
        log_config = LogConfig.from_props(defaults.values(), overrides)
        entries = []
        for key in sorted(LOG_CONFIG_DEF, key=lambda k: k.name):
            value = _config_string(key.type, log_config.get(key.name))
            synonyms: list[dict[str, Any]] = []
            if key.name in overrides:
                synonyms.append(
                    {"name": key.name, "value": value, "source": ConfigSource.DYNAMIC_TOPIC_CONFIG}
                )
            broker_key = broker_config_synonym(key.name)
            if broker_key is not None:
                synonyms.extend(self._config_synonyms(broker_key))
            entries.append(self._entry(key, value, synonyms, False, include_synonyms, include_docs))
        return entries

    def _check_broker_id(self, name: str | None, allow_empty: bool = True) -> int | None:
        if not name:
            if allow_empty:
                return None
            raise InvalidRequestError("Broker id must not be empty")
        try:
            broker_id = int(name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
        if broker_id != self.broker_id:
            raise InvalidRequestError(
                f"Unexpected broker id, expected {self.broker_id} or empty string, but "
                f"received {name}"
            )
        return broker_id

    def _config_synonyms(self, name: str) -> list[dict[str, Any]]:
        """Kafka's configSynonyms: the values of `name` and its synonyms, by source in
        order of precedence (this broker's dynamic configs, the cluster's dynamic defaults,
        server.properties, the defaults), from `name` itself on."""
        names = broker_config_synonyms(name)
        found = []
        for source, values in self.dynamic_config.synonym_sources():
            for synonym in names:
                if values.get(synonym) is not None:
                    key = KAFKA_CONFIG_DEF.key(synonym) if synonym in KAFKA_CONFIG_DEF else None
                    found.append(
                        {
                            "name": synonym,
                            "value": _config_string(key.type if key else None, values[synonym]),
                            "source": _CONFIG_SOURCE_IDS[source],
                        }
                    )
        while found and found[0]["name"] != name:
            found.pop(0)
        return found

    def _describe_broker(
        self, name: str | None, include_synonyms: bool, include_docs: bool
    ) -> list[dict[str, Any]]:
        if self._check_broker_id(name) is None:
            # the cluster-wide dynamic defaults: their own entries only
            entries = []
            for config_name, raw in sorted(self.dynamic_config.dynamic_default_configs.items()):
                key = KAFKA_CONFIG_DEF.key(config_name) if config_name in KAFKA_CONFIG_DEF else None
                synonyms = [
                    s
                    for s in self._config_synonyms(config_name)
                    if s["source"] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                ]
                entries.append(
                    self._entry(key, _config_string(key.type if key else None, raw), synonyms,
                                config_name not in ALL_DYNAMIC_CONFIGS, include_synonyms,
                                include_docs, config_name)
                )  # fmt: skip
            return entries
        current = self.dynamic_config.current
        values: dict[str, Any] = {
            k: v
            for k, v in current.originals.items()
            if v is not None and k not in KAFKA_CONFIG_DEF
        }
        values.update({key.name: current.get(key.name) for key in KAFKA_CONFIG_DEF})
        entries = []
        for config_name in sorted(values):
            key = KAFKA_CONFIG_DEF.key(config_name) if config_name in KAFKA_CONFIG_DEF else None
            synonyms = self._config_synonyms(config_name)
            value = _config_string(key.type if key else None, values[config_name])
            entries.append(
                self._entry(key, value, synonyms, config_name not in ALL_DYNAMIC_CONFIGS,
                            include_synonyms, include_docs, config_name)
            )  # fmt: skip
        return entries

    @staticmethod
    def _entry(
        key: ConfigKey | None,
        value: str | None,
        synonyms: list[dict[str, Any]],
        read_only: bool,
        include_synonyms: bool,
        include_docs: bool,
        name: str | None = None,
    ) -> dict[str, Any]:
        # A key of unknown type may hold a secret: Kafka reports it as sensitive, valueless.
        sensitive = key is None or key.type is ConfigType.PASSWORD
        if sensitive:
            value = None
            synonyms = [{**s, "value": None} for s in synonyms]
        source = synonyms[0]["source"] if synonyms else ConfigSource.DEFAULT_CONFIG
        return {
            "name": key.name if key is not None else name,
            "value": value,
            "read_only": read_only,
            "is_default": source == ConfigSource.DEFAULT_CONFIG,
            "config_source": source,
            "is_sensitive": sensitive,
            "synonyms": synonyms if include_synonyms else [],
            "config_type": _CONFIG_TYPE_IDS.get(key.type, 0) if key is not None else 0,
            "documentation": (key.doc or None) if include_docs and key is not None else None,
        }

    # -- AlterConfigs / IncrementalAlterConfigs ------------------------------------------------------

    async def alter_configs(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The AlterConfigs response body (v0–1): a topic's overrides are replaced by the
        given set."""

        async def alter(rtype: int, rname: str, entries: list[Any], validate_only: bool) -> None:
            null_updates = [c["name"] for c in entries if c.get("value") is None]
            if null_updates:
                raise InvalidRequestError(
                    f"Null value not supported for : {','.join(null_updates)}"
                )
            props = {c["name"]: c["value"] for c in entries}
            if rtype == ConfigResourceType.TOPIC:
                await self._alter_topic_configs(rname, props, validate_only)
            elif rtype == ConfigResourceType.BROKER:
                await self._alter_broker_configs(rname, props, validate_only)
            else:
                raise _alter_not_supported(rtype)

        return await self._alter_each(body, alter, "alter configs")

    async def incremental_alter_configs(
        self, body: Mapping[str, Any], version: int
    ) -> dict[str, Any]:
        """The IncrementalAlterConfigs response body (v0–1): SET, DELETE, APPEND and SUBTRACT
        applied to a topic's current overrides."""

        async def alter(rtype: int, rname: str, ops: list[Any], validate_only: bool) -> None:
            dupes = duplicates([op["name"] for op in ops])
            if dupes:
                raise InvalidRequestError(
                    f"Error due to duplicate config keys : {','.join(sorted(dupes))}"
                )
            null_updates = [
                f"{AlterConfigOp.name_of(op['config_operation'])}:{op['name']}"
                for op in ops
                if op.get("value") is None and op["config_operation"] != AlterConfigOp.DELETE
            ]
            if null_updates:
                raise InvalidRequestError(
                    f"Null value not supported for : {','.join(null_updates)}"
                )
            if rtype == ConfigResourceType.TOPIC:
                props = await self.admin_zk_client.fetch_entity_config(ZkConfigType.TOPIC, rname)
                _apply_incremental(ops, props)
                await self._alter_topic_configs(rname, props, validate_only)
            elif rtype == ConfigResourceType.BROKER:
                entity = self._broker_entity(rname)
                stored = await self.admin_zk_client.fetch_entity_config(ZkConfigType.BROKER, entity)
                props = self.dynamic_config.from_persistent(stored, entity)
                _apply_incremental(ops, props, KAFKA_CONFIG_DEF)
                await self._alter_broker_configs(rname, props, validate_only)
            elif rtype == ConfigResourceType.BROKER_LOGGER:
                self._check_broker_id(rname)
                raise InvalidRequestError(
                    "Broker logger configs (BROKER_LOGGER) are not supported by kafpy; "
                    "set log levels with the broker's logging configuration."
                )
            else:
                raise _alter_not_supported(rtype)

        return await self._alter_each(body, alter, "incremental alter configs")

    async def _alter_each(
        self,
        body: Mapping[str, Any],
        alter: Callable[[int, str, list[Any], bool], Awaitable[None]],
        what: str,
    ) -> dict[str, Any]:
        """One response per resource of an alter request: `alter(type, name, configs,
        validate_only)` raises to answer the resource with an error."""
        validate_only = bool(body.get("validate_only", False))
        responses = []
        for resource in body.get("resources") or []:
            rtype = int(resource["resource_type"])
            rname = resource["resource_name"]
            response = config_response(rtype, rname)
            try:
                await alter(rtype, rname, list(resource.get("configs") or []), validate_only)
            except Exception as e:
                set_error(
                    self.log, response, e, f"Error processing {what} request for resource {rname}"
                )
            responses.append(response)
        return {"throttle_time_ms": 0, "responses": responses}

    async def _alter_topic_configs(
        self, topic: str, props: Mapping[str, str], validate_only: bool
    ) -> None:
        topic_rules.validate(topic)
        if not await self.zk_client.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        validate_names(props)  # an unknown name is INVALID_CONFIG
        try:
            validate_topic_config(props)
        except InvalidConfigurationError as e:
            # as Kafka: a bad value in AlterConfigs is INVALID_REQUEST
            raise InvalidRequestError(
                f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): {e}"
            ) from e
        if not validate_only:
            self.log.info("Updating topic %s with new configuration %s", topic, dict(props))
            await self.admin_zk_client.change_topic_config(topic, props)

    def _broker_entity(self, name: str | None) -> str:
        broker_id = self._check_broker_id(name)
        return ConfigEntityName.DEFAULT if broker_id is None else str(broker_id)

    async def _alter_broker_configs(
        self, name: str | None, props: Mapping[str, str], validate_only: bool
    ) -> None:
        """Replace the dynamic configs of this broker (`name` its id) or of the cluster
        default (`name` empty) with `props`, as Kafka's alterBrokerConfigs."""
        broker_id = self._check_broker_id(name)
        resource = f"ConfigResource(type=BROKER, name='{name or ''}')"
        try:
            self.dynamic_config.validate(props, per_broker=broker_id is not None)
        except InvalidRequestError as e:
            raise InvalidRequestError(f"Invalid config value for resource {resource}: {e}") from e
        if not validate_only:
            self.log.info("Updating dynamic configs of %s: %s", resource, loggable(props))
            await self.admin_zk_client.change_broker_config(
                broker_id, self.dynamic_config.to_persistent(props)
            )


def _alter_not_supported(rtype: int) -> InvalidRequestError:
    return InvalidRequestError(
        "AlterConfigs is only supported for topics and brokers, but resource type is "
        f"{ConfigResourceType.for_id(rtype).name}"
    )


def _apply_incremental(
    ops: Sequence[Mapping[str, Any]], props: dict[str, str], config_def: ConfigDef = LOG_CONFIG_DEF
) -> None:
    """Apply IncrementalAlterConfigs operations to a topic's overrides (or, with
    KAFKA_CONFIG_DEF, a broker's dynamic configs), in place."""
    for op in ops:
        name = op["name"]
        kind = op["config_operation"]
        value = op.get("value")
        if kind == AlterConfigOp.SET:
            props[name] = str(value)
        elif kind == AlterConfigOp.DELETE:
            props.pop(name, None)
        elif kind in (AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT):
            if name not in config_def:
                kind_of = "topic" if config_def is LOG_CONFIG_DEF else "broker"
                raise InvalidConfigurationError(f"Unknown {kind_of} config name: {name}")
            key = config_def.key(name)
            verb = "append" if kind == AlterConfigOp.APPEND else "subtract"
            if key.type is not ConfigType.LIST:
                raise InvalidRequestError(
                    f"Config value {verb} is not allowed for config key: {name}"
                )
            current = props.get(name)
            if current is None:
                current = _config_string(key.type, key.default) or ""
            old = [v for v in current.split(",") if v]
            given = [v for v in str(value).split(",") if v]
            new = (
                old + given if kind == AlterConfigOp.APPEND else [v for v in old if v not in given]
            )
            props[name] = ",".join(new)
        else:
            raise InvalidRequestError(
                f"Unknown config operation {kind} for config {name}: expected 0 (SET), 1 (DELETE), "
                "2 (APPEND) or 3 (SUBTRACT)"
            )
