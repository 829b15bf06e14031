"""Feature versioning in the controller (KIP-584): /feature at failover and UpdateFeatures'
validation, over a real metadata store."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from kafpy.common.features import BrokerFeatures, FinalizedVersionRange, SupportedVersionRange
from kafpy.common.logger import PrefixAdapter
from kafpy.controller.feature_versioning import ApiError, FeatureVersioning
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.feature_znode import FeatureZNode, FeatureZNodeStatus
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.protocol.errors import Errors
from tests.unit.controller.fixtures import ControllerCluster, run

LOG = PrefixAdapter(logging.getLogger("test"), "")


def _update(feature: str, level: int, downgrade: bool = False) -> dict[str, Any]:
    return {"feature": feature, "max_version_level": level, "allow_downgrade": downgrade}


def test_the_controller_creates_an_enabled_node_with_no_features() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0)
        data, stat = await cluster.admin.store.get("/feature")
        assert data == b'{"features":{},"status":1,"version":1}' and stat.version == 0
        # Kafka 2.8 supports no feature: any update is refused
        result = await cluster.controller().update_features([_update("f", 1)], 5)
        assert result == {
            "f": ApiError(
                Errors.INVALID_REQUEST,
                "Could not apply finalized feature update because the provided feature"
                " is not supported.",
            )
        }
        other = await cluster.start_broker(1)
        await cluster.settle()
        assert await other.controller.update_features([_update("f", 1)], 5) == ApiError(
            Errors.NOT_CONTROLLER
        )

    run(body)


def test_a_disabled_node_is_enabled_and_emptied() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster._new_store()
        disabled = FeatureZNode(FeatureZNodeStatus.DISABLED, {"f": FinalizedVersionRange(1, 2)})
        await cluster.admin.store.create("/feature", disabled.encode())
        await cluster.start(0)
        data, stat = await cluster.admin.store.get("/feature")
        assert json.loads(data) == {"features": {}, "status": 1, "version": 1}
        assert stat.version == 1

    run(body)


class FailingSetStore(EmbeddedStore):
    """A store whose writes of existing nodes fail (a ZooKeeper outage mid-request)."""

    async def set(self, path: str, data: bytes, version: int = -1) -> Any:
        raise ConnectionError("connection loss")


def _versioning(
    store: EmbeddedStore, supported: dict[str, SupportedVersionRange]
) -> FeatureVersioning:
    features = BrokerFeatures(supported)
    return FeatureVersioning(KafkaZkClient(store), features, lambda: [features], LOG)


def test_update_features_validation_with_a_supported_feature() -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        fv = _versioning(
            store, {"f": SupportedVersionRange(1, 5), "g": SupportedVersionRange(2, 3)}
        )
        # a new cluster finalizes every supported feature at its highest version
        await fv.enable_feature_versioning()
        assert (await fv.read())[0] == FeatureZNode(
            FeatureZNodeStatus.ENABLED,
            {"f": FinalizedVersionRange(1, 5), "g": FinalizedVersionRange(2, 3)},
        )
        # an upgraded one starts with none finalized
        await store.set("/feature", FeatureZNode(FeatureZNodeStatus.ENABLED).encode())
        assert (await fv.process_feature_updates([_update("f", 3)])) == {"f": ApiError(Errors.NONE)}
        node, version = await fv.read()
        assert node == FeatureZNode(FeatureZNodeStatus.ENABLED, {"f": FinalizedVersionRange(1, 3)})
        assert version == 2  # the epoch moved

        def err(message: str) -> ApiError:
            return ApiError(Errors.INVALID_REQUEST, message)

        cases = [
            (_update("", 1), err("Feature name can not be empty.")),
            (_update("h", 0, True), err("Can not delete non-existing finalized feature.")),
            (_update("f", 0), err("Can not provide maxVersionLevel: 0 less than 1 without setting"
                                  " the allowDowngrade flag to true in the request.")),
            (_update("f", 3), err("Can not upgrade a finalized feature from existing"
                                  " maxVersionLevel:3 to the same value.")),
            (_update("f", 2), err("Can not downgrade finalized feature from existing"
                                  " maxVersionLevel:3 to provided maxVersionLevel:2 without"
                                  " setting the allowDowngrade flag in the request.")),
            (_update("f", 4, True), err("When the allowDowngrade flag set in the request, the"
                                        " provided maxVersionLevel:4 can not be greater than"
                                        " existing maxVersionLevel:3.")),
            (_update("f", 9), err("Could not apply finalized feature update because brokers"
                                  " were found to have incompatible versions for the feature.")),
            (_update("g", 1), err("Could not apply finalized feature update because the provided"
                                  " maxVersionLevel:1 is lower than the supported minVersion:2.")),
        ]  # fmt: skip
        for update, expected in cases:
            assert await fv.process_feature_updates([update]) == {update["feature"]: expected}
        # nothing was written by the refused updates
        assert (await fv.read())[1] == 2
        # a downgrade, then a deletion
        assert await fv.process_feature_updates([_update("f", 2, True)]) == {"f": ApiError(0)}
        assert await fv.process_feature_updates([_update("f", 0, True)]) == {"f": ApiError(0)}
        assert (await fv.read())[0] == FeatureZNode(FeatureZNodeStatus.ENABLED, {})
        await store.close()

    asyncio.run(main())


def test_a_failed_write_is_feature_update_failed_for_the_valid_updates() -> None:
    async def main() -> None:
        store = FailingSetStore(None)
        await store.start()
        fv = _versioning(store, {"f": SupportedVersionRange(1, 5)})
        await store.create("/feature", FeatureZNode(FeatureZNodeStatus.ENABLED).encode())
        result = await fv.process_feature_updates([_update("f", 2), _update("x", 1)])
        assert result["f"] == ApiError(Errors.FEATURE_UPDATE_FAILED)
        assert result["x"].code == Errors.INVALID_REQUEST
        assert (await fv.read())[0] == FeatureZNode(FeatureZNodeStatus.ENABLED, {})
        await store.close()

    asyncio.run(main())
