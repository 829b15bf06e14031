"""The FindCoordinator lookup: which broker coordinates a group or a transactional id.

Kafka's clients find a coordinator the same way in the consumer (AbstractCoordinator's
lookupCoordinator) and the admin client (the FindCoordinator step of its coordinator
strategy): ask any broker, and while the answer is COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR (the coordinator is moving, loading its
partition of __consumer_offsets / __transaction_state, or that topic is being created),
wait `retry.backoff.ms` and ask again until the deadline, then raise the last error. A
request sent to a coordinator that answers it with one of these errors goes the same way:
the coordinator is found anew and the request sent again (`send_to_coordinator`).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Mapping
from typing import Any

from kafpy.client.kafka_client import KafkaClient, error_codes
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import Errors, KafkaError
from kafpy.protocol.api_keys import ApiKey

COORDINATOR_RETRIABLE: frozenset[int] = frozenset(
    {Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR}
)
"""The error codes that mean "find the coordinator again and retry"."""


class CoordinatorType(enum.IntEnum):
    """FindCoordinator's key_type (Kafka's FindCoordinatorRequest.CoordinatorType)."""

    GROUP = 0
    TRANSACTION = 1


class _Deadline:
    """The time left for a lookup, counted both on the loop's clock and in backoffs
    waited (so a client whose sleep is replaced, as in tests, still comes to an end)."""

    def __init__(self, client: KafkaClient, timeout_ms: int) -> None:
        self.client = client
        self.timeout_ms = timeout_ms
        self.waited_ms = 0
        self.ends = asyncio.get_running_loop().time() + timeout_ms / 1000

    def passed(self) -> bool:
        """Whether another backoff would take the lookup past its deadline."""
        after = self.waited_ms + self.client.retry_backoff_ms
        late = asyncio.get_running_loop().time() + self.client.retry_backoff_ms / 1000
        return after > self.timeout_ms or late > self.ends

    def remaining_ms(self) -> int:
        """The time left before the deadline."""
        left = (self.ends - asyncio.get_running_loop().time()) * 1000
        return max(0, min(self.timeout_ms - self.waited_ms, int(left)))

    async def backoff(self) -> None:
        self.waited_ms += self.client.retry_backoff_ms
        await self.client.backoff()


def _timeout(client: KafkaClient, timeout_ms: int | None) -> int:
    return client.request_timeout_ms if timeout_ms is None else timeout_ms


async def _find_once(
    client: KafkaClient, key: str, key_type: CoordinatorType
) -> tuple[int, int, str | None]:
    """One FindCoordinator: (error code, node id, error message)."""
    found: dict[str, Any] = await client.send_to_any(
        ApiKey.FIND_COORDINATOR,
        {"key": key, "key_type": int(key_type), "coordinator_keys": [key]},
    )
    if found.get("coordinators"):  # v4+: one entry per key asked
        found = found["coordinators"][0]
    code = int(found.get("error_code", Errors.NONE))
    return code, int(found.get("node_id", -1)), found.get("error_message")


async def find_coordinator(
    client: KafkaClient,
    key: str,
    key_type: CoordinatorType = CoordinatorType.GROUP,
    *,
    timeout_ms: int | None = None,
    context: str | None = None,
) -> int:
    """The id of the broker coordinating `key` (a group id or a transactional id).

    Retriable answers (COORDINATOR_RETRIABLE) are asked again after `retry.backoff.ms`
    until `timeout_ms` (default: the client's `request.timeout.ms`) has passed; then, or at
    once for any other error, the KafkaError of the answer is raised, its message after
    `context` (default "Finding the coordinator of <key>"). The client's metadata is
    refreshed when it does not know the coordinator's address yet."""
    context = context if context is not None else f"Finding the coordinator of {key}"
    deadline = _Deadline(client, _timeout(client, timeout_ms))
    while True:
        code, node, message = await _find_once(client, key, key_type)
        if code == Errors.NONE:
            if client.node(node) is None:
                await client.refresh_metadata([])
            return node
        if code not in COORDINATOR_RETRIABLE or deadline.passed():
            raise error_for_code(code, message, context)
        await deadline.backoff()


def coordinator_moved(response: Any) -> bool:
    """Whether a coordinator's answer carries an error telling to find it again."""
    return any(code in COORDINATOR_RETRIABLE for code, _ in error_codes(response))


async def send_to_coordinator(
    client: KafkaClient,
    key: str,
    api: ApiKey,
    body: Mapping[str, Any],
    key_type: CoordinatorType = CoordinatorType.GROUP,
    *,
    timeout_ms: int | None = None,
    context: str | None = None,
    moved: Callable[[Any], bool] = coordinator_moved,
) -> tuple[int, dict[str, Any]]:
    """Send `body` to the coordinator of `key`: (coordinator id, response).

    While the lookup or the request fails with a COORDINATOR_RETRIABLE error, or the
    response is one `moved` judges to tell so, the coordinator is found anew and the
    request sent again after `retry.backoff.ms`, until `timeout_ms` has passed (the same
    deadline as find_coordinator's). The last response is returned (its errors are the
    caller's to raise), or the last KafkaError raised."""
    deadline = _Deadline(client, _timeout(client, timeout_ms))
    while True:
        try:
            node = await find_coordinator(
                client, key, key_type, timeout_ms=deadline.remaining_ms(), context=context
            )
            response = await client.send_to_node(node, api, body)
        except KafkaError as e:
            if e.code not in COORDINATOR_RETRIABLE or deadline.passed():
                raise
            await deadline.backoff()
            continue
        if not moved(response) or deadline.passed():
            return node, response
        await deadline.backoff()
