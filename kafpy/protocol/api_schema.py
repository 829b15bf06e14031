"""ApiSchema: the protocol half of one API's registry entry.

Each message module (`kafpy/protocol/messages/<api>.py`) declares one `ApiSchema` per API:
its request and response `Message`s, the versions this broker advertises and answers, and
how to build the response that fails the request with one error code (Kafka's
`AbstractRequest.getErrorResponse`: every partition, topic or resource of the request
answered with the code). The authorizer's refusals, the fault injector, a broker that is not
the controller and a stale broker epoch all answer through that one builder.
`kafpy.protocol.messages` collects the declarations; `kafpy.server.api_registry` joins each
to its handler and authorization guard by API key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Message

Body = dict[str, Any]


class ErrorResponse(Protocol):
    """Builds the response body of a request failing with `code` (Kafka's
    getErrorResponse): `body` is the decoded request, `version` its version, `message` the
    error message where the response carries one."""

    def __call__(
        self, body: Mapping[str, Any], version: int, code: int, message: str | None = None
    ) -> Body: ...


@dataclass(frozen=True)
class ApiSchema:
    """One API's wire declaration: its messages, its advertised versions and its error
    response."""

    request: Message
    response: Message
    versions: tuple[int, int]
    error_response: ErrorResponse

    @property
    def api_key(self) -> ApiKey:
        return ApiKey(self.request.api_key)


def top_level_error(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The error response of an API whose response carries one error code for the whole
    request (Heartbeat, EndTxn, ...); every other field takes its schema default."""
    response: Body = {"throttle_time_ms": 0, "error_code": code}
    if message is not None:
        response["error_message"] = message
    return response


def per_partition(
    body: Mapping[str, Any],
    topics: str,
    partitions: str,
    entry: Callable[[int], Body],
    *,
    topic_name: str = "name",
    out_topic_name: str = "name",
    out_partitions: str = "partitions",
    partition_index: str | None = "partition_index",
) -> list[Body]:
    """The per-topic answers of a request's topics, each partition answered by `entry`
    (its index read at `partition_index`, or the partition itself when None: an int list)."""
    return [
        {
            out_topic_name: t[topic_name],
            out_partitions: [
                entry(p if partition_index is None else p[partition_index]) for p in t[partitions]
            ],
        }
        for t in body.get(topics) or ()
    ]
