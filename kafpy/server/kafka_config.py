"""KafkaConfig: the broker's configuration (server.properties) with Kafka's keys and defaults.

Keys with typed settings of their own are declared beside them and taken in here, so a key
and its default are declared once: the log keys (`kafpy.storage.log_config`), the cleaner's,
the controller's, the group and transaction coordinators', zookeeper.*, SSL and SASL. The
broker's other keys are declared here. Code reads values through the
typed properties, never by raw key strings.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafpy.cluster.replication_config import REPLICATION_CONFIG_DEF
from kafpy.common.config_def import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    LambdaValidator,
    Range,
    Validator,
    ValidString,
    config_error,
    format_value,
    parse_type,
)
from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.common.properties import load_properties
from kafpy.controller.controller_config import CONTROLLER_CONFIG_DEF
from kafpy.coordinator.group_config import GROUP_CONFIG_DEF, OFFSET_CONFIG_DEF
from kafpy.coordinator.transaction.transaction_config import TRANSACTION_CONFIG_DEF
from kafpy.metadata.store_factory import ZOOKEEPER_CONFIG_DEF
from kafpy.network.connection_quotas import (
    CONNECTION_QUOTA_CONFIG_DEF,
    LISTENER_RECONFIGURABLE_CONFIGS,
    ConnectionQuotaConfig,
)
from kafpy.network.listener_name import listener_config_prefix
from kafpy.network.socket_server_config import SOCKET_SERVER_CONFIG_DEF
from kafpy.security.authorizer.acl_authorizer import AUTHORIZER_CLASS_NAMES, parse_super_users
from kafpy.security.password_encoder import PasswordEncoder, PasswordEncoderError
from kafpy.security.sasl_configs import (
    BROKER_SASL_CONFIG_DEF,
    SASL_SECURITY_PROTOCOLS,
    ensure_callback_class_supported,
    ensure_sasl_mechanisms_supported,
)
from kafpy.security.ssl_configs import BROKER_SSL_CONFIG_DEF
from kafpy.security.ssl_principal_mapper import SslPrincipalMapper
from kafpy.server.replica_selector import (
    RACK_AWARE_REPLICA_SELECTOR,
    REPLICA_SELECTOR_CLASS_CONFIG,
    ReplicaSelector,
    replica_selector,
)
from kafpy.storage.cleaner.cleaner_config import CLEANER_CONFIG_DEF, CleanerConfig
from kafpy.storage.log_config import (
    BROKER_LOG_CONFIG_DEF,
    LATEST_API_VERSION,
    LogConfig,
    log_config_defaults_from_broker,
    parse_api_version,
)

_LISTENER = re.compile(r"^([A-Za-z0-9_]+)://(\[[0-9a-fA-F:]+\]|[^:]*):(-?\d+)$")


def _check_inter_broker_protocol_version(value: object) -> str | None:
    """Only the version kafpy speaks: pinning an older one would be silently ignored."""
    try:
        version = parse_api_version(str(value))
    except ValueError as e:
        return str(e)
    if version != LATEST_API_VERSION:
        return (
            f"kafpy speaks only Kafka {LATEST_API_VERSION}'s inter-broker protocol and cannot "
            f"pin {version}; set 2.8 (or {LATEST_API_VERSION}), or leave it unset"
        )
    return None


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""Kafka's security protocols, the values `listener.security.protocol.map` may name."""

SUPPORTED_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
"""The protocols this broker can honour. A listener on any other protocol stops start-up:
serving it as plaintext would be a silent downgrade. Security support widens this set."""

DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)


class _ListenerList(Validator):
    """`PLAINTEXT://host:port` entries separated by commas, names unique."""

    def ensure_valid(self, name: str, value: object) -> None:
        seen: set[str] = set()
        for entry in str(value).split(","):
            entry = entry.strip()
            m = _LISTENER.match(entry)
            if m is None:
                raise InvalidConfigurationError(
                    f"Invalid value {value} for configuration {name}: Unable to parse {entry} "
                    f"to a broker endpoint (expected LISTENER://host:port)"
                )
            if m.group(1) in seen:
                raise InvalidConfigurationError(
                    f"Invalid value {value} for configuration {name}: Each listener must have a "
                    f"different name, listeners: {value}"
                )
            seen.add(m.group(1))

    def describe(self) -> str:
        return "a list of LISTENER://host:port"


class _ProtocolMap(Validator):
    """`NAME:PROTOCOL` pairs separated by commas, each protocol one of Kafka's."""

    def ensure_valid(self, name: str, value: object) -> None:
        for entry in str(value).split(","):
            listener, sep, protocol = entry.strip().partition(":")
            if not sep or not listener.strip():
                raise config_error(
                    name, value, f"Map entry '{entry.strip()}' is not of the form NAME:PROTOCOL"
                )
            if protocol.strip().upper() not in SECURITY_PROTOCOLS:
                raise config_error(
                    name, value, f"Unknown security protocol '{protocol.strip()}' for listener "
                    f"{listener.strip()}; it must be one of {', '.join(SECURITY_PROTOCOLS)}"
                )  # fmt: skip

    def describe(self) -> str:
        return "a list of NAME:PROTOCOL"


METRICS_LISTENER_CONFIG = "kafpy.metrics.listener"
_METRICS_LISTENER = re.compile(r"^http://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]*):(\d+)/?$")


def parse_metrics_listener(value: str) -> tuple[str, int]:
    """`http://host:port` as (host, port); an empty host listens on every interface.

    Raises InvalidConfigurationError naming the key and the expected form."""
    m = _METRICS_LISTENER.match(value.strip())
    if m is None or not 0 <= int(m.group(2)) <= 65535:
        raise InvalidConfigurationError(
            f"Invalid value {value} for configuration {METRICS_LISTENER_CONFIG}: expected "
            f"http://host:port with a port from 0 to 65535 (e.g. http://127.0.0.1:9404), "
            f"or leave it empty to serve no metrics"
        )
    return m.group(1).strip("[]"), int(m.group(2))


class _MetricsListener(Validator):
    """Empty (no metrics endpoint) or `http://host:port`."""

    def ensure_valid(self, name: str, value: object) -> None:
        if value is not None and str(value).strip():
            parse_metrics_listener(str(value))
            try:
                require_extra("metrics", f"{METRICS_LISTENER_CONFIG}={value}")
            except MissingExtraError as e:
                raise InvalidConfigurationError(str(e)) from None

    def describe(self) -> str:
        return "empty or http://host:port"


def _broker_config_def() -> ConfigDef:
    h, m = Importance.HIGH, Importance.MEDIUM
    t = ConfigType
    return (
        ConfigDef({
            **BROKER_LOG_CONFIG_DEF.config_keys,
            **BROKER_SSL_CONFIG_DEF.config_keys,
            **BROKER_SASL_CONFIG_DEF.config_keys,
            **CLEANER_CONFIG_DEF.config_keys,
            **GROUP_CONFIG_DEF.config_keys,
            **OFFSET_CONFIG_DEF.config_keys,
            **TRANSACTION_CONFIG_DEF.config_keys,
            **CONTROLLER_CONFIG_DEF.config_keys,
            **ZOOKEEPER_CONFIG_DEF.config_keys,
            **CONNECTION_QUOTA_CONFIG_DEF.config_keys,
            **SOCKET_SERVER_CONFIG_DEF.config_keys,
            **REPLICATION_CONFIG_DEF.config_keys,
        })
        .define("broker.id", t.INT, -1, None, h, "The broker id; -1 generates one from ZooKeeper.")
        .define("broker.id.generation.enable", t.BOOLEAN, True, None, m)
        .define("reserved.broker.max.id", t.INT, 1000, Range.at_least(0), m)
        .define("broker.rack", t.STRING, None, None, m, "Rack of the broker (rack-aware assignment).")
        .define("listeners", t.STRING, "PLAINTEXT://:9092", _ListenerList(), h)
        .define("advertised.listeners", t.STRING, None, None, h)
        .define("listener.security.protocol.map", t.STRING, DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP,
                _ProtocolMap(), Importance.LOW,
                "Listener name to security protocol, as NAME:PROTOCOL pairs.")
        .define("security.inter.broker.protocol", t.STRING, "PLAINTEXT", ValidString(*SECURITY_PROTOCOLS), m,
                "The security protocol brokers talk to each other with.")
        .define("inter.broker.protocol.version", t.STRING, LATEST_API_VERSION,
                LambdaValidator(_check_inter_broker_protocol_version), m,
                "The inter-broker protocol version, pinned during rolling upgrades.")
        .define("inter.broker.listener.name", t.STRING, None, None, m,
                "The listener brokers talk to each other on (instead of security.inter.broker.protocol).")
        .define("log.dir", t.STRING, "/tmp/kafka-logs", None, h)
        .define("log.dirs", t.STRING, None, None, h)
        .define("log.dir.failure.timeout.ms", t.LONG, 30000, Range.at_least(1), Importance.LOW,
                "How long the broker tries to tell the controller of a failed log dir before it "
                "shuts down.")
        .define("metadata.store.dir", t.STRING, None, None, m,
                "Where the embedded metadata store keeps its SQLite file (default: the first log dir).")
        .define("num.partitions", t.INT, 1, Range.at_least(1), m)
        .define("default.replication.factor", t.INT, 1, Range.at_least(1), m)
        .define("auto.create.topics.enable", t.BOOLEAN, True, None, h)
        .define("background.threads", t.INT, 10, Range.at_least(1), h)
        .define("num.network.threads", t.INT, 3, Range.at_least(1), h)
        .define("num.io.threads", t.INT, 8, Range.at_least(1), h)
        .define("controlled.shutdown.enable", t.BOOLEAN, True, None, m)
        .define("socket.send.buffer.bytes", t.INT, 102400, None, h)
        .define("socket.receive.buffer.bytes", t.INT, 102400, None, h)
        .define("queued.max.requests", t.INT, 500, Range.at_least(1), h)
        .define("replica.fetch.max.bytes", t.INT, 1048576, Range.at_least(0), m)
        .define(REPLICA_SELECTOR_CLASS_CONFIG, t.STRING, None, None, m,
                "The replica selector a leader asks which replica a consumer with a "
                f"client.rack should fetch from (KIP-392): {RACK_AWARE_REPLICA_SELECTOR}, "
                "or unset for the leader only.")
        .define("replica.high.watermark.checkpoint.interval.ms", t.LONG, 5000, None, h)
        .define("num.replica.fetchers", t.INT, 1, Range.at_least(1), h)
        .define("replica.fetch.wait.max.ms", t.INT, 500, Range.at_least(0), m)
        .define("replica.fetch.min.bytes", t.INT, 1, Range.at_least(0), h)
        .define("replica.fetch.backoff.ms", t.INT, 1000, Range.at_least(0), m)
        .define("replica.fetch.response.max.bytes", t.INT, 10485760, Range.at_least(0), m)
        .define("replica.socket.timeout.ms", t.INT, 30000, None, h)
        # kafpy-specific (Kafka hard-codes them in ReplicaManager): ISR changes are announced
        # under /isr_change_notification once none came for the blackout, or at the latest
        # after the max interval; tests shorten them
        .define("replica.isr.change.propagation.blackout.ms", t.LONG, 5000, Range.at_least(1), m,
                "kafpy-specific: announce ISR changes once none came for this long (Kafka: 5000).")
        .define("replica.isr.change.propagation.max.interval.ms", t.LONG, 60000, Range.at_least(1), m,
                "kafpy-specific: announce ISR changes at least this often while they keep coming "
                "(Kafka: 60000).")
        .define("controlled.shutdown.max.retries", t.INT, 3, Range.at_least(0), m)
        .define("controlled.shutdown.retry.backoff.ms", t.LONG, 5000, Range.at_least(0), m)
        .define("fetch.max.bytes", t.INT, 57671680, Range.at_least(1024), m)
        .define("fetch.purgatory.purge.interval.requests", t.INT, 1000, None, m)
        .define("max.incremental.fetch.session.cache.slots", t.INT, 1000, Range.at_least(0), m,
                "The maximum number of incremental fetch sessions that we will maintain.")
        .define("producer.purgatory.purge.interval.requests", t.INT, 1000, None, m)
        .define("quota.window.num", t.INT, 11, Range.at_least(1), Importance.LOW,
                "The number of samples to retain in memory for client quotas.")
        .define("quota.window.size.seconds", t.INT, 1, Range.at_least(1), Importance.LOW,
                "The time span of each sample for client quotas.")
        # kafpy-specific (Kafka serves its metrics over JMX; the Prometheus JMX exporter is a
        # separate agent): where the broker serves Prometheus metrics; empty serves none
        .define(METRICS_LISTENER_CONFIG, t.STRING, "", _MetricsListener(), m,
                "kafpy-specific: serve Prometheus metrics at http://host:port/metrics "
                "(e.g. http://127.0.0.1:9404); empty serves none.")
        # authorization (the AclAuthorizer's own keys as well, so they are not "unknown")
        .define("authorizer.class.name", t.STRING, "", None, Importance.LOW,
                "The authorizer: kafka.security.authorizer.AclAuthorizer (or its old name "
                "kafka.security.auth.SimpleAclAuthorizer, or AclAuthorizer); empty for none.")
        .define("super.users", t.STRING, None, None, Importance.LOW,
                "Principals allowed every operation, separated by ';' (User:admin;User:broker).")
        .define("allow.everyone.if.no.acl.found", t.BOOLEAN, False, None, Importance.LOW,
                "Whether a resource no ACL matches is open to everyone.")
        # replication throttles (Kafka keeps the two rates in DynamicConfig.Broker: set them
        # per broker with kafpy configs or reassign-partitions --throttle)
        .define("replication.quota.window.num", t.INT, 11, Range.at_least(1), Importance.LOW,
                "The number of samples to retain in memory for replication quotas.")
        .define("replication.quota.window.size.seconds", t.INT, 1, Range.at_least(1), Importance.LOW,
                "The time span of each sample for replication quotas.")
        .define("leader.replication.throttled.rate", t.LONG, 9223372036854775807, Range.at_least(0), m,
                "Bytes/s this broker sends to the followers of leader-throttled replicas.")
        .define("follower.replication.throttled.rate", t.LONG, 9223372036854775807, Range.at_least(0), m,
                "Bytes/s this broker fetches for follower-throttled replicas.")
        # delegation tokens (KIP-48; read by server/delegation_token_manager.py)
        .define("delegation.token.master.key", t.PASSWORD, None, None, h,
                "The key every broker signs delegation tokens with (the same on all brokers); "
                "unset or empty disables delegation tokens.")
        .define("delegation.token.max.lifetime.ms", t.LONG, 7 * 24 * 3600 * 1000, Range.at_least(1), m,
                "The longest a token may live; it cannot be renewed beyond.")
        .define("delegation.token.expiry.time.ms", t.LONG, 24 * 3600 * 1000, Range.at_least(1), m,
                "How long a token lives unless renewed (and what a renewal adds by default).")
        .define("delegation.token.expiry.check.interval.ms", t.LONG, 3600 * 1000, Range.at_least(1),
                Importance.LOW, "How often the controller removes expired tokens.")
        # dynamic password configs, encrypted in ZooKeeper (security/password_encoder.py)
        .define("password.encoder.secret", t.PASSWORD, None, None, m,
                "The secret dynamically configured passwords of this broker are encrypted with.")
        .define("password.encoder.old.secret", t.PASSWORD, None, None, m,
                "The previous secret: at start-up the stored passwords it decodes are encrypted "
                "again with password.encoder.secret.")
        .define("password.encoder.keyfactory.algorithm", t.STRING, None, None, Importance.LOW,
                "The PBKDF2 key factory (default PBKDF2WithHmacSHA512).")
        .define("password.encoder.cipher.algorithm", t.STRING, "AES/CBC/PKCS5Padding", None,
                Importance.LOW, "The cipher dynamically configured passwords are encrypted with.")
        .define("password.encoder.key.length", t.INT, 128, Range.at_least(8), Importance.LOW,
                "The key length, in bits, of that cipher.")
        .define("password.encoder.iterations", t.INT, 4096, Range.at_least(1024), Importance.LOW,
                "The PBKDF2 iteration count.")
    )  # fmt: skip


KAFKA_CONFIG_DEF: ConfigDef = _broker_config_def()


class KafkaConfig:
    """A broker's parsed and validated configuration.

    Unknown keys are kept (`originals`) and ignored, as Kafka does (`unknown_keys`, warned
    about at start-up by `log_values`); a bad value raises InvalidConfigurationError naming
    the key and the allowed values.
    """

    def __init__(self, props: Mapping[str, object]) -> None:
        self.originals: dict[str, object] = dict(props)
        self._values: dict[str, Any] = KAFKA_CONFIG_DEF.parse(props)
        if self.broker_id < -1:
            raise InvalidConfigurationError(
                f"Invalid value {self.broker_id} for configuration broker.id: "
                "broker.id must be -1 (generated) or a non-negative integer"
            )
        if self.broker_id > self._values["reserved.broker.max.id"]:
            raise InvalidConfigurationError(
                f"broker.id {self.broker_id} must be at most reserved.broker.max.id "
                f"({self._values['reserved.broker.max.id']})"
            )
        if not self.log_dirs:
            raise InvalidConfigurationError("log.dirs must name at least one directory")
        self._validate_listeners()
        self._validate_authorizer()
        self._replica_selector = replica_selector(self._values[REPLICA_SELECTOR_CLASS_CONFIG])
        self._connection_quotas = self._connection_quota_config()
        self._password_encoder = self._encoder("password.encoder.secret")
        self._password_decoder = self._encoder("password.encoder.old.secret")
        # Fails here, not at start-up, when a log key is out of range.
        self._log_defaults = log_config_defaults_from_broker(
            {k: v for k, v in props.items() if k in BROKER_LOG_CONFIG_DEF}
        )

    def _encoder(self, secret_key: str) -> PasswordEncoder | None:
        secret = self._values[secret_key]
        if not secret:
            return None
        try:
            return PasswordEncoder(
                str(secret),
                self._values["password.encoder.keyfactory.algorithm"],
                self._values["password.encoder.cipher.algorithm"],
                self._values["password.encoder.key.length"],
                self._values["password.encoder.iterations"],
            )
        except PasswordEncoderError as e:
            raise InvalidConfigurationError(str(e)) from e

    @property
    def password_encoder(self) -> PasswordEncoder | None:
        """Encodes and decodes dynamic password configs (None without
        password.encoder.secret)."""
        return self._password_encoder

    @property
    def password_old_encoder(self) -> PasswordEncoder | None:
        """Decodes passwords stored under password.encoder.old.secret (None if unset)."""
        return self._password_decoder

    @classmethod
    def from_file(cls, path: str | Path, overrides: Mapping[str, str] | None = None) -> KafkaConfig:
        props: dict[str, object] = dict(load_properties(path))
        props.update(overrides or {})
        return cls(props)

    def get(self, key: str) -> Any:
        return self._values[key]

    def unknown_keys(self) -> list[str]:
        """The supplied keys this broker does not know, in the order they were given."""
        return [
            key
            for key in self.originals
            if key not in KAFKA_CONFIG_DEF and not _is_listener_override(key)
        ]

    def values_text(self) -> str:
        """Kafka's "KafkaConfig values:" block: every key sorted, `key = value` a line,
        passwords `[hidden]`."""
        lines = ["KafkaConfig values: \n"]
        for key in KAFKA_CONFIG_DEF.names():
            shown = logged_value(KAFKA_CONFIG_DEF.key(key), self._values[key])
            lines.append(f"\t{key} = {shown}\n")
        return "".join(lines)

    def log_values(self, log: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
        """Log the effective configuration and warn about each unknown key, as Kafka's broker
        does at start-up."""
        log.info("%s", self.values_text())
        for key in self.unknown_keys():
            log.warning("The configuration '%s' was supplied but isn't a known config.", key)

    @property
    def broker_id(self) -> int:
        return int(self._values["broker.id"])

    @property
    def broker_rack(self) -> str | None:
        rack: str | None = self._values["broker.rack"]
        return rack

    @property
    def replica_selector(self) -> ReplicaSelector | None:
        """The selector `replica.selector.class` names (None: consumers read from the
        leader only); any class kafpy does not provide was refused at construction."""
        return self._replica_selector

    @property
    def listeners(self) -> list[tuple[str, str, int]]:
        """(listener name, host, port) for each entry of `listeners`."""
        return _parse_listeners(self._values["listeners"])

    @property
    def advertised_listeners(self) -> list[tuple[str, str, int]]:
        value = self._values["advertised.listeners"] or self._values["listeners"]
        return _parse_listeners(value)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        """Listener name -> security protocol (`listener.security.protocol.map`)."""
        out: dict[str, str] = {}
        for entry in str(self._values["listener.security.protocol.map"]).split(","):
            listener, _, protocol = entry.strip().partition(":")
            out[listener.strip()] = protocol.strip().upper()
        return out

    @property
    def inter_broker_listener_name(self) -> str:
        """`inter.broker.listener.name`, or the listener named after
        `security.inter.broker.protocol` when it is unset (as Kafka)."""
        name: str | None = self._values["inter.broker.listener.name"]
        return name or str(self._values["security.inter.broker.protocol"])

    def security_protocol(self, listener_name: str) -> str:
        """The security protocol of a listener, from `listener.security.protocol.map`."""
        return self.listener_security_protocol_map[listener_name]

    @property
    def connections_max_idle_ms(self) -> int:
        return int(self._values["connections.max.idle.ms"])

    def ssl_values(self, listener_name: str) -> dict[str, Any]:
        """A listener's `ssl.*` settings: each `listener.name.<listener>.ssl.*` key overrides
        its `ssl.*` key, as Kafka reads them (key by key)."""
        values = {name: self._values[name] for name in BROKER_SSL_CONFIG_DEF.names()}
        prefix = listener_config_prefix(listener_name)
        for key, raw in self.originals.items():
            base = key[len(prefix) :] if key.startswith(prefix) else None
            if base is not None and base in BROKER_SSL_CONFIG_DEF:
                definition = BROKER_SSL_CONFIG_DEF.key(base)
                value = parse_type(key, raw, definition.type)
                if definition.validator is not None and value is not None:
                    definition.validator.ensure_valid(key, value)
                values[base] = value
        return values

    # -- SASL ---------------------------------------------------------------------------------

    def sasl_enabled_mechanisms(self, listener_name: str) -> list[str]:
        """`listener.name.<listener>.sasl.enabled.mechanisms`, else `sasl.enabled.mechanisms`."""
        raw = self.originals.get(listener_config_prefix(listener_name) + "sasl.enabled.mechanisms")
        if raw is None:
            return [str(m) for m in self._values["sasl.enabled.mechanisms"]]
        return [m.strip().upper() for m in str(raw).split(",") if m.strip()]

    @property
    def sasl_mechanism_inter_broker_protocol(self) -> str:
        return str(self._values["sasl.mechanism.inter.broker.protocol"]).upper()

    def sasl_jaas_config(self, listener_name: str, mechanism: str) -> tuple[str, str] | None:
        """(key, JAAS text) of a listener's mechanism: `listener.name.<listener>.<mechanism
        in lower case>.sasl.jaas.config`, else `sasl.jaas.config`; None when neither is set."""
        key = f"{listener_config_prefix(listener_name)}{mechanism.lower()}.sasl.jaas.config"
        raw = self.originals.get(key)
        if raw is not None:
            return key, str(raw)
        value = self._values["sasl.jaas.config"]
        return ("sasl.jaas.config", str(value)) if value is not None else None

    def sasl_callback_class(
        self, listener_name: str, mechanism: str, key: str
    ) -> tuple[str, str] | None:
        """(key as set, class name) of a listener's SASL callback for a mechanism:
        `listener.name.<listener>.<mechanism in lower case>.<key>` (the only form Kafka reads
        for a server callback handler), else, for the login keys, `<key>`; None when unset."""
        prefixed = f"{listener_config_prefix(listener_name)}{mechanism.lower()}.{key}"
        raw = self.originals.get(prefixed)
        if raw is not None and str(raw).strip():
            return prefixed, str(raw).strip()
        if key == "sasl.server.callback.handler.class":
            return None
        value = self._values[key]
        return (key, str(value).strip()) if value is not None and str(value).strip() else None

    @property
    def connections_max_reauth_ms(self) -> int:
        return int(self._values["connections.max.reauth.ms"])

    def _validate_sasl(self, listener_name: str) -> None:
        key = "sasl.enabled.mechanisms"
        if listener_config_prefix(listener_name) + key in self.originals:
            key = listener_config_prefix(listener_name) + key
        mechanisms = self.sasl_enabled_mechanisms(listener_name)
        if not mechanisms:
            raise InvalidConfigurationError(
                f"{key} is empty for SASL listener {listener_name}: enable PLAIN, "
                "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
            )
        ensure_sasl_mechanisms_supported(mechanisms, key)
        for mechanism in mechanisms:
            for base in (
                "sasl.server.callback.handler.class",
                "sasl.login.callback.handler.class",
                "sasl.login.class",
            ):
                found = self.sasl_callback_class(listener_name, mechanism, base)
                if found is not None:
                    ensure_callback_class_supported(base, found[1], mechanism, where=found[0])

    def _validate_listeners(self) -> None:
        """Kafka's checks of `listeners` and `advertised.listeners` against the protocol map
        and the inter-broker listener, then the one check of what kafpy can serve."""
        protocols = self.listener_security_protocol_map
        listeners = self.listeners
        advertised = self.advertised_listeners
        for key, entries in (("listeners", listeners), ("advertised.listeners", advertised)):
            for name, _, _ in entries:
                if name not in protocols:
                    raise InvalidConfigurationError(
                        f"No security protocol defined for listener {name} in {key}: add "
                        f"{name}:PLAINTEXT to listener.security.protocol.map, or name the "
                        "listener after its protocol"
                    )
        names = [name for name, _, _ in listeners]
        if not {name for name, _, _ in advertised} <= set(names):
            raise InvalidConfigurationError(
                "advertised.listeners listener names must be equal to or a subset of the ones "
                f"defined in listeners. Found {','.join(n for n, _, _ in advertised)}. The valid "
                f"options based on the current configuration are {','.join(names)}"
            )
        if any(host == "0.0.0.0" for _, host, _ in advertised):
            raise InvalidConfigurationError(
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a "
                "routable IP address."
            )
        ports = [port for _, _, port in listeners if port != 0]
        if len(set(ports)) != len(ports):
            raise InvalidConfigurationError(
                "Each listener must have a different port, listeners: "
                + str(self._values["listeners"])
            )
        for name, host, port in listeners:
            ensure_security_protocol_supported(f"{name}://{host}:{port}", protocols[name])
            # bad overrides and mapping rules fail here; key stores are read at start-up
            SslPrincipalMapper(self.ssl_values(name)["ssl.principal.mapping.rules"])
        if (
            "inter.broker.listener.name" in self.originals
            and "security.inter.broker.protocol" in self.originals
        ):
            raise InvalidConfigurationError(
                "Only one of inter.broker.listener.name and security.inter.broker.protocol "
                "should be set."
            )
        inter_broker = self.inter_broker_listener_name
        advertised_names = [name for name, _, _ in advertised]
        if inter_broker not in advertised_names:
            raise InvalidConfigurationError(
                "inter.broker.listener.name must be a listener name defined in "
                "advertised.listeners. The valid options based on currently configured "
                f"listeners are {','.join(advertised_names)}"
            )
        ensure_security_protocol_supported(
            f"{inter_broker} (the inter-broker listener)", protocols[inter_broker]
        )
        for name, _, _ in listeners:
            if protocols[name] in SASL_SECURITY_PROTOCOLS:
                self._validate_sasl(name)
        if protocols[inter_broker] in SASL_SECURITY_PROTOCOLS:
            mechanism = self.sasl_mechanism_inter_broker_protocol
            ensure_sasl_mechanisms_supported([mechanism], "sasl.mechanism.inter.broker.protocol")
            if mechanism not in self.sasl_enabled_mechanisms(inter_broker):
                raise InvalidConfigurationError(
                    f"sasl.mechanism.inter.broker.protocol ({mechanism}) must be included in "
                    f"sasl.enabled.mechanisms of the inter-broker listener {inter_broker} "
                    "when SASL is used for inter-broker communication"
                )

    @property
    def log_dirs(self) -> list[Path]:
        raw = self._values["log.dirs"] or self._values["log.dir"]
        return [Path(p.strip()) for p in str(raw).split(",") if p.strip()]

    @property
    def zookeeper_connect(self) -> str | None:
        value: str | None = self._values["zookeeper.connect"]
        return value or None

    @property
    def zookeeper_session_timeout_ms(self) -> int:
        return int(self._values["zookeeper.session.timeout.ms"])

    @property
    def zookeeper_connection_timeout_ms(self) -> int | None:
        """How long start-up waits for a ZooKeeper session; None: the session timeout."""
        value = self._values["zookeeper.connection.timeout.ms"]
        return None if value is None else int(value)

    @property
    def metadata_store_dir(self) -> Path:
        value = self._values["metadata.store.dir"]
        return Path(value) if value else self.log_dirs[0]

    @property
    def background_threads(self) -> int:
        return int(self._values["background.threads"])

    @property
    def num_recovery_threads_per_data_dir(self) -> int:
        return int(self._values["num.recovery.threads.per.data.dir"])

    @property
    def num_partitions(self) -> int:
        return int(self._values["num.partitions"])

    @property
    def default_replication_factor(self) -> int:
        return int(self._values["default.replication.factor"])

    @property
    def authorizer_class_name(self) -> str:
        return str(self._values["authorizer.class.name"] or "").strip()

    @property
    def super_users(self) -> str | None:
        value = self._values["super.users"]
        return None if value is None else str(value)

    @property
    def allow_everyone_if_no_acl_found(self) -> bool:
        return bool(self._values["allow.everyone.if.no.acl.found"])

    def _validate_authorizer(self) -> None:
        name = self.authorizer_class_name
        if name and name not in AUTHORIZER_CLASS_NAMES:
            raise InvalidConfigurationError(
                f"Invalid value {name} for configuration authorizer.class.name: kafpy provides "
                "kafka.security.authorizer.AclAuthorizer (also accepted as "
                "kafka.security.auth.SimpleAclAuthorizer or AclAuthorizer); leave it empty for "
                "no authorization"
            )
        try:
            parse_super_users(self.super_users)
        except ValueError as e:
            raise InvalidConfigurationError(str(e)) from None

    @property
    def auto_create_topics_enable(self) -> bool:
        return bool(self._values["auto.create.topics.enable"])

    @property
    def socket_request_max_bytes(self) -> int:
        return int(self._values["socket.request.max.bytes"])

    @property
    def replica_lag_time_max_ms(self) -> int:
        return int(self._values["replica.lag.time.max.ms"])

    @property
    def replica_isr_change_propagation_blackout_ms(self) -> int:
        return int(self._values["replica.isr.change.propagation.blackout.ms"])

    @property
    def replica_isr_change_propagation_max_interval_ms(self) -> int:
        return int(self._values["replica.isr.change.propagation.max.interval.ms"])

    @property
    def replica_high_watermark_checkpoint_interval_ms(self) -> int:
        return int(self._values["replica.high.watermark.checkpoint.interval.ms"])

    @property
    def max_incremental_fetch_session_cache_slots(self) -> int:
        return int(self._values["max.incremental.fetch.session.cache.slots"])

    @property
    def fetch_purgatory_purge_interval_requests(self) -> int:
        return int(self._values["fetch.purgatory.purge.interval.requests"])

    @property
    def producer_purgatory_purge_interval_requests(self) -> int:
        return int(self._values["producer.purgatory.purge.interval.requests"])

    @property
    def log_flush_scheduler_interval_ms(self) -> int:
        return int(self._values["log.flush.scheduler.interval.ms"])

    @property
    def log_flush_offset_checkpoint_interval_ms(self) -> int:
        return int(self._values["log.flush.offset.checkpoint.interval.ms"])

    @property
    def log_flush_start_offset_checkpoint_interval_ms(self) -> int:
        return int(self._values["log.flush.start.offset.checkpoint.interval.ms"])

    @property
    def log_retention_check_interval_ms(self) -> int:
        return int(self._values["log.retention.check.interval.ms"])

    @property
    def log_dir_failure_timeout_ms(self) -> int:
        return int(self._values["log.dir.failure.timeout.ms"])

    @property
    def log_initial_task_delay_ms(self) -> int:
        return int(self._values["log.initial.task.delay.ms"])

    @property
    def metrics_listener(self) -> tuple[str, int] | None:
        """(host, port) of the metrics endpoint, or None when metrics are off."""
        value = self._values[METRICS_LISTENER_CONFIG]
        return parse_metrics_listener(str(value)) if value and str(value).strip() else None

    @property
    def controlled_shutdown_enable(self) -> bool:
        return bool(self._values["controlled.shutdown.enable"])

    @property
    def controlled_shutdown_max_retries(self) -> int:
        return int(self._values["controlled.shutdown.max.retries"])

    @property
    def controlled_shutdown_retry_backoff_ms(self) -> int:
        return int(self._values["controlled.shutdown.retry.backoff.ms"])

    @property
    def num_replica_fetchers(self) -> int:
        return int(self._values["num.replica.fetchers"])

    @property
    def replica_fetch_max_bytes(self) -> int:
        return int(self._values["replica.fetch.max.bytes"])

    @property
    def replica_fetch_response_max_bytes(self) -> int:
        return int(self._values["replica.fetch.response.max.bytes"])

    @property
    def replica_fetch_wait_max_ms(self) -> int:
        return int(self._values["replica.fetch.wait.max.ms"])

    @property
    def replica_fetch_min_bytes(self) -> int:
        return int(self._values["replica.fetch.min.bytes"])

    @property
    def replica_fetch_backoff_ms(self) -> int:
        return int(self._values["replica.fetch.backoff.ms"])

    @property
    def replica_socket_timeout_ms(self) -> int:
        return int(self._values["replica.socket.timeout.ms"])

    def connection_quota_config(self) -> ConnectionQuotaConfig:
        """The limits on connections (max.connections*, the listeners' overrides) for the
        socket server's ConnectionQuotas."""
        return self._connection_quotas

    def _connection_quota_config(self) -> ConnectionQuotaConfig:
        config = ConnectionQuotaConfig.from_props(
            self.originals, [name for name, _, _ in self.listeners],
            self.inter_broker_listener_name, int(self._values["quota.window.num"]),
            int(self._values["quota.window.size.seconds"]),
        )  # fmt: skip
        idle_ms = self.connections_max_idle_ms
        if idle_ms >= 0 and config.failed_authentication_delay_ms >= idle_ms:
            raise InvalidConfigurationError(
                f"connection.failed.authentication.delay.ms="
                f"{config.failed_authentication_delay_ms} should always be less than "
                f"connections.max.idle.ms={idle_ms} to prevent failed authentication "
                "responses from timing out"
            )
        return config

    def log_cleaner_config(self) -> CleanerConfig:
        """The log.cleaner.* settings for the LogCleaner."""
        return CleanerConfig.from_config(self)

    def log_default_config(self) -> LogConfig:
        """The LogConfig topics get when they have no overrides."""
        return LogConfig.from_props(self._log_defaults)


def logged_value(key: ConfigKey, value: object) -> str:
    """A value as Kafka logs it: Java's toString, a password as `[hidden]`."""
    if key.type is ConfigType.PASSWORD and value is not None:
        return "[hidden]"
    return format_value(value)


def ensure_security_protocol_supported(listener: str, protocol: str) -> None:
    """Refuse a listener whose security protocol kafpy cannot honour (never serve it weaker).

    The one place that decides which protocols a broker may serve; the security work relaxes
    it per protocol.
    """
    if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
        raise InvalidConfigurationError(
            f"Listener {listener} uses security protocol {protocol}, which kafpy does not "
            f"support yet (supported: {', '.join(sorted(SUPPORTED_SECURITY_PROTOCOLS))}); "
            "kafpy will not serve it as plaintext. Use a PLAINTEXT listener or remove this one."
        )
    if protocol in ("SSL", "SASL_SSL"):
        try:  # certificates are read with the cryptography library
            require_extra("crypto", f"Listener {listener} ({protocol})")
        except MissingExtraError as e:
            raise InvalidConfigurationError(str(e)) from None


_MECHANISM_OVERRIDES = frozenset({
    "sasl.jaas.config", "sasl.server.callback.handler.class", "sasl.login.callback.handler.class",
    "sasl.login.class", "connections.max.reauth.ms",
})  # fmt: skip
"""Keys Kafka reads per listener and mechanism (`listener.name.<l>.<mechanism>.<key>`)."""


def _is_listener_override(key: str) -> bool:
    """`listener.name.<listener>.<key>` for a key a listener may override."""
    if not key.startswith("listener.name."):
        return False
    _, _, rest = key[len("listener.name.") :].partition(".")
    if (
        rest in BROKER_SSL_CONFIG_DEF
        or rest in LISTENER_RECONFIGURABLE_CONFIGS
        or rest in ("sasl.enabled.mechanisms", "connections.max.reauth.ms")
        or rest in ("sasl.kerberos.service.name", "sasl.kerberos.principal.to.local.rules")
    ):
        return True
    _, _, after_mechanism = rest.partition(".")
    return after_mechanism in _MECHANISM_OVERRIDES


def _parse_listeners(value: str) -> list[tuple[str, str, int]]:
    out = []
    for entry in value.split(","):
        m = _LISTENER.match(entry.strip())
        assert m is not None, "validated at parse time"
        out.append((m.group(1), m.group(2).strip("[]"), int(m.group(3))))
    return out
