"""Feature versioning (KIP-584), the controller's side: the /feature znode and UpdateFeatures.

As Kafka 2.8's KafkaController: on failover the controller enables feature versioning
(inter.broker.protocol.version is at least 2.7 in kafpy, always): it creates /feature,
enabled, with the default finalized features (none in 2.8), or switches a disabled node to
enabled, dropping the features a disabled node held; an enabled node is left as it is.
UpdateFeatures (the `UpdateFeatures` event) validates each update as Kafka does
(INVALID_REQUEST with Kafka's messages: empty name, unknown feature, deletion of a feature
not finalized, a level below 1 without allowDowngrade, the same level, a downgrade without
allowDowngrade, allowDowngrade with a higher level, a level under the finalized minimum, a
feature a live broker does not support), writes the valid ones in one write of the node,
and answers FEATURE_UPDATE_FAILED for the valid ones when that write fails.

The controller reads the finalized features from the node itself (the source of truth);
brokers learn them through their FinalizedFeatureCache's watch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.common.features import BrokerFeatures, FinalizedVersionRange
from kafpy.metadata.errors import NoNodeError
from kafpy.metadata.feature_znode import FeatureZNode, FeatureZNodeStatus
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.protocol.errors import Errors


@dataclass(frozen=True)
class ApiError:
    """An error code and its message (None for NONE)."""

    code: int
    message: str | None = None


NONE = ApiError(Errors.NONE)


def is_delete_request(update: Mapping[str, Any]) -> bool:
    """Kafka's UpdateFeaturesRequest.isDeleteRequest: a level below 1 with allowDowngrade."""
    return bool(update["max_version_level"] < 1 and update["allow_downgrade"])


class FeatureVersioning:
    """Keeps /feature enabled and applies UpdateFeatures.

    `brokers_features()` gives the features each live broker supports (every kafpy broker
    supports those of `BrokerFeatures.create_default()`)."""

    def __init__(
        self,
        zk_client: KafkaZkClient,
        broker_features: BrokerFeatures,
        brokers_features: Callable[[], Sequence[BrokerFeatures]],
        log: logging.LoggerAdapter[logging.Logger],
    ) -> None:
        self.zk_client = zk_client
        self.broker_features = broker_features
        self.brokers_features = brokers_features
        self.log = log

    async def read(self) -> tuple[FeatureZNode | None, int]:
        """The node and its version; (None, -1) when it does not exist."""
        try:
            data, stat = await self.zk_client.store.get(FeatureZNode.path)
        except NoNodeError:
            return None, -1
        return FeatureZNode.decode(data), stat.version

    async def _write(self, node: FeatureZNode, exists: bool) -> int:
        store = self.zk_client.store
        if not exists:
            self.log.info("Creating FeatureZNode at path: %s with contents: %s", node.path, node)
            await store.create(node.path, node.encode())
            return 0
        self.log.info("Updating FeatureZNode at path: %s with contents: %s", node.path, node)
        return (await store.set(node.path, node.encode())).version

    async def enable_feature_versioning(self) -> None:
        """Kafka's enableFeatureVersioning, at controller failover."""
        existing, _ = await self.read()
        if existing is None:
            default = self.broker_features.default_finalized_features()
            await self._write(FeatureZNode(FeatureZNodeStatus.ENABLED, default), exists=False)
            return
        features = existing.features
        if existing.status is FeatureZNodeStatus.DISABLED:
            if features:
                self.log.warning(
                    "FeatureZNode at path: %s with disabled status contains non-empty features: %s",
                    FeatureZNode.path, features,
                )  # fmt: skip
            features = {}
        node = FeatureZNode(FeatureZNodeStatus.ENABLED, features)
        if node != existing:
            await self._write(node, exists=True)

    def _new_range(self, update: Mapping[str, Any]) -> FinalizedVersionRange | ApiError:
        """Kafka's newFinalizedVersionRangeOrIncompatibilityError."""
        supported = self.broker_features.supported_features.get(update["feature"])
        if supported is None:
            return ApiError(
                Errors.INVALID_REQUEST,
                "Could not apply finalized feature update because the provided feature"
                " is not supported.",
            )
        level = update["max_version_level"]
        try:
            new = FinalizedVersionRange(supported.min_version, level)
        except ValueError:
            return ApiError(
                Errors.INVALID_REQUEST,
                "Could not apply finalized feature update because the provided"
                f" maxVersionLevel:{level} is lower than the"
                f" supported minVersion:{supported.min_version}.",
            )
        one = {update["feature"]: new}
        if any(b.incompatible_features(one) for b in self.brokers_features()):
            return ApiError(
                Errors.INVALID_REQUEST,
                "Could not apply finalized feature update because"
                " brokers were found to have incompatible versions for the feature.",
            )
        return new

    def validate_feature_update(
        self, update: Mapping[str, Any], existing: FinalizedVersionRange | None
    ) -> FinalizedVersionRange | None | ApiError:
        """The feature's new range, None to delete it, or the error (Kafka's
        validateFeatureUpdate)."""
        level, downgrade = update["max_version_level"], bool(update["allow_downgrade"])
        if not update["feature"]:
            return ApiError(Errors.INVALID_REQUEST, "Feature name can not be empty.")
        if is_delete_request(update):
            if existing is None:
                return ApiError(
                    Errors.INVALID_REQUEST, "Can not delete non-existing finalized feature."
                )
            return None
        if level < 1:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"Can not provide maxVersionLevel: {level} less than 1 without setting the"
                " allowDowngrade flag to true in the request.",
            )
        if existing is None:
            return self._new_range(update)
        current = existing.max_version_level
        if level == current:
            verb = "downgrade" if downgrade else "upgrade"
            return ApiError(
                Errors.INVALID_REQUEST,
                f"Can not {verb} a finalized feature from existing maxVersionLevel:{current}"
                " to the same value.",
            )
        if level < current and not downgrade:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"Can not downgrade finalized feature from existing maxVersionLevel:{current}"
                f" to provided maxVersionLevel:{level} without setting the"
                " allowDowngrade flag in the request.",
            )
        if downgrade and level > current:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"When the allowDowngrade flag set in the request, the provided"
                f" maxVersionLevel:{level} can not be greater than"
                f" existing maxVersionLevel:{current}.",
            )
        if level < existing.min_version_level:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"Can not downgrade finalized feature to maxVersionLevel:{level}"
                f" because it's lower than the existing"
                f" minVersionLevel:{existing.min_version_level}.",
            )
        return self._new_range(update)

    async def process_feature_updates(
        self, updates: Sequence[Mapping[str, Any]]
    ) -> dict[str, ApiError]:
        """Apply the valid updates in one write of /feature; each feature's outcome
        (Kafka's processFeatureUpdatesWithActiveController)."""
        errors: dict[str, ApiError] = {}
        try:
            node, _ = await self.read()
        except Exception as e:
            self.log.warning("Processing of feature updates failed: cannot read %s: %s",
                             FeatureZNode.path, e)  # fmt: skip
            return {u["feature"]: ApiError(Errors.FEATURE_UPDATE_FAILED) for u in updates}
        existing = dict(node.features) if node and node.status is FeatureZNodeStatus.ENABLED else {}
        target = dict(existing)
        for update in updates:
            name = update["feature"]
            outcome = self.validate_feature_update(update, existing.get(name))
            if isinstance(outcome, ApiError):
                errors[name] = outcome
                continue
            if outcome is None:
                target.pop(name, None)
            else:
                target[name] = outcome
            errors[name] = NONE
        if existing != target:
            try:
                await self._write(
                    FeatureZNode(FeatureZNodeStatus.ENABLED, target), exists=node is not None
                )
            except Exception as e:
                self.log.warning("Processing of feature updates: %s failed due to error: %s",
                                 list(updates), e)  # fmt: skip
                errors = {
                    n: ApiError(Errors.FEATURE_UPDATE_FAILED) if err.code == Errors.NONE else err
                    for n, err in errors.items()
                }
        return errors
