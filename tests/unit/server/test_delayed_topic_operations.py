"""DelayedTopicOperations on its own: creates wait for leaders and deletes for the topic to
be gone, woken by metadata changes; what is missing at the timeout is REQUEST_TIMED_OUT."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

from kafpy.protocol.errors import Errors
from kafpy.server.delayed_topic_operations import DelayedTopicOperations


class Metadata:
    def __init__(self) -> None:
        self.online: dict[str, set[int]] = {}

    async def partitions_online(self, topic: str, partitions: Collection[int]) -> bool:
        return set(partitions) <= self.online.get(topic, set())

    def contains(self, topic: str) -> bool:
        return topic in self.online


def results(*names: str) -> dict[str, dict[str, Any]]:
    return {n: {"name": n, "error_code": Errors.NONE, "error_message": None} for n in names}


def test_a_create_completes_when_a_metadata_change_shows_the_leaders() -> None:
    async def scenario() -> None:
        metadata = Metadata()
        delayed = DelayedTopicOperations(metadata.partitions_online, metadata.contains)
        answers = results("t")
        wait = asyncio.ensure_future(delayed.await_partitions({"t": [0, 1]}, answers, 60_000))
        while not delayed.has_delayed_operations:
            await asyncio.sleep(0)
        metadata.online["t"] = {0, 1}
        delayed.try_complete()
        await wait
        assert answers["t"]["error_code"] == Errors.NONE
        assert not delayed.has_delayed_operations

    asyncio.run(scenario())


def test_what_is_missing_at_the_timeout_is_a_timeout() -> None:
    async def scenario() -> None:
        metadata = Metadata()
        metadata.online = {"ready": {0}, "gone-not": {0}}
        delayed = DelayedTopicOperations(metadata.partitions_online, metadata.contains)
        created = results("ready", "slow")
        await delayed.await_partitions({"ready": [0], "slow": [0]}, created, 1)
        assert created["ready"]["error_code"] == Errors.NONE
        assert created["slow"]["error_code"] == Errors.REQUEST_TIMED_OUT
        assert "partitions of topic 'slow' to get leaders" in created["slow"]["error_message"]
        deleted = results("gone", "gone-not")
        await delayed.await_deletions(["gone", "gone-not"], deleted, 1)
        assert deleted["gone"]["error_code"] == Errors.NONE
        assert deleted["gone-not"]["error_code"] == Errors.REQUEST_TIMED_OUT
        assert "topic 'gone-not' to be deleted" in deleted["gone-not"]["error_message"]

    asyncio.run(scenario())


def test_a_partition_this_broker_refused_ends_the_wait_with_the_reason() -> None:
    async def scenario() -> None:
        metadata = Metadata()
        metadata.online = {"fine": {0}}
        reason = "Cannot create the log of full-1: too many open files (RLIMIT_NOFILE 64)"
        refused = {("full", 1): reason}

        def partitions_refused(topic: str, partitions: Collection[int]) -> str | None:
            return next((refused[(topic, p)] for p in partitions if (topic, p) in refused), None)

        delayed = DelayedTopicOperations(
            metadata.partitions_online, metadata.contains, partitions_refused
        )
        created = results("fine", "full")
        await delayed.await_partitions({"fine": [0], "full": [0, 1]}, created, 5_000)
        assert created["fine"]["error_code"] == Errors.NONE
        assert created["full"]["error_code"] == Errors.KAFKA_STORAGE_ERROR
        assert reason in created["full"]["error_message"]

    asyncio.run(scenario())
