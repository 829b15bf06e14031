"""Feature versioning (KIP-584): the version ranges of features and this broker's
supported features.

A *supported* feature is a name and the range of versions a broker can run
(`SupportedVersionRange`, advertised in ApiVersions v3 and in the broker's registration);
a *finalized* feature is a name and the range of version levels the whole cluster runs
(`FinalizedVersionRange`, kept in the /feature znode). Kafka 2.8 defines no feature yet:
`BrokerFeatures.create_default()` supports none, so nothing can be finalized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SupportedVersionRange:
    """The versions of a feature a broker supports, `min_version` to `max_version`."""

    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if self.min_version < 1 or self.max_version < self.min_version:
            raise ValueError(
                f"Expected 1 <= min_version <= max_version, got min_version:{self.min_version}, "
                f"max_version:{self.max_version}"
            )


@dataclass(frozen=True)
class FinalizedVersionRange:
    """The version levels of a feature finalized for the cluster (Kafka's
    FinalizedVersionRange: 1 <= min_version_level <= max_version_level)."""

    min_version_level: int
    max_version_level: int

    def __post_init__(self) -> None:
        if self.min_version_level < 1 or self.max_version_level < self.min_version_level:
            raise ValueError(
                "Expected 1 <= min_version_level <= max_version_level, got "
                f"min_version_level:{self.min_version_level}, "
                f"max_version_level:{self.max_version_level}"
            )

    def is_incompatible_with(self, supported: SupportedVersionRange) -> bool:
        """True when a broker supporting `supported` cannot run this range."""
        return (
            supported.min_version > self.min_version_level
            or supported.max_version < self.max_version_level
        )


@dataclass(frozen=True)
class BrokerFeatures:
    """The features this broker supports (Kafka's BrokerFeatures)."""

    supported_features: Mapping[str, SupportedVersionRange] = field(default_factory=dict)

    @staticmethod
    def create_default() -> BrokerFeatures:
        """Kafka 2.8's broker: no feature is defined yet, so none is supported."""
        return BrokerFeatures({})

    def default_finalized_features(self) -> dict[str, FinalizedVersionRange]:
        """What a new cluster finalizes at once: every supported feature at its highest
        version (none in Kafka 2.8)."""
        return {
            name: FinalizedVersionRange(r.min_version, r.max_version)
            for name, r in self.supported_features.items()
        }

    def incompatible_features(
        self, finalized: Mapping[str, FinalizedVersionRange]
    ) -> dict[str, FinalizedVersionRange]:
        """The finalized features this broker does not support, or supports outside the
        finalized range (Kafka's BrokerFeatures.incompatibleFeatures)."""
        return {
            name: r
            for name, r in finalized.items()
            if (s := self.supported_features.get(name)) is None or r.is_incompatible_with(s)
        }
