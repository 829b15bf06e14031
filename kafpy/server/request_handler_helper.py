"""Encoding a handler's answer and throttling it by the client quotas (Kafka's
RequestHandlerHelper.sendResponseMaybeThrottle).

A handler answers with a body to encode, one already encoded (bytes), or None (no answer).
"""

from __future__ import annotations

from typing import Any

from kafpy.network.request_channel import Request, ResponseParts
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import encode_response, frame_response
from kafpy.server.client_quota_manager import QuotaManagers

# Requests the client quotas do not hold: the controller's and replicas' own (Kafka exempts
# what needs ClusterAction), and the ones a client needs to learn how it is throttled.
QUOTA_EXEMPT = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                           ApiKey.CONTROLLED_SHUTDOWN, ApiKey.API_VERSIONS})  # fmt: skip


def is_quota_exempt(request: Request) -> bool:
    """Whether the client quotas leave the request alone: the exempt APIs, and replicas'
    fetches."""
    return request.header.api_key in QUOTA_EXEMPT or (
        request.header.api_key == ApiKey.FETCH and (request.body or {}).get("replica_id", -1) >= 0
    )


def encode(request: Request, body: dict[str, Any] | bytes | None) -> ResponseParts | None:
    """The response frame of a handler's answer (None: nothing to send)."""
    header = request.header
    if body is None:
        return None
    if isinstance(body, bytes):
        return frame_response(header.api_key, header.api_version, header.correlation_id, [body])
    return encode_response(header.api_key, header.api_version, header.correlation_id, body)


def throttle(
    quotas: QuotaManagers,
    request: Request,
    body: dict[str, Any] | bytes | None,
    elapsed_s: float,
) -> ResponseParts | None:
    """Record the request against the client's quotas (Kafka's ClientQuotaManager and
    ClientRequestQuotaManager) and answer with the throttle time it earned; the socket
    server then leaves the connection unread for that long (request.context)."""
    user, client_id = request.principal.name, request.header.client_id or ""
    api_key = request.header.api_key
    throttle_ms = 0
    if api_key == ApiKey.PRODUCE and quotas.produce.enabled:
        throttle_ms = quotas.produce.record_and_get_throttle_time_ms(user, client_id, request.size)
    if quotas.request.enabled:
        # request_percentage: percent of one thread's time, as Kafka measures it
        throttle_ms = max(throttle_ms, quotas.request.record_and_get_throttle_time_ms(
            user, client_id, elapsed_s * 100))  # fmt: skip
    parts = encode(request, body)
    if (
        api_key == ApiKey.FETCH
        and quotas.fetch.enabled
        and parts is not None
        and isinstance(body, dict)
        and request.body is not None
        and request.body.get("replica_id", -1) < 0
    ):
        size = sum(len(p) for p in parts)
        fetch_throttle = quotas.fetch.record_and_get_throttle_time_ms(user, client_id, size)
        if fetch_throttle > 0:  # Kafka answers a throttled fetch without its records
            quotas.fetch.unrecord(user, client_id, size)
            for t in body.get("responses", ()):
                for p in t.get("partitions", ()):
                    p["records"] = b""
            throttle_ms = max(throttle_ms, fetch_throttle)
    if throttle_ms <= 0:
        return parts
    request.context["throttle_ms"] = throttle_ms
    if isinstance(body, dict):
        body["throttle_time_ms"] = throttle_ms
        return encode(request, body)
    return parts
