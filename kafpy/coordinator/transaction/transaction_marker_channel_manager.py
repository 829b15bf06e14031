"""TransactionMarkerChannelManager: sends the COMMIT/ABORT markers of ending transactions to
the leaders of their partitions, then writes the Complete state (Kafka's
TransactionMarkerChannelManager).

Markers go out as WriteTxnMarkers requests through kafpy's client, one queue, sender task
and connection per destination broker (this broker included, over the network, as Kafka
does); the sender puts every marker queued for a broker into one request. A partition
whose leader is unknown waits and is routed again; a partition whose leader moved
(NOT_LEADER_OR_FOLLOWER and the other retriable errors) is routed again to the new leader
after a backoff; a partition whose topic is gone is skipped. Once every partition of a
transaction has its marker, the transaction's CompleteCommit/CompleteAbort is written to
__transaction_state (retried while the coordinator is unavailable). A transaction whose
coordinator epoch is no longer this broker's (the partition moved) is dropped: the new
coordinator resumes it from the log.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafpy.client.client_security import ClientSecurity
from kafpy.common.errors import KafkaError
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_config import DEFAULT_REQUEST_TIMEOUT_MS
from kafpy.coordinator.transaction.transaction_metadata import (
    TransactionMetadata,
    TxnTransitMetadata,
)
from kafpy.coordinator.transaction.transaction_state_manager import TransactionStateManager
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

WRITE_TXN_MARKERS_MAX_VERSION = 1
RETRY_BACKOFF_S = 0.1

# Partition errors after which the marker is routed again (the leader may have moved).
_RETRY_ERRORS = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR,
    Errors.LEADER_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS,
})  # fmt: skip
# Partition errors saying this coordinator is stale: stop sending, the new one takes over.
_ABORT_SENDING_ERRORS = frozenset(
    {Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED}
)


class Destination(enum.Enum):
    """Where a marker cannot go yet."""

    NO_LEADER = "no leader"  # the partition exists but has no live leader now
    GONE = "gone"  # the topic or partition no longer exists


@dataclass(frozen=True)
class LeaderEndpoint:
    broker_id: int
    host: str
    port: int


# a partition -> its leader's inter-broker endpoint, or why there is none
LeaderLookup = Callable[[TopicPartition], LeaderEndpoint | Destination]


class MarkerChannel(Protocol):
    """What the manager needs of a connection to a broker (BrokerConnection offers it)."""

    @property
    def connected(self) -> bool: ...

    async def connect(self) -> None: ...

    def pick_version(self, api_key: int) -> int: ...

    async def send(
        self, api_key: int, body: dict[str, Any], version: int | None = None
    ) -> dict[str, Any]: ...

    def close(self) -> object: ...


ChannelFactory = Callable[[int, str, int], MarkerChannel]


def marker_connection_factory(
    broker_id: int,
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    security: ClientSecurity | None = None,
) -> ChannelFactory:
    """The production ChannelFactory: a kafpy BrokerConnection per destination broker,
    secured as the inter-broker listener asks (`security`)."""

    def factory(node_id: int, host: str, port: int) -> MarkerChannel:
        from kafpy.client.connection import BrokerConnection

        return BrokerConnection(
            host, port, client_id=f"broker-{broker_id}-txn-marker-sender",
            request_timeout_ms=request_timeout_ms, node_id=node_id, security=security,
        )  # fmt: skip

    return factory


@dataclass
class _PendingMarker:
    """One transaction's markers for some partitions on one broker, waiting for an answer."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: list[TopicPartition]
    result: asyncio.Future[dict[TopicPartition, int]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass
class _BrokerQueue:
    endpoint: LeaderEndpoint
    channel: MarkerChannel
    queue: asyncio.Queue[_PendingMarker] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None


class TransactionMarkerChannelManager:
    """Sends transaction markers to partition leaders and completes the transactions.

    Parameters: `broker_id`; `state_manager` (ownership checks and the Complete write);
    `leader_for` (a partition's leader endpoint on the inter-broker listener, from the
    broker's metadata cache); `channel_factory` (BrokerConnection by default; tests may
    record); `retry_backoff_s`.
    """

    def __init__(
        self,
        broker_id: int,
        state_manager: TransactionStateManager,
        leader_for: LeaderLookup,
        channel_factory: ChannelFactory | None = None,
        retry_backoff_s: float = RETRY_BACKOFF_S,
    ) -> None:
        self.broker_id = broker_id
        self.state_manager = state_manager
        self.leader_for = leader_for
        self.channel_factory = channel_factory or marker_connection_factory(broker_id)
        self.retry_backoff_s = retry_backoff_s
        self._brokers: dict[int, _BrokerQueue] = {}
        # transactional id -> the task sending its markers and completing it
        self._transactions: dict[str, asyncio.Task[None]] = {}
        self.log = component_logger(
            "kafpy.coordinator.transaction.TransactionMarkerChannelManager",
            f"Transaction Marker Channel Manager {broker_id}",
        )

    def pending_transactional_ids(self) -> list[str]:
        return list(self._transactions)

    async def wait_for_completion(self, tid: str, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the markers of `tid`'s transaction to be written and
        its Complete state logged; True if nothing is pending for it any more."""
        task = self._transactions.get(tid)
        if task is None:
            return True
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        return bool(done)

    async def shutdown(self) -> None:
        tasks = [*self._transactions.values(), *(b.task for b in self._brokers.values() if b.task)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for b in self._brokers.values():
            closing = b.channel.close()
            if inspect.isawaitable(closing):
                await closing
        self._brokers.clear()
        self._transactions.clear()

    # -- the coordinator's entry points -----------------------------------------------------

    def add_txn_markers_to_send(
        self,
        coordinator_epoch: int,
        commit: bool,
        metadata: TransactionMetadata,
        transit: TxnTransitMetadata,
    ) -> None:
        """Send the markers of a transaction written as PrepareCommit/PrepareAbort, then write
        `transit` (its Complete state)."""
        tid = metadata.transactional_id
        partitions = sorted(metadata.topic_partitions)
        task = asyncio.ensure_future(
            self._complete(tid, coordinator_epoch, commit, metadata, transit, partitions)
        )
        self._transactions[tid] = task
        task.add_done_callback(lambda t: self._forget(tid, t))

    def remove_markers_for_txn_topic_partition(self, partition: int) -> None:
        """Stop sending for the transactions of a __transaction_state partition this broker
        no longer leads (the new coordinator resumes them)."""
        for tid, task in list(self._transactions.items()):
            if self.state_manager.partition_for(tid) == partition:
                task.cancel()
                del self._transactions[tid]

    def _forget(self, tid: str, task: asyncio.Task[None]) -> None:
        if self._transactions.get(tid) is task:
            del self._transactions[tid]
        if not task.cancelled() and task.exception() is not None:
            self.log.error("Sending the markers of %s failed", tid, exc_info=task.exception())

    # -- one transaction --------------------------------------------------------------------

    def _still_owned(self, tid: str, coordinator_epoch: int) -> bool:
        error, current = self.state_manager.get_transaction_state(tid)
        return (
            error == Errors.NONE
            and current is not None
            and current.coordinator_epoch == coordinator_epoch
        )

    async def _complete(
        self,
        tid: str,
        coordinator_epoch: int,
        commit: bool,
        metadata: TransactionMetadata,
        transit: TxnTransitMetadata,
        partitions: list[TopicPartition],
    ) -> None:
        result = "COMMIT" if commit else "ABORT"
        remaining = set(partitions)
        while remaining:
            if not self._still_owned(tid, coordinator_epoch):
                self.log.info(
                    "Stopped sending %s markers of %s: this broker no longer coordinates it at epoch %d",
                    result, tid, coordinator_epoch,
                )  # fmt: skip
                return
            by_broker: dict[LeaderEndpoint, list[TopicPartition]] = {}
            for tp in sorted(remaining):
                leader = self.leader_for(tp)
                if leader is Destination.GONE:
                    self.log.info(
                        "Skipping the %s marker of %s for %s: the partition no longer exists",
                        result, tid, tp,
                    )  # fmt: skip
                    remaining.discard(tp)
                elif isinstance(leader, LeaderEndpoint):
                    by_broker.setdefault(leader, []).append(tp)
            pending = [
                self._enqueue(endpoint, _PendingMarker(
                    metadata.producer_id, metadata.producer_epoch, commit, coordinator_epoch, tps,
                ))
                for endpoint, tps in by_broker.items()
            ]  # fmt: skip
            abort_sending = False
            for marker in pending:
                for tp, code in (await marker.result).items():
                    if code == Errors.NONE:
                        remaining.discard(tp)
                    elif code in _ABORT_SENDING_ERRORS:
                        abort_sending = True
                        self.log.info(
                            "Stopped sending %s markers of %s: %s answered %s for %s",
                            result, tid, "the leader", Errors(code).name, tp,
                        )  # fmt: skip
                    elif code == Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT:
                        # a log of format v0/v1: the producer's data never reached it
                        self.log.info(
                            "Sending %s's transaction marker from partition %s has failed with "
                            " %s. This partition will be removed from the set of partitions "
                            "waiting for completion", tid, tp, Errors(code).name,
                        )  # fmt: skip
                        remaining.discard(tp)
                    elif code not in _RETRY_ERRORS:
                        self.log.error(
                            "Dropping the %s marker of %s for %s after error %s",
                            result, tid, tp, Errors(code).name,
                        )  # fmt: skip
                        remaining.discard(tp)
            if abort_sending:
                return
            if remaining:
                await asyncio.sleep(self.retry_backoff_s)
        self.log.debug("Sent all %s markers of %s; completing it", result, tid)
        while True:
            error = await self.state_manager.append_transaction_to_log(
                tid, coordinator_epoch, transit, retry_on_coordinator_not_available=True
            )
            if error == Errors.NONE:
                self.log.debug("Completed %s of %s", result, tid)
                return
            if error != Errors.COORDINATOR_NOT_AVAILABLE:
                self.log.info(
                    "Writing %s's completed state failed with %s; the new coordinator completes it",
                    tid, Errors(error).name,
                )  # fmt: skip
                return
            await asyncio.sleep(self.retry_backoff_s)

    # -- per-broker senders -----------------------------------------------------------------

    def _enqueue(self, endpoint: LeaderEndpoint, marker: _PendingMarker) -> _PendingMarker:
        broker = self._brokers.get(endpoint.broker_id)
        if broker is not None and broker.endpoint != endpoint:
            self._stop_broker(endpoint.broker_id)
            broker = None
        if broker is None:
            channel = self.channel_factory(endpoint.broker_id, endpoint.host, endpoint.port)
            broker = _BrokerQueue(endpoint, channel)
            broker.task = asyncio.ensure_future(self._send_loop(broker))
            self._brokers[endpoint.broker_id] = broker
        broker.queue.put_nowait(marker)
        return marker

    def _stop_broker(self, broker_id: int) -> None:
        broker = self._brokers.pop(broker_id)
        if broker.task is not None:
            broker.task.cancel()
        broker.channel.close()
        while not broker.queue.empty():
            marker = broker.queue.get_nowait()
            _answer(marker, Errors.NOT_LEADER_OR_FOLLOWER)

    async def _send_loop(self, broker: _BrokerQueue) -> None:
        while True:
            batch = [await broker.queue.get()]
            while not broker.queue.empty():
                batch.append(broker.queue.get_nowait())
            try:
                if not broker.channel.connected:
                    await broker.channel.connect()
                version = min(
                    broker.channel.pick_version(ApiKey.WRITE_TXN_MARKERS),
                    WRITE_TXN_MARKERS_MAX_VERSION,
                )
                response = await broker.channel.send(
                    ApiKey.WRITE_TXN_MARKERS, _request(batch), version
                )
            except asyncio.CancelledError:
                for marker in batch:
                    _answer(marker, Errors.NOT_LEADER_OR_FOLLOWER)
                raise
            except KafkaError as e:
                self.log.warning(
                    "Sending WriteTxnMarkers to broker %d failed: %s; retrying",
                    broker.endpoint.broker_id, e,
                )  # fmt: skip
                for marker in batch:
                    _answer(marker, Errors.NOT_LEADER_OR_FOLLOWER)
                continue
            _answer_from_response(batch, response)


def _request(batch: Iterable[_PendingMarker]) -> dict[str, Any]:
    markers = []
    for m in batch:
        by_topic: dict[str, list[int]] = {}
        for tp in m.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        markers.append({
            "producer_id": m.producer_id, "producer_epoch": m.producer_epoch,
            "transaction_result": m.commit, "coordinator_epoch": m.coordinator_epoch,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
        })  # fmt: skip
    return {"markers": markers}


def _answer(marker: _PendingMarker, code: int) -> None:
    if not marker.result.done():
        marker.result.set_result(dict.fromkeys(marker.partitions, code))


def _answer_from_response(batch: list[_PendingMarker], response: dict[str, Any]) -> None:
    """Kafka answers one entry per producer id, in no set order; a partition left
    unanswered is retried."""
    by_producer = {e["producer_id"]: e for e in response.get("markers") or []}
    for marker in batch:
        codes = dict.fromkeys(marker.partitions, int(Errors.REQUEST_TIMED_OUT))
        entry = by_producer.get(marker.producer_id)
        for t in entry["topics"] if entry is not None else ():
            for p in t["partitions"]:
                tp = TopicPartition(t["name"], p["partition_index"])
                if tp in codes:
                    codes[tp] = p["error_code"]
        if not marker.result.done():
            marker.result.set_result(codes)
