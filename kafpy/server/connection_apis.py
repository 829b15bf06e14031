"""The APIs a client may send before any other: ApiVersions (Kafka's
KafkaApis.handleApiVersionsRequest; from v3 with the supported and finalized features of
KIP-584 as tagged fields) and the SASL exchange (kafpy.security.sasl_requests).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kafpy.network.request_channel import Request
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.security import sasl_requests
from kafpy.server.api_context import ApiContext, body_of

# KIP-511: what ApiVersions v3+ accepts as a client software name or version
_SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


class ConnectionApis:
    """Answers ApiVersions with the APIs `served()` gives, and the SASL exchange."""

    def __init__(
        self, ctx: ApiContext, served: Callable[[], dict[ApiKey, tuple[int, int]]]
    ) -> None:
        self.ctx = ctx
        self.served = served

    async def handle_sasl_handshake(self, request: Request) -> dict[str, Any]:
        return await sasl_requests.handle_sasl_handshake(request)

    async def handle_sasl_authenticate(self, request: Request) -> dict[str, Any]:
        return await sasl_requests.handle_sasl_authenticate(request)

    async def handle_api_versions(self, request: Request) -> dict[str, Any]:
        body = body_of(request)
        if request.api_version >= 3 and not all(
            _SOFTWARE_NAME_OR_VERSION.fullmatch(body.get(f) or "")
            for f in ("client_software_name", "client_software_version")
        ):
            self.ctx.log.info(
                "Refusing ApiVersions v%d from client id %s: client software name %r and version %r "
                "must be letters, digits, '-' and '.', starting and ending with a letter or digit",
                request.api_version, request.header.client_id,
                body.get("client_software_name"), body.get("client_software_version"),
            )  # fmt: skip
            return {"error_code": Errors.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0}
        return {
            "error_code": Errors.NONE,
            "api_keys": [
                {"api_key": int(k), "min_version": lo, "max_version": hi}
                for k, (lo, hi) in self.served().items()
            ],
            "throttle_time_ms": 0,
            **self.features(),
        }

    def features(self) -> dict[str, Any]:
        """The tagged fields of ApiVersions v3: supported features, and the finalized ones
        with their epoch when the cache holds any (Kafka writes a tagged field only when it
        is not its default: none here while Kafka 2.8 defines no feature, but the epoch)."""
        cache = self.ctx.finalized_feature_cache
        if cache is None:
            return {}
        supported = cache.broker_features.supported_features
        body: dict[str, Any] = {
            "supported_features": [
                {"name": n, "min_version": r.min_version, "max_version": r.max_version}
                for n, r in supported.items()
            ]
        }
        latest = cache.get()
        if latest is not None:
            body["finalized_features_epoch"] = latest.epoch
            body["finalized_features"] = [
                {"name": n, "max_version_level": r.max_version_level,
                 "min_version_level": r.min_version_level}
                for n, r in latest.features.items()
            ]  # fmt: skip
        return body
