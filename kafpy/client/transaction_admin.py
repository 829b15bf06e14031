"""TransactionAdmin: transactions and their producers, as Kafka's Admin sees them (KIP-664).

After the transaction half of Kafka 3.0's `KafkaAdminClient`: listTransactions
(ListTransactions on every broker), describeTransactions (FindCoordinator key_type 1, then
DescribeTransactions on the coordinator), describeProducers (DescribeProducers on the
broker holding the partitions) and abortTransaction (an ABORT marker written with
WriteTxnMarkers by the partition's leader, as a coordinator writes it). The three APIs are Kafka 3.0's: kafpy's brokers serve them
beyond 2.8 for `kafpy transactions`, which prints what this service returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.client.find_coordinator import (
    COORDINATOR_RETRIABLE,
    CoordinatorType,
    send_to_coordinator,
)
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaConnectionError, KafkaError, RequestTimedOutError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors


class TransactionAdminError(Exception):
    """A transaction operation that failed; the message is the sentence to show
    ("Failed to list transactions: ...")."""


@dataclass(frozen=True)
class TransactionListing:
    """A transactional id as ListTransactions names it, with the broker coordinating it."""

    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    """A transaction's state as its coordinator describes it (DescribeTransactions);
    `transaction_start_time_ms` is -1 while no transaction is open."""

    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    topic_partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    """An active producer of a partition (DescribeProducers); `current_txn_start_offset`
    is -1 unless it has a transaction open on the partition."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_timestamp: int
    current_txn_start_offset: int
    last_sequence: int = -1


@dataclass(frozen=True)
class AbortTransactionSpec:
    """The open transaction of one partition to abort (Kafka's AbortTransactionSpec)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (
            f"AbortTransactionSpec(topicPartition={self.topic_partition}, "
            f"producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
            f"coordinatorEpoch={self.coordinator_epoch})"
        )


def _message(code: int, message: str | None = None) -> str:
    return str(error_for_code(code, message))


class TransactionAdmin:
    """Transaction operations on a KafkaClient; failures raise TransactionAdminError naming
    what failed, except a connection lost or a request timed out (KafkaConnectionError,
    RequestTimedOutError), which pass through.

    `timeout_ms` bounds the finding of a coordinator that is moving or loading."""

    def __init__(self, client: KafkaClient, *, timeout_ms: int = 5000) -> None:
        self.client = client
        self.timeout_ms = timeout_ms

    async def list_transactions(self, producer_ids: Sequence[int] = ()) -> list[TransactionListing]:
        """Every transactional id the brokers coordinate (only those of `producer_ids` when
        some are given), broker by broker in id order."""
        await self.client.refresh_metadata([])
        listings: list[TransactionListing] = []
        body = {"state_filters": [], "producer_id_filters": list(producer_ids)}
        for node in sorted(self.client.cluster.brokers):
            r = await self.client.send_to_node(node, ApiKey.LIST_TRANSACTIONS, body)
            if r["error_code"] != Errors.NONE:
                raise TransactionAdminError(
                    f"Failed to list transactions: {_message(r['error_code'])}"
                )
            listings.extend(
                TransactionListing(
                    s["transactional_id"], node, s["producer_id"], s["transaction_state"]
                )
                for s in r["transaction_states"]
            )
        return listings

    async def describe_transaction(
        self, transactional_id: str, *, coordinator: int | None = None
    ) -> TransactionDescription:
        """DescribeTransactions on `transactional_id`'s coordinator, found within
        `timeout_ms` (or on broker `coordinator` when it is given)."""
        failed = f"Failed to describe transaction state of transactional-id `{transactional_id}`"
        body = {"transactional_ids": [transactional_id]}
        if coordinator is not None:
            node = coordinator
            r = await self.client.send_to_node(node, ApiKey.DESCRIBE_TRANSACTIONS, body)
        else:
            try:
                node, r = await send_to_coordinator(
                    self.client, transactional_id, ApiKey.DESCRIBE_TRANSACTIONS, body,
                    CoordinatorType.TRANSACTION, timeout_ms=self.timeout_ms, context="",
                )  # fmt: skip
            except (KafkaConnectionError, RequestTimedOutError):
                raise
            except KafkaError as e:
                if e.code in COORDINATOR_RETRIABLE:
                    raise TransactionAdminError(
                        f"{failed}: the transaction coordinator is not available; check that "
                        "the brokers are up"
                    ) from None
                raise TransactionAdminError(f"{failed}: {e}") from None
        state: dict[str, Any] = r["transaction_states"][0]
        if state["error_code"] != Errors.NONE:
            raise TransactionAdminError(f"{failed}: {_message(state['error_code'])}")
        return TransactionDescription(
            node, transactional_id, state["producer_id"], state["producer_epoch"],
            state["transaction_state"], state["transaction_timeout_ms"],
            state["transaction_start_time_ms"],
            tuple(TopicPartition(t["topic"], p) for t in state["topics"] for p in t["partitions"]),
        )  # fmt: skip

    async def describe_producers(
        self, broker_id: int, partitions: Mapping[str, Iterable[int]]
    ) -> list[ProducerState]:
        """The active producers of `partitions` (topic -> partition indexes) on broker
        `broker_id`, partition by partition in the order the broker answers."""
        r = await self.client.send_to_node(broker_id, ApiKey.DESCRIBE_PRODUCERS, {
            "topics": [{"name": t, "partition_indexes": list(ps)} for t, ps in partitions.items()]})  # fmt: skip
        found: list[ProducerState] = []
        for t in r["topics"]:
            for p in t["partitions"]:
                if p["error_code"] != Errors.NONE:
                    raise TransactionAdminError(
                        f"Failed to describe producers of {t['name']}-{p['partition_index']}: "
                        f"{_message(p['error_code'], p['error_message'])}"
                    )
                tp = TopicPartition(t["name"], p["partition_index"])
                found.extend(
                    ProducerState(
                        tp,
                        s["producer_id"],
                        s["producer_epoch"],
                        s["coordinator_epoch"],
                        s["last_timestamp"],
                        s["current_txn_start_offset"],
                        s["last_sequence"],
                    )  # fmt: skip
                    for s in p["active_producers"]
                )
        return found

    async def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """Write an ABORT marker for `spec`'s transaction on its partition (WriteTxnMarkers to
        the leader, ClusterAction needed), as Kafka's Admin.abortTransaction."""
        tp = spec.topic_partition
        failed = f"Failed to abort transaction {spec}"
        try:
            leader = await self.client.leader_for(tp)
        except KafkaError as e:
            raise TransactionAdminError(f"{failed}: {e}") from None
        r = await self.client.send_to_node(leader, ApiKey.WRITE_TXN_MARKERS, {"markers": [{
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch,
            "transaction_result": False, "coordinator_epoch": max(spec.coordinator_epoch, 0),
            "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}]}]})  # fmt: skip
        codes = [
            p["error_code"] for m in r["markers"] for t in m["topics"] for p in t["partitions"]
        ]
        if len(codes) != 1:
            raise TransactionAdminError(
                f"{failed}: the WriteTxnMarkers response names {len(codes)} partitions, not 1"
            )
        if codes[0] != Errors.NONE:
            raise TransactionAdminError(f"{failed}: {_message(codes[0])}")
