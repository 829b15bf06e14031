"""`meta.properties` in each log dir: the broker id (and cluster id) that owns the dir.

Kafka refuses to start when the dirs disagree with each other or with `broker.id`, so
a dir from one broker is never served by another by mistake.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kafpy.common.errors import InconsistentBrokerMetadataError
from kafpy.common.properties import PropertiesError, load_properties

META_PROPERTIES = "meta.properties"


@dataclass(frozen=True)
class BrokerMetadata:
    """What meta.properties holds (version 0)."""

    broker_id: int
    cluster_id: str | None = None


class BrokerMetadataCheckpoint:
    """Reads and atomically writes one dir's meta.properties."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, meta: BrokerMetadata) -> None:
        lines = ["#", "#kafpy broker metadata", "version=0", f"broker.id={meta.broker_id}"]
        if meta.cluster_id is not None:
            lines.append(f"cluster.id={meta.cluster_id}")
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def read(self) -> BrokerMetadata | None:
        """The metadata, or None when the file does not exist."""
        if not self.path.exists():
            return None
        try:
            props = load_properties(self.path)
        except PropertiesError as e:
            raise InconsistentBrokerMetadataError(str(e)) from e
        version = props.get("version")
        if version != "0":
            raise InconsistentBrokerMetadataError(
                f"Unrecognized version of the server meta.properties file {self.path}: {version}"
            )
        try:
            broker_id = int(props["broker.id"])
        except (KeyError, ValueError) as e:
            raise InconsistentBrokerMetadataError(
                f"Failed to read broker.id from {self.path}: the file must have broker.id=<integer>"
            ) from e
        return BrokerMetadata(broker_id, props.get("cluster.id"))


def check_broker_metadata(
    log_dirs: list[Path], broker_id: int, cluster_id: str | None = None
) -> None:
    """Check every dir's meta.properties against `broker_id` and `cluster_id`, then write
    the dirs that have none (or lack the cluster id).

    Raises InconsistentBrokerMetadataError naming the dirs when they disagree.
    """
    found: dict[Path, BrokerMetadata] = {}
    for d in log_dirs:
        meta = BrokerMetadataCheckpoint(d / META_PROPERTIES).read()
        if meta is not None:
            found[d] = meta
    ids = {m.broker_id for m in found.values()}
    if len(ids) > 1:
        listing = ", ".join(f"{d}: {m.broker_id}" for d, m in found.items())
        raise InconsistentBrokerMetadataError(
            f"Failed to match broker.id across log.dirs. This could happen if multiple brokers "
            f"shared a log directory (log.dirs) or partial data was manually copied from another "
            f"broker. Found {listing}"
        )
    if ids and broker_id not in ids:
        (other,) = ids
        raise InconsistentBrokerMetadataError(
            f"Configured broker.id {broker_id} doesn't match stored broker.id {other} in "
            f"meta.properties. If you moved your data, make sure your configured broker.id "
            f"matches. If you intend to create a new broker, you should remove all data in "
            f"your data directories (log.dirs)."
        )
    for d, meta in found.items():
        if cluster_id is not None and meta.cluster_id is not None and meta.cluster_id != cluster_id:
            raise InconsistentBrokerMetadataError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId {meta.cluster_id} in "
                f"{d / META_PROPERTIES}. The broker is trying to join the wrong cluster. "
                f"Configured zookeeper.connect may be wrong."
            )
    for d in log_dirs:
        meta = found.get(d)
        if meta is None or (meta.cluster_id is None and cluster_id is not None):
            BrokerMetadataCheckpoint(d / META_PROPERTIES).write(
                BrokerMetadata(broker_id, cluster_id)
            )
