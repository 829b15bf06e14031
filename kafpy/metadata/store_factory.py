"""Choosing the metadata store backend from the broker's configuration.

The `zookeeper.*` keys that choose and tune it are declared here (`ZOOKEEPER_CONFIG_DEF`,
which KafkaConfig takes in), so their defaults are written once.
"""

from __future__ import annotations

from pathlib import Path

from kafpy.common.config_def import ConfigDef, ConfigType, Importance, Range
from kafpy.metadata.store import MetadataStore

ZOOKEEPER_CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define("zookeeper.connect", ConfigType.STRING, None, None, Importance.HIGH,
            "ZooKeeper connect string; unset runs on the embedded metadata store.")
    .define("zookeeper.session.timeout.ms", ConfigType.INT, 18000, Range.at_least(1), Importance.HIGH)
    .define("zookeeper.connection.timeout.ms", ConfigType.INT, None, None, Importance.HIGH)
)  # fmt: skip
"""The server.properties keys of the ZooKeeper connection (a subset of KafkaConfig)."""

DEFAULT_SESSION_TIMEOUT_MS: int = ZOOKEEPER_CONFIG_DEF.default("zookeeper.session.timeout.ms")


def create_store(
    zookeeper_connect: str | None,
    data_dir: Path | None,
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
    connection_timeout_ms: int | None = None,
) -> MetadataStore:
    """A (not yet started) store: ZooKeeper when `zookeeper.connect` is set, else embedded.

    The embedded store keeps its SQLite database in `data_dir` (in memory when None).
    """
    if zookeeper_connect:
        from kafpy.metadata.zookeeper_store import ZooKeeperStore

        return ZooKeeperStore(
            zookeeper_connect,
            session_timeout_ms=session_timeout_ms,
            connection_timeout_ms=connection_timeout_ms,
        )
    from kafpy.metadata.embedded_store import EmbeddedStore

    return EmbeddedStore(data_dir)
