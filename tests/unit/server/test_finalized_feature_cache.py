"""FinalizedFeatureCache and its /feature watch (KIP-584), and the ApiVersions v3 feature
fields answered from it, checked against kafka-python's ApiVersionsResponse."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsResponse as KpApiVersionsResponse

from kafpy.common.features import BrokerFeatures, FinalizedVersionRange, SupportedVersionRange
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.feature_znode import FeatureZNode, FeatureZNodeStatus
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import RESPONSES
from kafpy.server.finalized_feature_cache import (
    FeatureCacheUpdateError,
    FinalizedFeatureCache,
    FinalizedFeatureChangeListener,
)
from kafpy.server.kafka_apis import KafkaApis
from kafpy.server.kafka_config import KafkaConfig
from tests.unit.server.fixtures import Broker
from tests.unit.server.test_kafka_apis import make_request

SUPPORTING_F = BrokerFeatures({"f": SupportedVersionRange(1, 4)})


def _enabled(**features: FinalizedVersionRange) -> bytes:
    return FeatureZNode(FeatureZNodeStatus.ENABLED, dict(features)).encode()


async def _settle(predicate: object, rounds: int = 500) -> None:
    for _ in range(rounds):
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.002)
    raise AssertionError("cache did not follow the node")


def test_the_cache_follows_the_node() -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        cache = FinalizedFeatureCache(SUPPORTING_F)
        listener = FinalizedFeatureChangeListener(cache, store)
        await listener.initialize_or_throw()
        assert cache.get() is None  # no node yet
        await store.create("/feature", _enabled())
        await _settle(lambda: cache.get() is not None)
        assert (cache.get().features, cache.get().epoch) == ({}, 0)  # type: ignore[union-attr]
        await store.set("/feature", _enabled(f=FinalizedVersionRange(1, 2)))
        await _settle(lambda: cache.get().epoch == 1)  # type: ignore[union-attr]
        assert cache.get().features == {"f": FinalizedVersionRange(1, 2)}  # type: ignore[union-attr]
        # a disabled node empties the cache
        await store.set("/feature", FeatureZNode(FeatureZNodeStatus.DISABLED).encode())
        await _settle(lambda: cache.get() is None)
        # a feature this broker cannot run is refused; the cache keeps what it had
        await store.set("/feature", _enabled())
        await _settle(lambda: cache.get() is not None)
        await store.set("/feature", _enabled(f=FinalizedVersionRange(1, 9)))
        await asyncio.sleep(0.05)
        assert cache.get().features == {}  # type: ignore[union-attr]
        listener.close()
        await store.close()

    asyncio.run(main())


def test_a_node_finalizing_an_unsupported_feature_stops_the_broker_at_start_up() -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        await store.create("/feature", _enabled(f=FinalizedVersionRange(1, 1)))
        listener = FinalizedFeatureChangeListener(
            FinalizedFeatureCache(BrokerFeatures.create_default()), store
        )
        with pytest.raises(FeatureCacheUpdateError, match="supported features are incompatible"):
            await listener.initialize_or_throw()
        await store.close()

    asyncio.run(main())


def test_older_epochs_are_refused() -> None:
    cache = FinalizedFeatureCache(SUPPORTING_F)
    cache.update_or_throw({}, 3)
    with pytest.raises(FeatureCacheUpdateError, match="have newer epoch"):
        cache.update_or_throw({}, 2)


def _api_versions_v3(tmp_path: Path, cache: FinalizedFeatureCache) -> bytes:
    broker = Broker(tmp_path)
    try:
        cfg = KafkaConfig({"broker.id": "0", "log.dirs": str(tmp_path / "x")})
        apis = KafkaApis(cfg, broker.replica_manager, broker.metadata_cache, None, "c",
                         finalized_feature_cache=cache)  # fmt: skip
        body = {"client_software_name": "t", "client_software_version": "1"}
        parts = asyncio.run(apis.handle(make_request(ApiKey.API_VERSIONS, 3, body)))
        assert parts is not None
        frame = b"".join(bytes(p) for p in parts)
        return frame[4 + 4 :]  # size, correlation id (ApiVersions' header is v0)
    finally:
        broker.stop()


def test_api_versions_v3_features_as_kafka_2_8_writes_them(tmp_path: Path) -> None:
    cache = FinalizedFeatureCache(BrokerFeatures.create_default())
    cache.update_or_throw({}, 0)
    body = _api_versions_v3(tmp_path, cache)
    # Kafka 2.8: no supported feature, no finalized feature, only the epoch (tag 1)
    assert body.endswith(bytes([1, 1, 8]) + (0).to_bytes(8, "big"))
    theirs = KpApiVersionsResponse.decode(body, version=3)
    assert theirs.finalized_features_epoch == 0
    assert list(theirs.supported_features) == [] and list(theirs.finalized_features) == []


def test_api_versions_v3_with_features_decodes_in_kafka_python(tmp_path: Path) -> None:
    cache = FinalizedFeatureCache(SUPPORTING_F)
    cache.update_or_throw({"f": FinalizedVersionRange(1, 3)}, 5)
    body = _api_versions_v3(tmp_path, cache)
    theirs = KpApiVersionsResponse.decode(body, version=3)
    assert [(f.name, f.min_version, f.max_version) for f in theirs.supported_features] == [
        ("f", 1, 4)
    ]
    assert theirs.finalized_features_epoch == 5
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in theirs.finalized_features
    ] == [("f", 1, 3)]
    ours = RESPONSES[ApiKey.API_VERSIONS].decode(3, body)
    assert json.dumps(ours["finalized_features"]) == (
        '[{"name": "f", "max_version_level": 3, "min_version_level": 1}]'
    )
