"""DelayedTopicOperations: CreateTopics, CreatePartitions and DeleteTopics waiting for the
controller's work (Kafka's DelayedCreatePartitions and DelayedDeleteTopics).

Those requests only write to the metadata store; the controller then elects leaders for
new partitions or deletes the topic, and every broker learns of it through UpdateMetadata.
A request waits here until its new partitions have leaders (or its topics are gone) or its
timeout passes, and then answers REQUEST_TIMED_OUT for what is still missing; a partition
this broker refused to create (out of file descriptors) ends the wait for its topic with
KAFKA_STORAGE_ERROR and the reason. The wait
re-checks on every metadata change (`try_complete`, called after UpdateMetadata) and every
100 ms.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from kafpy.protocol.errors import Errors

__all__ = ["DelayedTopicOperations", "Predicate", "call_predicate"]

_POLL_S = 0.1  # re-check of a wait's condition when no metadata change was signalled

Predicate = Callable[..., bool | Awaitable[bool]]


async def call_predicate(predicate: Predicate, *args: object) -> bool:
    """The answer of a predicate that may be a plain function or a coroutine function."""
    result = predicate(*args)
    if inspect.isawaitable(result):
        result = await result
    return bool(result)


class DelayedTopicOperations:
    """The creates and deletes waiting for the metadata to show the controller's work.

    Parameters:
        partitions_online: `(topic, partitions) -> bool` (or an awaitable of it): whether
            every listed partition has a leader.
        topic_exists_in_metadata: `(topic) -> bool` (or awaitable): whether the topic is
            still known (a deletion waits until it is not).
        partitions_refused: `(topic, partitions) -> str | None`: why this broker refused
            to create the log of one of the partitions (it was out of file descriptors),
            None if it did not; a create then answers KAFKA_STORAGE_ERROR at once, with
            that reason, instead of waiting for leaders that will not come.
    """

    def __init__(
        self,
        partitions_online: Predicate,
        topic_exists_in_metadata: Predicate,
        partitions_refused: Callable[[str, Collection[int]], str | None] | None = None,
    ) -> None:
        self._partitions_online = partitions_online
        self._topic_exists_in_metadata = topic_exists_in_metadata
        self._partitions_refused = partitions_refused
        self._metadata_changed = asyncio.Event()
        self._waiters = 0

    @property
    def has_delayed_operations(self) -> bool:
        return self._waiters > 0

    def try_complete(self) -> None:
        """Wake the waiting creates and deletes so they check again (after UpdateMetadata)."""
        event, self._metadata_changed = self._metadata_changed, asyncio.Event()
        event.set()

    async def await_partitions(
        self,
        created: dict[str, Collection[int]],
        results: dict[str, dict[str, Any]],
        timeout_ms: int,
    ) -> None:
        """Wait for the partitions of `created` to come online; REQUEST_TIMED_OUT in
        `results` for the topics still without leaders when the timeout passes, and
        KAFKA_STORAGE_ERROR for those with a partition this broker refused."""
        pending = dict(created)
        refused = self._partitions_refused

        async def all_online() -> bool:
            for topic, partitions in list(pending.items()):
                # refusals first: the metadata shows the leader elected before the
                # controller learns that its replica refused the partition
                reason = refused(topic, partitions) if refused is not None else None
                if reason is not None:
                    del pending[topic]
                    results[topic]["error_code"] = Errors.KAFKA_STORAGE_ERROR
                    results[topic]["error_message"] = (
                        f"Topic '{topic}' was created but not all of its partitions can be "
                        f"served: {reason}. The refused partitions stay offline until the "
                        "broker restarts with room for them, or the topic is deleted."
                    )
                elif await call_predicate(self._partitions_online, topic, partitions):
                    del pending[topic]
            return not pending

        if not await self.wait_until(all_online, timeout_ms):
            for topic in pending:
                results[topic]["error_code"] = Errors.REQUEST_TIMED_OUT
                results[topic]["error_message"] = (
                    f"Timed out after {timeout_ms} ms waiting for the partitions of topic "
                    f"'{topic}' to get leaders; the request was accepted and the partitions "
                    "will come online when the controller has elected their leaders."
                )

    async def await_deletions(
        self, marked: list[str], results: dict[str, dict[str, Any]], timeout_ms: int
    ) -> None:
        """Wait for the topics of `marked` to be gone; REQUEST_TIMED_OUT in `results` for
        those still known when the timeout passes."""
        pending = set(marked)

        async def all_gone() -> bool:
            for name in list(pending):
                if not await call_predicate(self._topic_exists_in_metadata, name):
                    pending.discard(name)
            return not pending

        if not await self.wait_until(all_gone, timeout_ms):
            for name in pending:
                results[name]["error_code"] = Errors.REQUEST_TIMED_OUT
                results[name]["error_message"] = (
                    f"Timed out after {timeout_ms} ms waiting for topic '{name}' to be deleted; "
                    "it is marked for deletion and the controller will delete it."
                )

    async def wait_until(self, done: Callable[[], Awaitable[bool]], timeout_ms: int) -> bool:
        """Wait until `done()` is true (checked on every metadata change and every 100 ms)
        or `timeout_ms` passed; returns the last answer of `done()`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        self._waiters += 1
        try:
            while True:
                event = self._metadata_changed
                if await done():
                    return True
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                try:
                    await asyncio.wait_for(event.wait(), min(remaining, _POLL_S))
                except TimeoutError:
                    pass
        finally:
            self._waiters -= 1
