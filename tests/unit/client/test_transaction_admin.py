"""TransactionAdmin against FakeBrokers: listings from every broker, a transaction described
by its coordinator, a partition's active producers, a transaction aborted by a marker on
its partition's leader, and failures as sentences naming what failed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafpy.client.transaction_admin import (
    AbortTransactionSpec,
    ProducerState,
    TransactionAdmin,
    TransactionAdminError,
    TransactionDescription,
    TransactionListing,
)
from kafpy.common.errors import Errors
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from tests.unit.client.fake_broker import TwoBrokers, metadata_body


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


class Brokers(TwoBrokers):
    """Brokers 0 and 1 (FindCoordinator names broker 1) and a TransactionAdmin on them."""

    async def __aenter__(self) -> TransactionAdmin:
        return TransactionAdmin(await self.start(), timeout_ms=200)


def listed(*states: tuple[str, int, str], code: int = 0) -> dict[str, Any]:
    return {"error_code": code, "unknown_state_filters": [], "transaction_states": [
        {"transactional_id": t, "producer_id": p, "transaction_state": s} for t, p, s in states]}  # fmt: skip


def described(tid: str, code: int = 0, start_ms: int = 1000) -> dict[str, Any]:
    return {"transaction_states": [{
        "error_code": code, "transactional_id": tid, "transaction_state": "Ongoing",
        "transaction_timeout_ms": 60000, "transaction_start_time_ms": start_ms,
        "producer_id": 7, "producer_epoch": 2,
        "topics": [{"topic": "t", "partitions": [0, 1]}]}]}  # fmt: skip


def test_list_transactions_asks_every_broker_with_the_producer_filter() -> None:
    async def go() -> None:
        brokers = Brokers()
        async with brokers as admin:
            brokers.b0.handlers[ApiKey.LIST_TRANSACTIONS] = lambda h, b: listed(("a", 1, "Ongoing"))
            brokers.b1.handlers[ApiKey.LIST_TRANSACTIONS] = lambda h, b: listed(("b", 2, "Empty"))
            assert await admin.list_transactions([1, 2]) == [
                TransactionListing("a", 0, 1, "Ongoing"),
                TransactionListing("b", 1, 2, "Empty"),
            ]
            for b in (brokers.b0, brokers.b1):
                (request,) = b.requests_of(ApiKey.LIST_TRANSACTIONS)
                assert request.body["producer_id_filters"] == [1, 2]

    run(go())


def test_a_failed_listing_names_the_error() -> None:
    async def go() -> None:
        brokers = Brokers()
        async with brokers as admin:
            brokers.b0.handlers[ApiKey.LIST_TRANSACTIONS] = lambda h, b: listed(
                code=Errors.COORDINATOR_LOAD_IN_PROGRESS
            )
            with pytest.raises(TransactionAdminError, match="^Failed to list transactions: "):
                await admin.list_transactions()

    run(go())


def test_describe_transaction_asks_the_coordinator() -> None:
    async def go() -> None:
        brokers = Brokers()
        async with brokers as admin:
            brokers.b1.handlers[ApiKey.DESCRIBE_TRANSACTIONS] = lambda h, b: described("x")
            assert await admin.describe_transaction("x") == TransactionDescription(
                1, "x", 7, 2, "Ongoing", 60000, 1000,
                (TopicPartition("t", 0), TopicPartition("t", 1)),
            )  # fmt: skip
            assert brokers.b0.requests_of(ApiKey.DESCRIBE_TRANSACTIONS) == []
            brokers.b0.handlers[ApiKey.DESCRIBE_TRANSACTIONS] = lambda h, b: described("y")
            by_node = await admin.describe_transaction("y", coordinator=0)
            assert (by_node.coordinator, by_node.transactional_id) == (0, "y")

    run(go())


def test_describe_failures_name_the_transactional_id() -> None:
    async def go() -> None:
        brokers = Brokers()
        async with brokers as admin:
            brokers.b1.handlers[ApiKey.DESCRIBE_TRANSACTIONS] = lambda h, b: described(
                "x", code=Errors.TRANSACTIONAL_ID_NOT_FOUND
            )
            failed = "Failed to describe transaction state of transactional-id `x`: "
            with pytest.raises(TransactionAdminError, match=f"^{failed}"):
                await admin.describe_transaction("x")
            brokers.find_error = Errors.COORDINATOR_NOT_AVAILABLE
            with pytest.raises(TransactionAdminError) as e:
                await admin.describe_transaction("x")
            assert str(e.value) == (
                f"{failed}the transaction coordinator is not available; check that the "
                "brokers are up"
            )

    run(go())


def test_describe_producers_of_a_brokers_partitions() -> None:
    producer = {"producer_id": 5, "producer_epoch": 0, "last_sequence": 7,
                "last_timestamp": 99, "coordinator_epoch": -1, "current_txn_start_offset": 3}  # fmt: skip

    def answer(code: int) -> Any:
        return lambda h, b: {"topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "error_message": None,
             "active_producers": [producer]},
            {"partition_index": 1, "error_code": code, "error_message": None,
             "active_producers": []}]}]}  # fmt: skip

    async def go() -> None:
        brokers = Brokers()
        async with brokers as admin:
            brokers.b1.handlers[ApiKey.DESCRIBE_PRODUCERS] = answer(0)
            assert await admin.describe_producers(1, {"t": [0, 1]}) == [
                ProducerState(TopicPartition("t", 0), 5, 0, -1, 99, 3, last_sequence=7)
            ]
            (request,) = brokers.b1.requests_of(ApiKey.DESCRIBE_PRODUCERS)
            assert request.body["topics"] == [{"name": "t", "partition_indexes": [0, 1]}]
            brokers.b1.handlers[ApiKey.DESCRIBE_PRODUCERS] = answer(Errors.NOT_LEADER_OR_FOLLOWER)
            with pytest.raises(
                TransactionAdminError, match="^Failed to describe producers of t-1: "
            ):
                await admin.describe_producers(1, {"t": [0, 1]})

    run(go())


def test_abort_transaction_writes_an_abort_marker_on_the_leader() -> None:
    spec = AbortTransactionSpec(
        TopicPartition("t", 0), producer_id=5, producer_epoch=2, coordinator_epoch=-1
    )

    def markers(code: int) -> Any:
        return lambda h, b: {"markers": [{"producer_id": 5, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "error_code": code}]}]}]}  # fmt: skip

    async def go() -> None:
        brokers = Brokers()
        async with brokers as admin:
            for b in (brokers.b0, brokers.b1):
                b.handlers[ApiKey.METADATA] = lambda h, body: metadata_body(
                    [brokers.b0, brokers.b1], topics={"t": {0: 1}}
                )
            brokers.b1.handlers[ApiKey.WRITE_TXN_MARKERS] = markers(0)
            await admin.abort_transaction(spec)
            (request,) = brokers.b1.requests_of(ApiKey.WRITE_TXN_MARKERS)
            assert request.body["markers"] == [{
                "producer_id": 5, "producer_epoch": 2, "transaction_result": False,
                "coordinator_epoch": 0, "topics": [{"name": "t", "partition_indexes": [0]}]}]  # fmt: skip
            brokers.b1.handlers[ApiKey.WRITE_TXN_MARKERS] = markers(
                Errors.CLUSTER_AUTHORIZATION_FAILED
            )
            with pytest.raises(TransactionAdminError) as e:
                await admin.abort_transaction(spec)
            assert str(e.value).startswith(
                "Failed to abort transaction AbortTransactionSpec(topicPartition=t-0, producerId=5, "
                "producerEpoch=2, coordinatorEpoch=-1): "
            )

    run(go())
