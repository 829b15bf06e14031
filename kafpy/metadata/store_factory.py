"""Choosing the metadata store backend from the broker's configuration."""

from __future__ import annotations

from pathlib import Path

from kafpy.metadata.store import MetadataStore


def create_store(
    zookeeper_connect: str | None,
    data_dir: Path | None,
    session_timeout_ms: int = 18000,
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
