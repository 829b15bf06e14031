"""The API versions this broker advertises in ApiVersions and answers.

Each message module declares its API's range (kafpy/protocol/messages/<api>.py); this is
the table of them.

Kafka 2.8's ranges for every client-facing API kafpy serves, flexible versions included
(KIP-482), the inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown) included: a Kafka 2.8 controller may send any of them. Produce v0-2 and
Fetch v0-3 carry message format v0/v1: kafpy converts it (kafpy/server/record_conversion.py).
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import API_SCHEMAS

SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    key: schema.versions for key, schema in API_SCHEMAS.items()
}
"""Each API's advertised range, as its message module declares it (`ApiSchema.versions`)."""


def is_supported(api_key: int, api_version: int) -> bool:
    """Whether the broker answers this API at this version."""
    rng = SUPPORTED_VERSIONS.get(api_key)  # type: ignore[call-overload]
    return rng is not None and rng[0] <= api_version <= rng[1]


def api_versions_entries() -> list[dict[str, int]]:
    """The `api_keys` array of an ApiVersions response body."""
    return [
        {"api_key": int(key), "min_version": lo, "max_version": hi}
        for key, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
    ]
