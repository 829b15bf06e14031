"""find_coordinator and send_to_coordinator against a real embedded broker whose answers
the fault injector turns into COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR or GROUP_AUTHORIZATION_FAILED."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kafpy.client.find_coordinator import (
    CoordinatorType,
    coordinator_moved,
    find_coordinator,
    send_to_coordinator,
)
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import Errors, KafkaError
from kafpy.protocol.api_keys import ApiKey
from kafpy.testing.faults import FaultInjector

T = TypeVar("T")


def run(bootstrap: str, use: Callable[[KafkaClient], Awaitable[T]], **options: Any) -> T:
    async def main() -> T:
        async with KafkaClient(bootstrap, **options) as client:
            return await asyncio.wait_for(use(client), 30)

    return asyncio.run(main())


def _group() -> str:
    return f"fc-{uuid.uuid4().hex[:8]}"


def test_a_loading_coordinator_is_asked_again_until_it_answers(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    kafka_faults.fail_next("FindCoordinator", "COORDINATOR_LOAD_IN_PROGRESS", count=2)
    kafka_faults.fail_next("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=1)
    node = run(kafka_bootstrap, lambda c: find_coordinator(c, _group()), retry_backoff_ms=10)
    assert node == 0
    assert kafka_faults.fired("FindCoordinator") == 3


def test_a_transactional_id_has_a_coordinator_too(kafka_bootstrap: str) -> None:
    node = run(
        kafka_bootstrap,
        lambda c: find_coordinator(c, "tx-" + _group(), CoordinatorType.TRANSACTION),
    )
    assert node == 0


def test_an_unavailable_coordinator_fails_at_the_deadline_with_kafkas_error(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    kafka_faults.fail_next("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=1000)
    group = _group()
    with pytest.raises(KafkaError) as raised:
        run(
            kafka_bootstrap,
            lambda c: find_coordinator(c, group, timeout_ms=300),
            retry_backoff_ms=50,
        )
    assert raised.value.code == Errors.COORDINATOR_NOT_AVAILABLE
    assert (
        str(raised.value)
        == f"Finding the coordinator of {group}: The coordinator is not available."
    )
    # it retried until the deadline (how many tries fit depends on the machine's load)
    assert kafka_faults.fired("FindCoordinator") >= 2


def test_an_error_that_is_not_the_coordinators_moving_is_raised_at_once(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    kafka_faults.fail_next("FindCoordinator", "GROUP_AUTHORIZATION_FAILED", count=5)
    with pytest.raises(KafkaError, match="^Finding group g: Group authorization failed.$") as e:
        run(kafka_bootstrap, lambda c: find_coordinator(c, "g", context="Finding group g"))
    assert e.value.code == Errors.GROUP_AUTHORIZATION_FAILED
    assert kafka_faults.fired("FindCoordinator") == 1


def _commit_body(group: str) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": []}


def test_a_request_answered_not_coordinator_is_sent_to_the_coordinator_found_anew(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    kafka_faults.fail_next("OffsetCommit", "NOT_COORDINATOR", count=2)
    group = _group()
    body = _commit_body(group) | {
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]
    }
    node, response = run(
        kafka_bootstrap,
        lambda c: send_to_coordinator(c, group, ApiKey.OFFSET_COMMIT, body),
        retry_backoff_ms=10,
    )
    assert node == 0 and not coordinator_moved(response)
    assert kafka_faults.fired("OffsetCommit") == 2
    assert kafka_faults.fired("FindCoordinator") == 0  # counts faults fired, none asked for


def test_send_to_coordinator_returns_the_last_answer_at_the_deadline(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    kafka_faults.fail_next("OffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS", count=1000)
    group = _group()
    body = _commit_body(group) | {
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]
    }
    _, response = run(
        kafka_bootstrap,
        lambda c: send_to_coordinator(c, group, ApiKey.OFFSET_COMMIT, body, timeout_ms=200),
        retry_backoff_ms=50,
    )
    assert coordinator_moved(response)
    assert 2 <= kafka_faults.fired("OffsetCommit") <= 6
