"""SchemaRegistryConfig: the registry's configuration, in Confluent's keys.

    listeners=http://127.0.0.1:8081
    kafkastore.bootstrap.servers=PLAINTEXT://localhost:9092
    kafkastore.topic=_schemas
    schema.compatibility.level=backward

`kafkastore.security.protocol`, `kafkastore.ssl.*` and `kafkastore.sasl.*` are the store
client's `security.protocol`, `ssl.*` and `sasl.*` (kafpy's ClientSecurity). Keys Confluent
knows that kafpy cannot honour (ZooKeeper election, https listeners, REST authentication,
schema providers) are refused; other keys are ignored with the warning Kafka's clients give
("The configuration 'x' was supplied but isn't a known config."): Confluent gives it for the
`kafkastore.*` keys its clients do not know, and says nothing about unknown top-level keys.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from kafpy.client.client_security import ClientSecurity
from kafpy.common.errors import InvalidConfigurationError
from kafpy.schema_registry.compatibility import CompatibilityLevel

STORE_PREFIX = "kafkastore."
DEFAULT_LISTENER = "http://0.0.0.0:8081"
DEFAULT_TOPIC = "_schemas"
DEFAULT_REPLICATION_FACTOR = 3
DEFAULT_TIMEOUT_MS = 500
DEFAULT_INIT_TIMEOUT_MS = 60000
MAX_REQUEST_BYTES = 1024 * 1024
"""The largest request body served (a schema travels as one Kafka record of `_schemas`)."""

KNOWN_KEYS = frozenset(
    {
        "listeners", "port", "host.name", "debug",
        "kafkastore.bootstrap.servers", "kafkastore.topic",
        "kafkastore.topic.replication.factor", "kafkastore.timeout.ms",
        "kafkastore.init.timeout.ms", "kafkastore.group.id",
        "kafkastore.topic.skip.validation", "kafkastore.write.max.retries",
        "kafkastore.security.protocol",
        "schema.compatibility.level", "avro.compatibility.level", "mode.mutability",
        "schema.registry.group.id", "leader.eligibility", "master.eligibility",
        "schema.registry.inter.instance.protocol", "inter.instance.protocol",
        "schema.cache.size", "schema.cache.expiry.secs",
        "access.control.allow.origin", "access.control.allow.methods",
        "access.control.allow.headers", "response.mediatype.preferred",
        "response.mediatype.default", "shutdown.graceful.ms", "metrics.jmx.prefix",
    }
)  # fmt: skip
"""Confluent's keys kafpy reads or may ignore (documented as having no effect here)."""

REFUSED_KEYS: dict[str, str] = {
    "kafkastore.connection.url": "ZooKeeper-based leader election is not supported; "
    "use kafkastore.bootstrap.servers",
    "schema.providers": "only kafpy's own AVRO and JSON schema types are served",
    "resource.extension.class": "REST extensions (Java classes) cannot be loaded",
    "rest.servlet.initializor.classes": "servlet initializers (Java classes) cannot be loaded",
    "authentication.method": "REST authentication is not supported",
    "ssl.keystore.location": "https listeners are not supported",
}
"""Confluent's keys kafpy cannot honour, with why; setting one refuses to start."""


@dataclass(frozen=True)
class SchemaRegistryConfig:
    """The registry's settings, validated (see the module's docstring for the keys)."""

    listeners: tuple[tuple[str, int], ...]
    host_name: str
    bootstrap_servers: str
    topic: str = DEFAULT_TOPIC
    replication_factor: int = DEFAULT_REPLICATION_FACTOR
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    init_timeout_ms: int = DEFAULT_INIT_TIMEOUT_MS
    compatibility_level: CompatibilityLevel = CompatibilityLevel.BACKWARD
    mode_mutability: bool = True
    group_id: str = "schema-registry"
    leader_eligibility: bool = True
    security: ClientSecurity = field(default_factory=ClientSecurity)

    @classmethod
    def from_props(
        cls,
        props: Mapping[str, str],
        *,
        source: str = "the schema registry's properties",
        warn: Callable[[str], None] | None = None,
    ) -> SchemaRegistryConfig:
        """Validate `props`; InvalidConfigurationError naming the key for a bad value or a
        key kafpy cannot honour. Unknown keys are reported through `warn`."""
        warn = warn or logging.getLogger(__name__).warning
        for key, why in REFUSED_KEYS.items():
            if props.get(key, "").strip() and not (
                key == "authentication.method" and props[key].strip().upper() == "NONE"
            ):
                raise InvalidConfigurationError(
                    f"{key} in {source} is not supported by kafpy: {why}"
                )
        store_client = {
            k[len(STORE_PREFIX) :]: v
            for k, v in props.items()
            if k.startswith(STORE_PREFIX)
            and k[len(STORE_PREFIX) :].startswith(("ssl.", "sasl.", "security.protocol"))
        }
        for key in props:
            if key not in KNOWN_KEYS and key[len(STORE_PREFIX) :] not in store_client:
                warn(f"The configuration '{key}' was supplied but isn't a known config.")
        bootstrap = props.get("kafkastore.bootstrap.servers", "").strip()
        if not bootstrap:
            raise InvalidConfigurationError(
                f"kafkastore.bootstrap.servers in {source} is required: the Kafka cluster "
                "whose topic holds the schemas (e.g. PLAINTEXT://localhost:9092)"
            )
        level_name = props.get("schema.compatibility.level") or props.get(
            "avro.compatibility.level", "backward"
        )
        level = CompatibilityLevel.for_name(level_name)
        if level is None:
            raise InvalidConfigurationError(
                f"Invalid value {level_name} for configuration schema.compatibility.level in "
                f"{source}: it must be one of none, backward, backward_transitive, forward, "
                "forward_transitive, full, full_transitive"
            )
        return cls(
            listeners=_listeners(props, source),
            host_name=props.get("host.name", "").strip() or socket.getfqdn(),
            bootstrap_servers=",".join(_bootstrap_servers(bootstrap)),
            topic=props.get("kafkastore.topic", DEFAULT_TOPIC).strip() or DEFAULT_TOPIC,
            replication_factor=_int(
                props, "kafkastore.topic.replication.factor", DEFAULT_REPLICATION_FACTOR, source, 1
            ),
            timeout_ms=_int(props, "kafkastore.timeout.ms", DEFAULT_TIMEOUT_MS, source, 0),
            init_timeout_ms=_int(
                props, "kafkastore.init.timeout.ms", DEFAULT_INIT_TIMEOUT_MS, source, 0
            ),
            compatibility_level=level,
            mode_mutability=_bool(props, "mode.mutability", True, source),
            group_id=props.get("schema.registry.group.id", "").strip() or "schema-registry",
            leader_eligibility=_bool(
                {
                    "leader.eligibility": props.get("leader.eligibility")
                    or props.get("master.eligibility", "")
                },
                "leader.eligibility",
                True,
                source,
            ),  # fmt: skip
            security=ClientSecurity.from_config(store_client, source=f"kafkastore.* in {source}"),
        )


def _int(props: Mapping[str, str], key: str, default: int, source: str, minimum: int) -> int:
    raw = props.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise InvalidConfigurationError(
            f"Invalid value {raw} for configuration {key} in {source}: not a number"
        ) from None
    if value < minimum:
        raise InvalidConfigurationError(
            f"Invalid value {raw} for configuration {key} in {source}: must be at least {minimum}"
        )
    return value


def _bool(props: Mapping[str, str], key: str, default: bool, source: str) -> bool:
    raw = props.get(key)
    if raw is None or not raw.strip():
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise InvalidConfigurationError(
            f"Invalid value {raw} for configuration {key} in {source}: expected true or false"
        )
    return raw.strip().lower() == "true"


def _listeners(props: Mapping[str, str], source: str) -> tuple[tuple[str, int], ...]:
    raw = props.get("listeners", "").strip()
    if not raw:
        raw = f"http://0.0.0.0:{_int(props, 'port', 8081, source, 0)}"
    out = []
    for listener in (x.strip() for x in raw.split(",") if x.strip()):
        parts = urlsplit(listener)
        if parts.scheme.lower() != "http":
            raise InvalidConfigurationError(
                f"Listener {listener} in listeners of {source} is not supported by kafpy: only "
                "http:// listeners are served (no https)"
            )
        try:
            port: int | None = parts.port
        except ValueError:
            port = None
        if port is None or parts.hostname is None:
            raise InvalidConfigurationError(
                f"Listener {listener} in listeners of {source} must be http://HOST:PORT"
            )
        out.append((parts.hostname, port))
    return tuple(out)


def _bootstrap_servers(raw: str) -> list[str]:
    """Confluent's `PLAINTEXT://host:port` entries as the client's `host:port`."""
    return [s.strip().split("://", 1)[-1] for s in raw.split(",") if s.strip()]
