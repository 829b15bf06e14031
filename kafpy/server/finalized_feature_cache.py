"""FinalizedFeatureCache (KIP-584): the cluster's finalized features as this broker knows
them, kept from the /feature znode by a watch.

As Kafka 2.8's FinalizedFeatureCache and FinalizedFeatureChangeListener: the epoch is the
znode's version; an absent or disabled node empties the cache. A node finalizing a feature
this broker does not support (every one, as Kafka 2.8 supports none), or one older than the
cache, is refused: at start-up the broker stops (Kafka exits), later the error is logged
and the cache keeps what it had. ApiVersions v3 answers from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafpy.common.features import BrokerFeatures, FinalizedVersionRange
from kafpy.common.logger import PrefixAdapter, component_logger
from kafpy.metadata.errors import NoNodeError
from kafpy.metadata.feature_znode import FeatureZNode, FeatureZNodeStatus
from kafpy.metadata.store import MetadataStore, WatchedEvent


class FeatureCacheUpdateError(Exception):
    """The finalized features cannot be taken (Kafka's FeatureCacheUpdateException)."""


@dataclass(frozen=True)
class FinalizedFeaturesAndEpoch:
    """Finalized features and the epoch (znode version) they were read at."""

    features: dict[str, FinalizedVersionRange] = field(default_factory=dict)
    epoch: int = -1

    def __str__(self) -> str:
        return f"FinalizedFeaturesAndEpoch(features={self.features}, epoch={self.epoch})"


class FinalizedFeatureCache:
    """The latest finalized features this broker took, or None."""

    def __init__(self, broker_features: BrokerFeatures) -> None:
        self.broker_features = broker_features
        self.latest: FinalizedFeaturesAndEpoch | None = None
        self.log = component_logger("kafpy.server.FinalizedFeatureCache")

    def get(self) -> FinalizedFeaturesAndEpoch | None:
        return self.latest

    def clear(self) -> None:
        self.latest = None
        self.log.info("Cleared cache")

    def update_or_throw(self, features: dict[str, FinalizedVersionRange], epoch: int) -> None:
        """Take `features` at `epoch`; FeatureCacheUpdateError if older than the cache or
        incompatible with this broker's supported features."""
        new = FinalizedFeaturesAndEpoch(dict(features), epoch)
        old = self.latest
        if old is not None and old.epoch > epoch:
            raise FeatureCacheUpdateError(
                f"Can not update FinalizedFeatureCache with latest features: {new} since the "
                f"existing features {old} have newer epoch"
            )
        incompatible = self.broker_features.incompatible_features(features)
        if incompatible:
            raise FeatureCacheUpdateError(
                f"Can not update FinalizedFeatureCache with latest features: {new} since the "
                f"broker's supported features are incompatible: {incompatible}"
            )
        self.latest = new
        self.log.info("Updated cache from existing %s to latest %s.", old, new)


class FinalizedFeatureChangeListener:
    """Reads /feature into the cache and again each time its watch fires."""

    def __init__(self, cache: FinalizedFeatureCache, store: MetadataStore) -> None:
        self.cache = cache
        self.store = store
        self.log: PrefixAdapter = component_logger("kafpy.server.FinalizedFeatureChangeListener")
        self._closed = False

    async def initialize_or_throw(self) -> None:
        """The first read, at start-up; FeatureCacheUpdateError stops the broker."""
        await self.update_latest_or_throw()

    async def update_latest_or_throw(self) -> None:
        try:
            data, stat = await self.store.get(FeatureZNode.path, self._watcher)
        except NoNodeError:
            # watch for its creation (it may have been created meanwhile)
            if await self.store.exists(FeatureZNode.path, self._watcher) is None:
                self.log.info("Feature ZK node at path: %s does not exist", FeatureZNode.path)
                self.cache.clear()
                return
            data, stat = await self.store.get(FeatureZNode.path, self._watcher)
        node = FeatureZNode.decode(data)
        if node.status is FeatureZNodeStatus.DISABLED:
            self.log.info("Feature ZK node at path: %s is in disabled status.", FeatureZNode.path)
            self.cache.clear()
            return
        self.cache.update_or_throw(node.features, stat.version)

    async def _watcher(self, event: WatchedEvent) -> None:
        if self._closed:
            return
        try:
            await self.update_latest_or_throw()
        except Exception as e:
            self.log.error("Failed to process feature ZK node change event: %s", e)

    def close(self) -> None:
        self._closed = True
