"""DynamicConfigManager: applies config changes made through the metadata store to this
broker (Kafka's `kafka.server.DynamicConfigManager` with its
ZkNodeChangeNotificationListener and TopicConfigHandler).

Whoever changes an entity's config (AlterConfigs on the controller, `kafpy configs`)
rewrites `/config/<type>/<name>` and then creates a sequential notification
`/config/changes/config_change_<n>` holding `{"version":2,"entity_path":"topics/t"}`.
Every broker watches `/config/changes`: for each notification newer than the last one it
processed it reads the entity's current overrides and hands them to the handler of that
entity type. Topic overrides become the topic's LogConfig in the LogManager (its logs
change at once, logs created later get it too). Notifications older than 15 minutes are
deleted by whichever broker sees them, as Kafka does.

Broker configs (`/config/brokers/<default>` and `/config/brokers/<id>`) go to the
BrokerConfigHandler, which hands them to the broker's DynamicBrokerConfig; a broker ignores
the per-broker configs of other brokers.

IP configs (`/config/ips/<ip>` and `<default>`: `connection_creation_rate`) go to the
IpConfigHandler, which sets the socket server's ConnectionQuotas.

At start-up every stored entity config is applied once, so changes made while the broker
was down are not missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kafpy.common.client_quota_config import (
    DEFAULT,
    IP_CONNECTION_RATE,
    desanitize,
    entity_from_path,
    resolve_host,
)
from kafpy.common.errors import KafkaError
from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigType,
    ZkDataError,
)
from kafpy.metadata.zk_node_change_notification_listener import (
    CHANGE_EXPIRATION_MS,
    ZkNodeChangeNotificationListener,
)
from kafpy.server.client_quota_manager import QuotaManagers
from kafpy.server.dynamic_broker_config import DEFAULT_ENTITY_NAME, DynamicBrokerConfig
from kafpy.storage.log_config import UNCLEAN_LEADER_ELECTION_ENABLE, LogConfig

__all__ = [
    "BrokerConfigHandler",
    "ConfigHandler",
    "DynamicConfigManager",
    "IpConfigHandler",
    "QuotaConfigHandler",
    "TopicConfigHandler",
    "UserConfigHandler",
]

_PREFIX = ConfigEntityChangeNotificationSequenceZNode.SEQUENCE_NUMBER_PREFIX


class ConfigHandler(Protocol):
    """Applies one entity type's config overrides to the broker."""

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None: ...


class _TopicConfigTarget(Protocol):
    current_default_config: LogConfig

    def update_topic_config(self, topic: str, config: LogConfig) -> None: ...


class _UncleanElectionTarget(Protocol):
    def enable_topic_unclean_leader_election(self, topic: str) -> None: ...


class TopicConfigHandler:
    """Turns a topic's overrides into its LogConfig (the broker's defaults overridden) and
    gives it to the LogManager; when the overrides enable unclean leader election, tells
    the controller, which elects leaders for the topic's offline partitions (as Kafka's)."""

    def __init__(
        self, log_manager: _TopicConfigTarget, controller: _UncleanElectionTarget | None = None
    ) -> None:
        self.log_manager = log_manager
        self.controller = controller
        self.log = component_logger("kafpy.server.TopicConfigHandler", "TopicConfigHandler")

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None:
        defaults = self.log_manager.current_default_config
        try:
            config = LogConfig.from_props(defaults.values(), overrides)
        except KafkaError as e:
            self.log.error(
                "Ignoring the stored configuration of topic %s: %s. Fix it with kafpy configs "
                "--alter --entity-type topics --entity-name %s.",
                entity_name, e, entity_name,
            )  # fmt: skip
            return
        self.log.info("Processing override for topic %s: %s", entity_name, dict(overrides))
        self.log_manager.update_topic_config(entity_name, config)
        if self.controller is not None and UNCLEAN_LEADER_ELECTION_ENABLE in overrides:
            if config.unclean_leader_election_enable:
                self.controller.enable_topic_unclean_leader_election(entity_name)


class BrokerConfigHandler:
    """Hands the cluster-wide dynamic broker defaults and this broker's own dynamic configs
    to its DynamicBrokerConfig (Kafka's BrokerConfigHandler)."""

    def __init__(self, dynamic_config: DynamicBrokerConfig) -> None:
        self.dynamic_config = dynamic_config

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None:
        if entity_name == DEFAULT_ENTITY_NAME:
            self.dynamic_config.update_default_config(overrides)
        elif entity_name.strip() == str(self.dynamic_config.broker_id):
            self.dynamic_config.update_broker_config(overrides)


class QuotaConfigHandler:
    """Hands the quotas stored for client ids (`/config/clients/<id>`) or users
    (`/config/users/<user>[/clients/<id>]`) to the broker's quota managers (Kafka's
    ClientIdConfigHandler and the quota side of its UserConfigHandler)."""

    def __init__(self, entity_type: str, quotas: QuotaManagers) -> None:
        self.entity_type = entity_type
        self.quotas = quotas
        self.log = component_logger("kafpy.server.QuotaConfigHandler", "QuotaConfigHandler")

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None:
        entity = entity_from_path(self.entity_type, entity_name)
        try:
            self.quotas.update_entity(entity, overrides)
        except ValueError as e:
            self.log.error(
                "Ignoring the stored quotas of %s %s: %s", self.entity_type, entity_name, e
            )


class _IpQuotaTarget(Protocol):
    def update_ip_connection_rate_quota(self, ip: str | None, rate: int | None) -> None: ...


class IpConfigHandler:
    """Hands an IP's connection-rate quota (`/config/ips/<ip>`, `<default>` for every IP
    without its own) to the ConnectionQuotas (Kafka's IpConfigHandler)."""

    def __init__(self, connection_quotas: _IpQuotaTarget) -> None:
        self.connection_quotas = connection_quotas
        self.log = component_logger("kafpy.server.IpConfigHandler", "IpConfigHandler")

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None:
        raw = overrides.get(IP_CONNECTION_RATE)
        try:
            rate = None if raw is None else int(raw)
        except ValueError:
            self.log.error(
                "Ignoring the stored %s=%s of ip %s", IP_CONNECTION_RATE, raw, entity_name
            )
            return
        if entity_name == DEFAULT:
            self.connection_quotas.update_ip_connection_rate_quota(None, rate)
            return
        address = resolve_host(desanitize(entity_name))
        if address is None:
            self.log.error("Unable to resolve address %s: its quota is not applied", entity_name)
            return
        self.connection_quotas.update_ip_connection_rate_quota(address, rate)


class UserConfigHandler:
    """Kafka's UserConfigHandler: a user's config node holds its client quotas and its
    SCRAM credentials; a user's client id node (`<user>/clients/<client-id>`) quotas only."""

    def __init__(self, quotas: ConfigHandler | None, credentials: ConfigHandler | None) -> None:
        self.quotas = quotas
        self.credentials = credentials

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None:
        if self.quotas is not None:
            self.quotas.process_config_changes(entity_name, overrides)
        if self.credentials is not None and "/clients/" not in entity_name:
            self.credentials.process_config_changes(entity_name, overrides)


class DynamicConfigManager:
    """Watches `/config/changes` and applies each change through the handler of its entity type.

    `await startup()` applies every stored topic config and starts watching;
    `await shutdown()` stops processing. The notifications themselves are followed by a
    ZkNodeChangeNotificationListener.
    """

    def __init__(
        self,
        zk_client: KafkaZkClient,
        handlers: Mapping[str, ConfigHandler],
        time: Time = SYSTEM_TIME,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
    ) -> None:
        self.zk_client = zk_client
        self.handlers = dict(handlers)
        self.time = time
        self.change_expiration_ms = change_expiration_ms
        self.listener = ZkNodeChangeNotificationListener(
            zk_client.store,
            ConfigEntityChangeNotificationZNode.path,
            _PREFIX,
            self._process_notification,
            time=time,
            change_expiration_ms=change_expiration_ms,
        )
        self.log = self.listener.log

    @classmethod
    def for_log_manager(
        cls,
        zk_client: KafkaZkClient,
        log_manager: _TopicConfigTarget,
        time: Time = SYSTEM_TIME,
        dynamic_config: DynamicBrokerConfig | None = None,
        controller: _UncleanElectionTarget | None = None,
        quotas: QuotaManagers | None = None,
    ) -> DynamicConfigManager:
        """The broker's manager: topic config changes go to `log_manager` (and enabling
        unclean leader election to `controller`), broker config changes to
        `dynamic_config`."""
        handlers: dict[str, ConfigHandler] = {
            ConfigType.TOPIC: TopicConfigHandler(log_manager, controller)
        }
        if dynamic_config is not None:
            handlers[ConfigType.BROKER] = BrokerConfigHandler(dynamic_config)
        if quotas is not None:
            handlers[ConfigType.CLIENT] = QuotaConfigHandler(ConfigType.CLIENT, quotas)
            handlers[ConfigType.USER] = QuotaConfigHandler(ConfigType.USER, quotas)
        return cls(zk_client, handlers, time)

    async def startup(self) -> None:
        await self.listener.start()
        for entity_type, handler in self.handlers.items():
            for name in await self.zk_client.get_all_entities_with_config(entity_type):
                overrides = await self.zk_client.get_entity_configs(entity_type, name)
                handler.process_config_changes(name, overrides)
                if entity_type == ConfigType.USER:  # a user's client ids: users/u/clients/c
                    nested = f"{ConfigType.USER}/{name}/clients"
                    for client in await self.zk_client.get_all_entities_with_config(nested):
                        entity = f"{name}/clients/{client}"
                        overrides = await self.zk_client.get_entity_configs(ConfigType.USER, entity)
                        handler.process_config_changes(entity, overrides)

    async def shutdown(self) -> None:
        await self.listener.close()

    @property
    def last_executed_change(self) -> int:
        return self.listener.last_executed_change

    async def process_notifications(self) -> None:
        """Apply the notifications not processed yet (see ZkNodeChangeNotificationListener)."""
        await self.listener.process_notifications()

    async def _process_notification(self, path: str, data: bytes) -> None:
        try:
            entity_path = ConfigEntityChangeNotificationSequenceZNode.decode(data)
            entity_type, _, entity_name = entity_path.partition("/")
        except (ZkDataError, KeyError, ValueError) as e:
            self.log.error("Ignoring the malformed config change notification %s: %s", path, e)
            return
        handler = self.handlers.get(entity_type)
        if handler is None:
            self.log.debug("No handler for config changes of %s (%s); ignored", entity_type, path)
            return
        overrides = await self.zk_client.get_entity_configs(entity_type, entity_name)
        try:
            handler.process_config_changes(entity_name, overrides)
        except Exception:
            self.log.exception("Error processing the config change notification %s", path)
