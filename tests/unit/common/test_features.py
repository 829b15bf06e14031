"""Feature version ranges and the broker's supported features (KIP-584)."""

from __future__ import annotations

import pytest

from kafpy.common.features import BrokerFeatures, FinalizedVersionRange, SupportedVersionRange


def test_kafka_2_8_supports_no_feature() -> None:
    features = BrokerFeatures.create_default()
    assert features.supported_features == {}
    assert features.default_finalized_features() == {}
    # so any finalized feature is incompatible
    assert features.incompatible_features({"f": FinalizedVersionRange(1, 1)}) == {
        "f": FinalizedVersionRange(1, 1)
    }


def test_compatibility_of_ranges() -> None:
    broker = BrokerFeatures({"f": SupportedVersionRange(1, 3)})
    assert broker.default_finalized_features() == {"f": FinalizedVersionRange(1, 3)}
    assert broker.incompatible_features({"f": FinalizedVersionRange(1, 3)}) == {}
    assert broker.incompatible_features({"f": FinalizedVersionRange(2, 4)}) == {
        "f": FinalizedVersionRange(2, 4)
    }


@pytest.mark.parametrize(("lo", "hi"), [(0, 1), (2, 1), (-1, -1)])
def test_bad_ranges_are_refused(lo: int, hi: int) -> None:
    with pytest.raises(ValueError, match="min_version_level"):
        FinalizedVersionRange(lo, hi)
    with pytest.raises(ValueError, match="min_version"):
        SupportedVersionRange(lo, hi)
