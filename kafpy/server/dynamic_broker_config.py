"""DynamicBrokerConfig: the part of a broker's configuration that changes without a restart
(Kafka's `kafka.server.DynamicBrokerConfig`).

A broker's effective configuration is server.properties (the static configs), overridden
by the cluster-wide dynamic defaults stored at `/config/brokers/<default>`, overridden by
this broker's own dynamic configs at `/config/brokers/<id>`. Whoever alters them
(IncrementalAlterConfigs / AlterConfigs through `AdminManager`, i.e. `kafpy configs
--bootstrap-server B --entity-type brokers --alter ...`) writes the node and a change
notification under `/config/changes`; every broker's DynamicConfigManager hands the new
overrides to `update_default_config` / `update_broker_config`, which rebuild the effective
KafkaConfig and tell the reconfigurables (the LogManager's topic defaults, the
controller's unclean-election default) what changed.

Only keys Kafka 2.8 makes dynamic may be stored ("Cannot update these configs
dynamically: ..." otherwise, as Kafka says it). Of those, kafpy applies the log keys
(Kafka's DynamicLogConfig: log.retention.ms, log.segment.bytes, message.max.bytes,
unclean.leader.election.enable, min.insync.replicas, ...), the log cleaner's
(log.cleaner.threads, its buffers, throttle and backoff), num.replica.fetchers and the
connection quotas (max.connections, max.connections.per.ip[.overrides],
max.connection.creation.rate, and `listener.name.<l>.max.connections` /
`.max.connection.creation.rate`) and the listeners' security (KIP-226: `ssl.*` keys, a
listener's key and trust stores only with its `listener.name.<l>.` prefix, rebuild its
SslFactory for new connections; `sasl.enabled.mechanisms` and
`listener.name.<l>.connections.max.reauth.ms` its SASL settings; the Kerberos keys are
accepted without effect, as in Kafka on a broker without GSSAPI, and so are OAUTHBEARER's
login refresh keys, kafpy's login making a new token for each authentication). Security
and listener keys are per broker only, as in Kafka. Password keys (store passwords, inline
stores, JAAS configs) are stored encrypted with password.encoder.secret
(security/password_encoder.py; refused without it, as Kafka refuses them) and decoded when
read; a stored password that does not decode is logged and ignored, and at start-up those
encrypted with password.encoder.old.secret are encrypted again with the new secret. The
others (the other thread pools,
listeners, sasl.mechanism.inter.broker.protocol, principal.builder.class) are refused by
name, since kafpy cannot change them on a running broker yet.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.errors import InvalidConfigurationError, InvalidRequestError
from kafpy.common.logger import component_logger
from kafpy.common.time import Time
from kafpy.controller.controller_config import ControllerConfig
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigEntityName, ConfigType
from kafpy.network.channel_builders import listener_sasl_configs, reconfigured_ssl_factories
from kafpy.network.connection_quotas import (
    LISTENER_RECONFIGURABLE_CONFIGS,
    RECONFIGURABLE_CONFIGS,
    ConnectionQuotaConfig,
)
from kafpy.security.credential_cache import CredentialCache
from kafpy.security.delegation_token_cache import DelegationTokenCache
from kafpy.security.password_encoder import PasswordEncoderError
from kafpy.security.sasl_configs import NO_EFFECT_SASL_CONFIGS
from kafpy.security.sasl_server_authenticator import SaslListenerConfig
from kafpy.security.ssl_configs import BROKER_SSL_CONFIG_DEF
from kafpy.security.ssl_factory import SslFactory
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF, KafkaConfig
from kafpy.server.replication_quota_manager import (
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_RATE,
    ReplicationQuotaManager,
)
from kafpy.storage.cleaner.cleaner_config import CleanerConfig
from kafpy.storage.log_config import LOG_CONFIG_DEF, MESSAGE_FORMAT_VERSION, LogConfig

__all__ = [
    "ALL_DYNAMIC_CONFIGS",
    "DEFAULT_ENTITY_NAME",
    "DynamicBrokerConfig",
    "DynamicCleanerConfig",
    "DynamicConnectionQuotaConfig",
    "DynamicControllerConfig",
    "DYNAMIC_SECURITY_CONFIGS",
    "DynamicListenerSecurityConfig",
    "DynamicLogConfig",
    "DynamicReplicaFetcherConfig",
    "RECONFIGURABLE_LOG_CONFIGS",
    "broker_config_synonyms",
    "loggable",
]

DEFAULT_ENTITY_NAME = ConfigEntityName.DEFAULT

# Kafka's DynamicLogConfig.ReconfigurableConfigs: the broker keys topic configs default
# from (LogConfig.TopicConfigSynonyms), the message format version excepted.
RECONFIGURABLE_LOG_CONFIGS: frozenset[str] = frozenset(
    key.server_default_property
    for key in LOG_CONFIG_DEF
    if key.server_default_property is not None and key.name != MESSAGE_FORMAT_VERSION
)

# The other sets of Kafka 2.8's DynamicBrokerConfig.AllDynamicConfigs: dynamic in Kafka,
# not (yet) applicable on a running kafpy broker.
_CLEANER_CONFIGS = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
})  # fmt: skip
_THREAD_POOL_CONFIGS = frozenset({
    "num.io.threads", "num.network.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "background.threads",
})  # fmt: skip
_LISTENER_CONFIGS = frozenset(
    {"advertised.listeners", "listeners", "listener.security.protocol.map"}
)
_SOCKET_SERVER_CONFIGS = RECONFIGURABLE_CONFIGS
_OTHER_DYNAMIC_CONFIGS = frozenset({"metric.reporters"})
# Kafka's DynamicConfig.Broker (applied per broker by its BrokerConfigHandler)
_REPLICATION_THROTTLE_CONFIGS = frozenset(
    {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)
_LISTENER_PREFIX = "listener.name."
# Kafka's DynamicBrokerConfig.DynamicSecurityConfigs (SslConfigs.RECONFIGURABLE_CONFIGS):
# dynamic only with a listener prefix.
DYNAMIC_SECURITY_CONFIGS: frozenset[str] = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
})  # fmt: skip
# Kafka's DynamicListenerConfig.ReconfigurableConfigs (less the listener keys above)
_LISTENER_SSL_CONFIGS = frozenset({
    "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class",
}) | DYNAMIC_SECURITY_CONFIGS  # fmt: skip
_LISTENER_SASL_CONFIGS = (
    frozenset(
        {"sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms"}
    )
    | NO_EFFECT_SASL_CONFIGS
)
# Kafka's DynamicBrokerConfig.PerBrokerConfigs, and its ClusterLevelListenerConfigs (the
# listener-prefixed keys that may be set at the cluster default)
_PER_BROKER_CONFIGS = _LISTENER_CONFIGS | _LISTENER_SSL_CONFIGS | _LISTENER_SASL_CONFIGS
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
# Kafka's DynamicBrokerConfig.DynamicPasswordConfigs (matched at the end of a name)
_PASSWORD_CONFIGS = frozenset({
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "sasl.jaas.config",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
})  # fmt: skip
# what kafpy applies of a listener's settings: its SslFactory's keys, its SASL settings
_APPLIED_LISTENER_KEYS = (
    (frozenset(BROKER_SSL_CONFIG_DEF.names()) - {"principal.builder.class"})
    | {"sasl.enabled.mechanisms", "connections.max.reauth.ms"}
    | NO_EFFECT_SASL_CONFIGS
)

ALL_DYNAMIC_CONFIGS: frozenset[str] = (
    RECONFIGURABLE_LOG_CONFIGS
    | _CLEANER_CONFIGS
    | _THREAD_POOL_CONFIGS
    | _LISTENER_CONFIGS
    | _SOCKET_SERVER_CONFIGS
    | _OTHER_DYNAMIC_CONFIGS
    | _REPLICATION_THROTTLE_CONFIGS
    | _PER_BROKER_CONFIGS
)
"""Every key Kafka 2.8 lets an operator change without a restart (and any
`listener.name.<l>.` key)."""

APPLIED_DYNAMIC_CONFIGS: frozenset[str] = (
    RECONFIGURABLE_LOG_CONFIGS
    | _CLEANER_CONFIGS
    | {"num.replica.fetchers"}
    | _REPLICATION_THROTTLE_CONFIGS
    | _SOCKET_SERVER_CONFIGS
    | ((_APPLIED_LISTENER_KEYS & _PER_BROKER_CONFIGS) - DYNAMIC_SECURITY_CONFIGS)
)
"""The dynamic keys a running kafpy broker applies (and `listener.name.<l>.` keys of
LISTENER_RECONFIGURABLE_CONFIGS and _APPLIED_LISTENER_KEYS, see `_is_applied`)."""

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: keys standing for one setting, most
# specific first.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_config_synonyms(name: str) -> list[str]:
    """The keys that stand for the same setting as `name`, most specific first."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            # log.flush.scheduler.interval.ms alone is not a synonym of the interval
            return list(group) if name != "log.flush.scheduler.interval.ms" else [name]
    return [name]


def _listener_key(name: str) -> str | None:
    """`<key>` of `listener.name.<listener>.<key>`, None for other names."""
    if not name.startswith(_LISTENER_PREFIX):
        return None
    return name[len(_LISTENER_PREFIX) :].partition(".")[2]


def _is_dynamic(name: str) -> bool:
    return name in ALL_DYNAMIC_CONFIGS or name.startswith(_LISTENER_PREFIX)


def _is_per_broker(name: str) -> bool:
    key = _listener_key(name)
    return name in _PER_BROKER_CONFIGS or (
        key is not None and key not in _CLUSTER_LEVEL_LISTENER_CONFIGS
    )


def _is_password(name: str) -> bool:
    return any(name.endswith(p) for p in _PASSWORD_CONFIGS)


def loggable(props: Mapping[str, str]) -> dict[str, str]:
    """`props` fit for a log line: password configs as `[hidden]`, as Kafka logs them."""
    return {k: "[hidden]" if _is_password(k) else v for k, v in props.items()}


def _is_applied(name: str) -> bool:
    if name in APPLIED_DYNAMIC_CONFIGS:
        return True
    key = _listener_key(name)
    return key is not None and (
        key in LISTENER_RECONFIGURABLE_CONFIGS or key in _APPLIED_LISTENER_KEYS
    )


def _config_def_name(name: str) -> str | None:
    """The KafkaConfig key whose type `name` has (a listener key's base key)."""
    key = _listener_key(name)
    base = name if key is None else key
    return base if base in KAFKA_CONFIG_DEF else None


def _scala_set(names: list[str]) -> str:
    return "Set(" + ", ".join(names) + ")"


Reconfigurable = Callable[[KafkaConfig, KafkaConfig], None]
"""Called with (old, new) effective configs after a dynamic change."""


class DynamicBrokerConfig:
    """The dynamic configs of one broker over its static server.properties: validates
    alterations, keeps the current dynamic defaults and per-broker configs, and applies
    them to the registered reconfigurables.

    Parameters:
        static: the broker's KafkaConfig as server.properties (and --override) made it.
    """

    def __init__(self, static: KafkaConfig) -> None:
        self.static = static
        self.static_broker_configs: dict[str, object] = {
            k: v for k, v in static.originals.items() if v is not None
        }
        self.dynamic_default_configs: dict[str, str] = {}
        self.dynamic_broker_configs: dict[str, str] = {}
        self.current: KafkaConfig = static
        self._reconfigurables: list[Reconfigurable] = []
        self._validators: list[Reconfigurable] = []
        self.log = component_logger(
            "kafpy.server.DynamicBrokerConfig", "DynamicBrokerConfig", static.broker_id
        )

    @property
    def broker_id(self) -> int:
        return self.static.broker_id

    def add_reconfigurable(self, reconfigurable: Reconfigurable) -> None:
        """Call `reconfigurable(old, new)` after every change of the effective config."""
        self._reconfigurables.append(reconfigurable)

    def add_validator(self, validator: Reconfigurable) -> None:
        """Call `validator(current, new)` on every alteration of this broker's configs before
        it is stored; its InvalidConfigurationError refuses the alteration (Kafka's
        validateReconfiguration)."""
        self._validators.append(validator)

    # -- validation (AlterConfigs / IncrementalAlterConfigs) -----------------------------------

    def validate(self, props: Mapping[str, str], per_broker: bool) -> None:
        """Refuse, with InvalidRequestError naming the keys, what may not be stored as the
        dynamic configs of this broker (`per_broker`) or of the cluster default."""
        unknown = sorted(k for k in props if k not in KAFKA_CONFIG_DEF and not _is_dynamic(k))
        if unknown:
            raise InvalidRequestError(
                f"Unknown broker config name(s): {', '.join(unknown)}; see the broker "
                "configuration keys of Kafka 2.8"
            )
        not_dynamic = sorted(k for k in props if not _is_dynamic(k))
        if not_dynamic:
            raise InvalidRequestError(
                f"Cannot update these configs dynamically: {_scala_set(not_dynamic)}"
            )
        without_prefix = sorted(k for k in props if k in DYNAMIC_SECURITY_CONFIGS)
        if without_prefix:
            raise InvalidRequestError(
                "These security configs can be dynamically updated only per-listener using "
                f"the listener prefix: {_scala_set(without_prefix)}"
            )
        for name, value in props.items():
            try:
                definition = _config_def_name(name)
                if definition is not None:
                    KAFKA_CONFIG_DEF.parse_value(definition, value)
            except InvalidConfigurationError as e:
                raise InvalidRequestError(f"Invalid value for {name}: {e}") from e
        per_broker_only = sorted(k for k in props if _is_per_broker(k))
        if per_broker_only and not per_broker:
            raise InvalidRequestError(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {_scala_set(per_broker_only)}"
            )
        passwords = sorted(k for k in props if _is_password(k))
        if passwords and not per_broker:
            raise InvalidRequestError("Password config can be defined only at broker level")
        if passwords and self.static.password_encoder is None:
            raise InvalidRequestError(
                f"Password encoder secret not configured: the password configs "
                f"{_scala_set(passwords)} are stored in ZooKeeper encrypted with "
                "password.encoder.secret; set it in server.properties and restart the broker"
            )
        not_applied = sorted(k for k in props if not _is_applied(k))
        if not_applied:
            raise InvalidRequestError(
                f"kafpy cannot apply these configs without a restart yet: "
                f"{_scala_set(not_applied)}; set them in server.properties and restart the "
                f"broker{'' if per_broker else 's'}"
            )
        default = props if not per_broker else self.dynamic_default_configs
        broker = props if per_broker else self.dynamic_broker_configs
        try:
            new = self._effective(default, broker)
        except InvalidConfigurationError as e:
            raise InvalidRequestError(str(e)) from e
        for validator in self._validators:
            try:
                validator(self.current, new)
            except InvalidConfigurationError as e:
                raise InvalidRequestError(f"Invalid dynamic configuration: {e}") from e

    # -- stored form (Kafka's toPersistentProps / fromPersistentProps) --------------------------

    def to_persistent(self, props: Mapping[str, str]) -> dict[str, str]:
        """`props` as stored in ZooKeeper: password configs encrypted (after `validate`,
        which refuses them without password.encoder.secret)."""
        encoder = self.static.password_encoder
        stored = dict(props)
        for name, value in props.items():
            if _is_password(name) and value is not None:
                if encoder is None:
                    raise InvalidRequestError("Password encoder secret not configured")
                stored[name] = encoder.encode(value)
        return stored

    def from_persistent(self, props: Mapping[str, str], where: str) -> dict[str, str]:
        """Stored configs with their passwords decoded; one that does not decode (another
        secret, or no secret) is logged and left out, as Kafka leaves it out."""
        encoder = self.static.password_encoder
        usable: dict[str, str] = {}
        for name, value in props.items():
            if _is_password(name) and value is not None:
                try:
                    if encoder is None:
                        raise PasswordEncoderError("password.encoder.secret is not set")
                    value = encoder.decode(value)
                except PasswordEncoderError as e:
                    self.log.error(
                        "Dynamic password config %s of %s could not be decoded, ignoring: %s",
                        name,
                        where,
                        e,
                    )
                    continue
            usable[name] = value
        return usable

    async def _re_encode_passwords(
        self, zk_client: KafkaZkClient, stored: Mapping[str, str]
    ) -> dict[str, str]:
        """With password.encoder.old.secret set: this broker's stored passwords that it
        decodes are encrypted again with password.encoder.secret and written back (Kafka's
        maybeReEncodePasswords)."""
        old, new = self.static.password_old_encoder, self.static.password_encoder
        if old is None or new is None or not any(_is_password(k) for k in stored):
            return dict(stored)
        props = dict(stored)
        for name, value in stored.items():
            if _is_password(name) and value is not None:
                try:
                    props[name] = new.encode(old.decode(value))
                except PasswordEncoderError:
                    self.log.debug(
                        "Dynamic password config %s could not be decoded using old secret, "
                        "new secret will be used.",
                        name,
                    )
        await AdminZkClient(zk_client).change_broker_config(self.broker_id, props)
        self.log.info("Dynamic password configs encrypted again with password.encoder.secret")
        return props

    # -- updates from /config/brokers (DynamicConfigManager's BrokerConfigHandler) -------------

    async def initialize(self, zk_client: KafkaZkClient) -> None:
        """Read the stored dynamic configs before the broker's components are built (Kafka's
        DynamicBrokerConfig.initialize), so that logs, cleaner, fetchers and controller
        start with them rather than with server.properties alone."""
        default = await zk_client.get_entity_configs(ConfigType.BROKER, DEFAULT_ENTITY_NAME)
        own = await zk_client.get_entity_configs(ConfigType.BROKER, str(self.broker_id))
        own = await self._re_encode_passwords(zk_client, own)
        self.dynamic_default_configs = self._usable(default, "default")
        self.dynamic_broker_configs = self._usable(own, f"broker {self.broker_id}")
        self._update()

    def update_default_config(self, props: Mapping[str, str]) -> None:
        """The cluster-wide defaults at /config/brokers/<default> changed."""
        self.dynamic_default_configs = self._usable(props, "default")
        self._update()

    def update_broker_config(self, props: Mapping[str, str]) -> None:
        """This broker's configs at /config/brokers/<id> changed."""
        self.dynamic_broker_configs = self._usable(props, f"broker {self.broker_id}")
        self._update()

    def _usable(self, props: Mapping[str, str], where: str) -> dict[str, str]:
        usable: dict[str, str] = {}
        for name, value in self.from_persistent(props, where).items():
            try:
                if not _is_applied(name):
                    raise InvalidConfigurationError("it cannot be updated dynamically")
                if where == "default" and (_is_per_broker(name) or _is_password(name)):
                    raise InvalidConfigurationError("it can be set per broker only")
                definition = _config_def_name(name)
                if definition is not None:
                    KAFKA_CONFIG_DEF.parse_value(definition, value)
            except InvalidConfigurationError as e:
                self.log.error(
                    "Ignoring the stored dynamic config %s=%s of %s: %s",
                    name,
                    "[hidden]" if _is_password(name) else value,
                    where,
                    e,
                )
                continue
            usable[name] = value
        return usable

    def _effective(self, default: Mapping[str, str], broker: Mapping[str, str]) -> KafkaConfig:
        props: dict[str, object] = dict(self.static_broker_configs)
        props.update(default)
        props.update(broker)
        return KafkaConfig(props)

    def _update(self) -> None:
        try:
            new = self._effective(self.dynamic_default_configs, self.dynamic_broker_configs)
        except InvalidConfigurationError as e:
            self.log.error("Dynamic broker configs not applied: %s", e)
            return
        old, self.current = self.current, new
        self.log.info(
            "Dynamic broker configs now: default %s, broker %s",
            loggable(self.dynamic_default_configs),
            loggable(self.dynamic_broker_configs),
        )
        for reconfigurable in self._reconfigurables:
            try:
                reconfigurable(old, new)
            except Exception:
                self.log.exception("Failed to apply dynamic broker configs to %s", reconfigurable)

    # -- describing ----------------------------------------------------------------------------

    def synonym_sources(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Where a broker key's value can come from, in Kafka's order of precedence:
        (source name, values) for DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
        STATIC_BROKER_CONFIG and DEFAULT_CONFIG."""
        defaults = {
            k.name: k.default for k in KAFKA_CONFIG_DEF if k.has_default and k.default is not None
        }
        return [
            ("DYNAMIC_BROKER_CONFIG", self.dynamic_broker_configs),
            ("DYNAMIC_DEFAULT_BROKER_CONFIG", self.dynamic_default_configs),
            ("STATIC_BROKER_CONFIG", self.static_broker_configs),
            ("DEFAULT_CONFIG", defaults),
        ]


class _LogManagerTarget(Protocol):
    topic_configs: dict[str, LogConfig]

    def update_topic_config(self, topic: str, config: LogConfig) -> None: ...

    def reconfigure_default_log_config(self, config: LogConfig) -> None: ...


class _CleanerTarget(Protocol):
    def reconfigure_cleaner(self, config: CleanerConfig) -> None: ...


class _FetcherManagerTarget(Protocol):
    async def resize_thread_pool(self, new_size: int) -> None: ...


class _ControllerTarget(Protocol):
    config: ControllerConfig

    def enable_default_unclean_leader_election(self) -> None: ...


class _SocketServerTarget(Protocol):
    def reconfigure_connection_quotas(self, config: ConnectionQuotaConfig) -> None: ...


class _ListenerSecurityTarget(Protocol):
    @property
    def ssl_factories(self) -> Mapping[str, SslFactory]: ...
    @property
    def sasl_configs(self) -> Mapping[str, SaslListenerConfig]: ...

    def reconfigure_listener_security(
        self,
        ssl_factories: Mapping[str, SslFactory],
        sasl_configs: Mapping[str, SaslListenerConfig],
    ) -> None: ...


class DynamicListenerSecurityConfig:
    """Gives the socket server's listeners new TLS and SASL settings (Kafka's channel
    builders as ListenerReconfigurables, KIP-226): a listener whose `ssl.*` settings
    changed, or whose store file was modified in place, gets a new SslFactory, checked
    first (the store loads, its certificate keeps the old DN and SubjectAltNames); a SASL
    listener whose mechanisms or re-authentication limit changed, new SASL settings.
    Connections accepted afterwards use them; open ones keep what they negotiated.

    Use it both as a validator (`validate`, refusing what would not apply) and as a
    reconfigurable (called with the stored configs)."""

    def __init__(
        self,
        socket_server: _ListenerSecurityTarget,
        credential_cache: CredentialCache,
        token_cache: DelegationTokenCache | None = None,
    ) -> None:
        self.socket_server = socket_server
        self.credential_cache = credential_cache
        self.token_cache = token_cache

    def changes(
        self, new: KafkaConfig
    ) -> tuple[dict[str, SslFactory], dict[str, SaslListenerConfig]]:
        """The listeners' new TLS and SASL sides under `new`, only those that change.
        Raises InvalidConfigurationError when one cannot be built."""
        ssl = reconfigured_ssl_factories(new, self.socket_server.ssl_factories)
        current = self.socket_server.sasl_configs
        sasl = {
            name: config
            for name, config in listener_sasl_configs(
                new, self.credential_cache, self.token_cache
            ).items()
            if name in current and current[name] != config
        }
        return ssl, sasl

    def validate(self, old: KafkaConfig, new: KafkaConfig) -> None:
        self.changes(new)

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        ssl, sasl = self.changes(new)
        if ssl or sasl:
            self.socket_server.reconfigure_listener_security(ssl, sasl)


class DynamicConnectionQuotaConfig:
    """Gives the socket server's ConnectionQuotas new limits (Kafka's SocketServer and its
    ListenerConnectionQuotas as reconfigurables): a waiting acceptor re-checks at once, a
    lower max.connections closes the least recently used connections over it."""

    def __init__(self, socket_server: _SocketServerTarget) -> None:
        self.socket_server = socket_server

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        config = new.connection_quota_config()
        if config != old.connection_quota_config():
            self.socket_server.reconfigure_connection_quotas(config)


class DynamicLogConfig:
    """Applies new broker log defaults to the LogManager (Kafka's DynamicLogConfig): logs of
    topics without overrides take the new defaults, topics with overrides keep them over
    the new defaults; logs created later get them too."""

    def __init__(self, log_manager: _LogManagerTarget) -> None:
        self.log_manager = log_manager

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        defaults = new.log_default_config()
        if defaults == old.log_default_config():
            return
        for topic, config in list(self.log_manager.topic_configs.items()):
            self.log_manager.update_topic_config(
                topic, LogConfig.from_props(defaults.values(), config.originals)
            )
        self.log_manager.reconfigure_default_log_config(defaults)


class DynamicCleanerConfig:
    """Gives the LogCleaner new log.cleaner.* settings (Kafka's LogCleaner as a
    BrokerReconfigurable). Its threads are restarted off the event loop, since stopping
    them waits for a round in progress to abort."""

    def __init__(self, log_manager: _CleanerTarget) -> None:
        self.log_manager = log_manager
        self._pending: set[asyncio.Future[None]] = set()

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        config = new.log_cleaner_config()
        if config == old.log_cleaner_config():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.log_manager.reconfigure_cleaner(config)
            return
        future = loop.run_in_executor(None, self.log_manager.reconfigure_cleaner, config)
        self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[None]) -> None:
        self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            component_logger("kafpy.server.DynamicBrokerConfig", "DynamicBrokerConfig").error(
                "Failed to reconfigure the log cleaner: %s", future.exception()
            )


class DynamicReplicaFetcherConfig:
    """Resizes the replica fetcher pool when num.replica.fetchers changes (Kafka's
    DynamicThreadPool for the fetchers)."""

    def __init__(self, fetcher_manager: _FetcherManagerTarget) -> None:
        self.fetcher_manager = fetcher_manager
        self._pending: set[asyncio.Task[None]] = set()

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        size = int(new.get("num.replica.fetchers"))
        if size == int(old.get("num.replica.fetchers")):
            return
        task = asyncio.get_running_loop().create_task(self.fetcher_manager.resize_thread_pool(size))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


class DynamicControllerConfig:
    """Gives the controller the new default of unclean.leader.election.enable; turning it on
    elects leaders for offline partitions at once, as Kafka's controller does."""

    def __init__(self, controller: _ControllerTarget) -> None:
        self.controller = controller

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        enabled = bool(new.get("unclean.leader.election.enable"))
        if enabled == self.controller.config.unclean_leader_election_enable:
            return
        self.controller.config = dataclasses.replace(
            self.controller.config, unclean_leader_election_enable=enabled
        )
        if enabled:
            self.controller.enable_default_unclean_leader_election()


class DynamicReplicationQuotaConfig:
    """The broker's replication throttles (Kafka's BrokerConfigHandler with its
    QuotaManagers): leader.replication.throttled.rate and follower.replication.throttled.rate
    set for this broker (not the cluster default, as Kafka) bound its leader and follower
    ReplicationQuotaManagers; removed, the bound goes."""

    def __init__(
        self, dynamic_config: DynamicBrokerConfig, window_num: int, window_size_s: int, time: Time
    ) -> None:
        self.dynamic_config = dynamic_config
        self.leader = ReplicationQuotaManager("Leader", window_num, window_size_s, time)
        self.follower = ReplicationQuotaManager("Follower", window_num, window_size_s, time)
        self._apply()

    @property
    def managers(self) -> tuple[ReplicationQuotaManager, ReplicationQuotaManager]:
        return self.leader, self.follower

    def _apply(self) -> None:
        own = self.dynamic_config.dynamic_broker_configs
        for manager, key in (
            (self.leader, LEADER_REPLICATION_THROTTLED_RATE),
            (self.follower, FOLLOWER_REPLICATION_THROTTLED_RATE),
        ):
            value = own.get(key)
            manager.update_quota(None if value is None else float(value))

    def __call__(self, old: KafkaConfig, new: KafkaConfig) -> None:
        self._apply()
