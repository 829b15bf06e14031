"""The /feature znode (KIP-584): the cluster's finalized features and whether feature
versioning is enabled, in Kafka 2.8's JSON.

`{"features":{"f":{"max_version_level":2,"min_version_level":1}},"status":1,"version":1}`:
status 1 is enabled, 0 disabled; the znode's version is the finalized features' epoch.
Written by the controller only (at inter.broker.protocol.version 2.7 and later, enabled);
every broker watches it (FinalizedFeatureCache). Keys are in the order Kafka's Scala
mutable map and Java HashMaps give them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kafpy.common.features import FinalizedVersionRange
from kafpy.metadata.zk_data import ZkDataError


class FeatureZNodeStatus(IntEnum):
    """Whether the finalized features in the node are in force."""

    DISABLED = 0
    ENABLED = 1


@dataclass(frozen=True)
class FeatureZNode:
    """The content of /feature."""

    status: FeatureZNodeStatus
    features: dict[str, FinalizedVersionRange] = field(default_factory=dict)

    path = "/feature"
    V1 = 1
    CURRENT_VERSION = V1

    def encode(self) -> bytes:
        features = {
            name: {
                "max_version_level": r.max_version_level,
                "min_version_level": r.min_version_level,
            }
            for name, r in self.features.items()
        }
        doc = {"features": features, "status": int(self.status), "version": self.CURRENT_VERSION}
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> FeatureZNode:
        """Parse the node; ZkDataError names what is wrong, as Kafka's
        IllegalArgumentException does."""
        text = data.decode("utf-8", errors="replace")
        try:
            obj: Any = json.loads(text)
        except json.JSONDecodeError as e:
            raise ZkDataError(f"Failed to parse feature information: {text}") from e
        if not isinstance(obj, dict):
            raise ZkDataError(f"Failed to parse feature information: {text}")
        version = obj.get("version")
        if not isinstance(version, int) or version < FeatureZNode.V1:
            raise ZkDataError(f"Unsupported version: {version} of feature information: {text}")
        raw = obj.get("features")
        if not isinstance(raw, dict):
            raise ZkDataError(f"Features map can not be absent in: {text}")
        status = obj.get("status")
        if not isinstance(status, int):
            raise ZkDataError(f"Status can not be absent in feature information: {text}")
        if status not in (s.value for s in FeatureZNodeStatus):
            raise ZkDataError(f"Malformed status: {status} found in feature information: {text}")
        try:
            features = {
                str(name): FinalizedVersionRange(
                    int(levels["min_version_level"]), int(levels["max_version_level"])
                )
                for name, levels in raw.items()
            }
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(
                f"Unable to convert to finalized features from map: {raw} ({e})"
            ) from e
        return FeatureZNode(FeatureZNodeStatus(status), features)
