"""TransactionCoordinator: answers the transactional producer's requests (Kafka's
TransactionCoordinator): InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn (through add_partitions), EndTxn; aborts transactions past their timeout
(`transaction-abort`), expires idle transactional ids (`transactionalId-expiration`), and
takes over or gives up __transaction_state partitions as leadership moves.

Errors are returned as Kafka 2.8 returns them, PRODUCER_FENCED included; the API layer
turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for request versions older than the
ones that know it, as KafkaApis does.

KIP-939 (two-phase commit), InitProducerId v6: `enable_2pc` (allowed only with
`transaction.two.phase.commit.enable`, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) gives
the id the never-timing-out timeout; `keep_prepared_txn` (with `enable_2pc`) keeps an open
two-phase-commit transaction instead of aborting it: the caller gets the next epoch (the
process that prepared it is fenced) and the kept transaction's producer id and epoch, and
commits or aborts it with EndTxn at its new epoch. Without `keep_prepared_txn`, an open
two-phase-commit transaction is aborted as any other (Kafka's forceTerminateTransaction).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from kafpy.common.logger import component_logger
from kafpy.common.scheduler import Scheduler
from kafpy.common.time import Time
from kafpy.common.topic import TRANSACTION_STATE_TOPIC_NAME
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_config import TransactionConfig
from kafpy.coordinator.transaction.transaction_marker_channel_manager import (
    TransactionMarkerChannelManager,
)
from kafpy.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from kafpy.coordinator.transaction.transaction_state_manager import TransactionStateManager
from kafpy.protocol.errors import Errors

S = TransactionState

COMPLETION_WAIT_S = 0.5
"""How long InitProducerId, AddPartitionsToTxn and AddOffsetsToTxn wait for the previous
transaction's markers before answering CONCURRENT_TRANSACTIONS (markers held up by a leader
election take longer; the client then retries as against Kafka)."""


class ProducerIdGenerator(Protocol):
    async def generate_producer_id(self) -> int: ...


@dataclass(frozen=True)
class InitProducerIdResult:
    """InitProducerId's answer; `ongoing_txn_*` name a transaction kept by keepPreparedTxn."""

    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    ongoing_txn_producer_id: int = NO_PRODUCER_ID
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    """The transaction coordinator of one broker.

    Parameters: `broker_id`, `config` (TransactionConfig), `state_manager`,
    `marker_manager` (TransactionMarkerChannelManager), `producer_ids` (the broker's
    ProducerIdManager), `time`, `scheduler` (runs the periodic tasks; None in tests that
    call them directly).
    """

    def __init__(
        self,
        broker_id: int,
        config: TransactionConfig,
        state_manager: TransactionStateManager,
        marker_manager: TransactionMarkerChannelManager,
        producer_ids: ProducerIdGenerator,
        time: Time,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.state_manager = state_manager
        self.marker_manager = marker_manager
        self.producer_ids = producer_ids
        self.time = time
        self.scheduler = scheduler
        self._tasks: list[Any] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.log = component_logger(
            "kafpy.coordinator.transaction.TransactionCoordinator",
            "Transaction Coordinator",
            broker_id,
        )

    # -- lifecycle --------------------------------------------------------------------------

    def startup(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.log.info("Starting up.")
        self._loop = loop or asyncio.get_running_loop()
        if self.scheduler is not None:
            abort = self.config.abort_timed_out_transactions_interval_ms
            expire = self.config.remove_expired_transactional_ids_interval_ms
            self._tasks = [
                self.scheduler.schedule(
                    "transaction-abort", self._on_loop(self.abort_timed_out_transactions), abort, abort
                ),
                self.scheduler.schedule(
                    "transactionalId-expiration",
                    self._on_loop(self.state_manager.remove_expired_transactional_ids),
                    expire, expire,
                ),
            ]  # fmt: skip
        self.log.info("Startup complete.")

    async def shutdown(self) -> None:
        self.log.info("Shutting down.")
        for task in self._tasks:
            task.cancel()
        self.state_manager.shutdown()
        await self.marker_manager.shutdown()
        self.log.info("Shutdown complete.")

    def _on_loop(self, job: Any) -> Any:
        """A scheduler task (the scheduler's own thread) that runs `job` on the broker's loop."""

        def run() -> None:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(job()))

        return run

    # -- leadership -------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return self.state_manager.partition_for(transactional_id)

    def on_election(self, partition: int, coordinator_epoch: int) -> None:
        self.log.info(
            "Elected as the txn coordinator for partition %d at epoch %d",
            partition,
            coordinator_epoch,
        )
        self.marker_manager.remove_markers_for_txn_topic_partition(partition)
        self.state_manager.schedule_load(
            partition, coordinator_epoch, self.marker_manager.add_txn_markers_to_send
        )

    def on_resignation(self, partition: int, coordinator_epoch: int | None = None) -> None:
        self.log.info(
            "Resigned as the txn coordinator for partition %d at epoch %s",
            partition,
            coordinator_epoch,
        )
        self.state_manager.remove_transactions_for_partition(partition, coordinator_epoch)
        self.marker_manager.remove_markers_for_txn_topic_partition(partition)

    # -- InitProducerId ---------------------------------------------------------------------

    async def handle_init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        expected: tuple[int, int] | None = None,
        enable_2pc: bool = False,
        keep_prepared_txn: bool = False,
    ) -> InitProducerIdResult:
        """A producer id and epoch for `transactional_id` (a new one when None). `expected`:
        the producer's current (producer id, epoch) from InitProducerId v3+ (KIP-360).
        `enable_2pc`, `keep_prepared_txn`: KIP-939's flags (InitProducerId v6)."""
        if transactional_id is None:
            if enable_2pc or keep_prepared_txn:
                return InitProducerIdResult(Errors.INVALID_REQUEST)
            return InitProducerIdResult(
                Errors.NONE, await self.producer_ids.generate_producer_id(), 0
            )
        if not transactional_id:
            return InitProducerIdResult(Errors.INVALID_REQUEST)
        if keep_prepared_txn and (not enable_2pc or expected is not None):
            # a kept transaction belongs to a two-phase-commit producer starting afresh
            return InitProducerIdResult(Errors.INVALID_REQUEST)
        if enable_2pc:
            if not self.config.transaction_two_phase_commit_enable:
                self.log.info(
                    "Refusing two-phase commit for transactionalId %s: "
                    "transaction.two.phase.commit.enable is false", transactional_id,
                )  # fmt: skip
                return InitProducerIdResult(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            transaction_timeout_ms = TWO_PHASE_COMMIT_TIMEOUT_MS
        elif not self.state_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            return InitProducerIdResult(Errors.INVALID_TRANSACTION_TIMEOUT)
        await self._await_pending_markers(transactional_id)
        error, entry = self.state_manager.get_transaction_state(transactional_id)
        if error == Errors.NONE and entry is None:
            producer_id = await self.producer_ids.generate_producer_id()
            created = TransactionMetadata(
                transactional_id, producer_id, NO_PRODUCER_EPOCH, transaction_timeout_ms,
                txn_last_update_timestamp=self.time.milliseconds(),
            )  # fmt: skip
            error, entry = self.state_manager.put_transaction_state_if_not_exists(created)
        if error != Errors.NONE or entry is None:
            return InitProducerIdResult(error)
        coordinator_epoch, metadata = entry.coordinator_epoch, entry.transaction_metadata
        if keep_prepared_txn and metadata.state is S.ONGOING:
            return await self._keep_prepared_txn(metadata, coordinator_epoch)
        prepared = await self._prepare_init_producer_id(metadata, transaction_timeout_ms, expected)
        if isinstance(prepared, int):
            return InitProducerIdResult(prepared)
        if prepared.txn_state is S.PREPARE_EPOCH_FENCE:
            # abort the open transaction first; the client retries and gets the next epoch
            error = await self._end_transaction(
                transactional_id,
                prepared.producer_id,
                prepared.producer_epoch,
                False,
                from_client=False,
            )
            if metadata.pending_state is S.PREPARE_EPOCH_FENCE:
                metadata.pending_state = None  # the abort was refused before it started
            return InitProducerIdResult(
                Errors.CONCURRENT_TRANSACTIONS if error == Errors.NONE else error
            )
        error = await self.state_manager.append_transaction_to_log(
            transactional_id, coordinator_epoch, prepared
        )
        if error != Errors.NONE:
            self.log.info(
                "Returning %s error code to client for %s's InitProducerId request",
                Errors(error).name, transactional_id,
            )  # fmt: skip
            return InitProducerIdResult(error)
        self.log.info(
            "Initialized transactionalId %s with producerId %d and producer epoch %d on partition %s-%d",
            transactional_id, prepared.producer_id, prepared.producer_epoch,
            TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id),
        )  # fmt: skip
        return InitProducerIdResult(Errors.NONE, prepared.producer_id, prepared.producer_epoch)

    async def _keep_prepared_txn(
        self, m: TransactionMetadata, coordinator_epoch: int
    ) -> InitProducerIdResult:
        """KIP-939's keepPreparedTxn on an open transaction: the next epoch, the transaction kept."""
        tid = m.transactional_id
        if m.pending_transition_in_progress:
            return InitProducerIdResult(Errors.CONCURRENT_TRANSACTIONS)
        if not m.is_distributed_two_phase_commit_txn:
            self.log.info(
                "Cannot keep the open transaction of %s: it was not begun with two-phase commit "
                "(its timeout is %d ms)", tid, m.txn_timeout_ms,
            )  # fmt: skip
            return InitProducerIdResult(Errors.INVALID_TXN_STATE)
        if m.is_producer_epoch_exhausted:
            self.log.info(
                "Cannot keep the open transaction of %s: producerId %d has no epoch left",
                tid, m.producer_id,
            )  # fmt: skip
            return InitProducerIdResult(Errors.INVALID_TXN_STATE)
        transit = m.prepare_keep_prepared_txn(self.time.milliseconds())
        error = await self.state_manager.append_transaction_to_log(tid, coordinator_epoch, transit)
        if error != Errors.NONE:
            self.log.info(
                "Returning %s error code to client for %s's InitProducerId request",
                Errors(error).name, tid,
            )  # fmt: skip
            return InitProducerIdResult(error)
        self.log.info(
            "Kept the prepared transaction of transactionalId %s (producerId %d, epoch %d); "
            "its new owner has producer epoch %d",
            tid, transit.producer_id, transit.ongoing_txn_producer_epoch, transit.producer_epoch,
        )  # fmt: skip
        return InitProducerIdResult(
            Errors.NONE, transit.producer_id, transit.producer_epoch,
            transit.producer_id, transit.ongoing_txn_producer_epoch,
        )  # fmt: skip

    async def _prepare_init_producer_id(
        self, m: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None
    ) -> TxnTransitMetadata | int:
        if m.pending_transition_in_progress:
            return Errors.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
            m.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == m.producer_id
            or (expected[0] == m.last_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return Errors.PRODUCER_FENCED
        if m.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return Errors.CONCURRENT_TRANSACTIONS
        if m.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            now = self.time.milliseconds()
            if m.is_producer_epoch_exhausted and (
                expected is None or expected[1] == m.producer_epoch
            ):
                new_id = await self.producer_ids.generate_producer_id()
                if m.pending_transition_in_progress:  # another request got in while we waited
                    return Errors.CONCURRENT_TRANSACTIONS
                return m.prepare_producer_id_rotation(new_id, timeout_ms, now, expected is not None)
            transit = m.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], now
            )
            return Errors.PRODUCER_FENCED if transit is None else transit
        if m.state is S.ONGOING:
            return m.prepare_fence_producer_epoch()
        raise AssertionError(
            f"Found transactionalId {m.transactional_id} with state {m.state.kafka_name}. "
            "This is illegal as we should never have transitioned to this state."
        )

    async def _await_pending_markers(self, transactional_id: str) -> None:
        """Wait (up to COMPLETION_WAIT_S) while the id's last transaction is still writing
        its markers, so that a request arriving right after an EndTxn finds it complete
        rather than being told CONCURRENT_TRANSACTIONS. A kafpy improvement on Kafka 2.8:
        the clients back off 20 ms (Java) to `retry.backoff.ms` (librdkafka) on that error,
        a fifth of a transaction committed every 100 ms; the answer is the same, sooner."""
        error, entry = self.state_manager.get_transaction_state(transactional_id)
        if (
            error == Errors.NONE
            and entry is not None
            and entry.transaction_metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
        ):
            await self.marker_manager.wait_for_completion(transactional_id, COMPLETION_WAIT_S)

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------

    async def handle_add_partitions_to_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[TopicPartition],
    ) -> int:
        """Add partitions to the id's transaction (starting one); returns the error code.
        A request that finds the previous transaction still writing its markers waits for
        them first (`_await_pending_markers`)."""
        if not transactional_id:
            return Errors.INVALID_REQUEST
        await self._await_pending_markers(transactional_id)
        error, entry = self.state_manager.get_transaction_state(transactional_id)
        if error != Errors.NONE:
            return error
        if entry is None:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        m = entry.transaction_metadata
        if m.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if m.producer_epoch != producer_epoch:
            return Errors.PRODUCER_FENCED
        if m.pending_transition_in_progress or m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return Errors.CONCURRENT_TRANSACTIONS
        if m.is_kept_prepared_txn:
            return Errors.INVALID_TXN_STATE  # a prepared transaction only commits or aborts
        if m.state is S.ONGOING and partitions <= m.topic_partitions:
            return Errors.NONE
        transit = m.prepare_add_partitions(frozenset(partitions), self.time.milliseconds())
        return await self.state_manager.append_transaction_to_log(
            transactional_id, entry.coordinator_epoch, transit
        )

    # -- EndTxn -----------------------------------------------------------------------------

    async def handle_end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        """Commit or abort: answered once PrepareCommit/PrepareAbort is written; the markers
        and the Complete state follow in the background."""
        return await self._end_transaction(
            transactional_id, producer_id, producer_epoch, commit, from_client=True
        )

    async def _end_transaction(
        self, tid: str, producer_id: int, producer_epoch: int, commit: bool, from_client: bool
    ) -> int:
        if not tid:
            return Errors.INVALID_REQUEST
        result = "COMMIT" if commit else "ABORT"
        error, entry = self.state_manager.get_transaction_state(tid)
        if error != Errors.NONE:
            return error
        if entry is None:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        m, coordinator_epoch = entry.transaction_metadata, entry.coordinator_epoch
        is_epoch_fence = False
        if m.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if (
            from_client and producer_epoch != m.producer_epoch
        ) or producer_epoch < m.producer_epoch:
            return Errors.PRODUCER_FENCED
        if m.pending_transition_in_progress and m.pending_state is not S.PREPARE_EPOCH_FENCE:
            return Errors.CONCURRENT_TRANSACTIONS
        if m.state is S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            if next_state is S.PREPARE_ABORT and m.pending_state is S.PREPARE_EPOCH_FENCE:
                is_epoch_fence = True
                m.pending_state = None
                m.producer_epoch = producer_epoch
                m.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = m.prepare_abort_or_commit(next_state, self.time.milliseconds())
        elif m.state is S.COMPLETE_COMMIT:
            return Errors.NONE if commit else self._invalid_state(tid, m, result)
        elif m.state is S.COMPLETE_ABORT:
            return Errors.NONE if not commit else self._invalid_state(tid, m, result)
        elif m.state is S.PREPARE_COMMIT:
            return Errors.CONCURRENT_TRANSACTIONS if commit else self._invalid_state(tid, m, result)
        elif m.state is S.PREPARE_ABORT:
            return (
                Errors.CONCURRENT_TRANSACTIONS
                if not commit
                else self._invalid_state(tid, m, result)
            )
        elif m.state is S.EMPTY:
            return self._invalid_state(tid, m, result)
        else:
            raise AssertionError(
                f"Found transactionalId {tid} with state {m.state.kafka_name}. "
                "This is illegal as we should never have transitioned to this state."
            )
        error = await self.state_manager.append_transaction_to_log(tid, coordinator_epoch, transit)
        if error != Errors.NONE:
            self.log.info(
                "Aborting sending of transaction markers and returning %s error to client for %s's "
                "EndTransaction request of %s", Errors(error).name, tid, result,
            )  # fmt: skip
            if is_epoch_fence:
                m.has_failed_epoch_fence = True
            return error
        # the state is written: check nothing moved, then send the markers
        error, current = self.state_manager.get_transaction_state(tid)
        if (
            error != Errors.NONE
            or current is None
            or current.coordinator_epoch != coordinator_epoch
        ):
            return Errors.NOT_COORDINATOR
        m = current.transaction_metadata
        if m.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if m.producer_epoch != producer_epoch:
            return Errors.PRODUCER_FENCED
        if m.pending_transition_in_progress:
            return Errors.CONCURRENT_TRANSACTIONS
        if m.state is not (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            return self._invalid_state(tid, m, result)
        complete = m.prepare_complete(self.time.milliseconds())
        self.marker_manager.add_txn_markers_to_send(coordinator_epoch, commit, m, complete)
        return Errors.NONE

    def _invalid_state(self, tid: str, m: TransactionMetadata, result: str) -> int:
        self.log.debug(
            "TransactionalId: %s's state is %s, but received transaction marker result to send: %s",
            tid, m.state.kafka_name, result,
        )  # fmt: skip
        return Errors.INVALID_TXN_STATE

    # -- timeouts ---------------------------------------------------------------------------

    async def abort_timed_out_transactions(self) -> int:
        """Fence and abort every ongoing transaction past its timeout; returns how many
        aborts were started."""
        started = 0
        for timed_out in self.state_manager.timed_out_transactions():
            error, entry = self.state_manager.get_transaction_state(timed_out.transactional_id)
            if error != Errors.NONE or entry is None:
                continue
            m = entry.transaction_metadata
            if m.producer_id != timed_out.producer_id or m.pending_transition_in_progress:
                continue
            transit = m.prepare_fence_producer_epoch()
            self.log.info(
                "Aborting transaction of %s (producer id %d) after its timeout of %d ms",
                m.transactional_id, m.producer_id, m.txn_timeout_ms,
            )  # fmt: skip
            error = await self._end_transaction(
                m.transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                False,
                from_client=False,
            )
            if error == Errors.NONE:
                started += 1
                self.log.info(
                    "Completed rollback of ongoing transaction for transactionalId %s due to timeout",
                    m.transactional_id,
                )
            else:
                if m.pending_state is S.PREPARE_EPOCH_FENCE:
                    m.pending_state = None
                self.log.warning(
                    "Rollback of ongoing transaction for transactionalId %s failed due to error %s",
                    m.transactional_id, Errors(error).name,
                )  # fmt: skip
        return started

    # -- DescribeTransactions / ListTransactions (Kafka 3.0, for the tools) -----------------

    def handle_describe_transaction(
        self, transactional_id: str
    ) -> tuple[int, TransactionMetadata | None]:
        """(error, metadata): TRANSACTIONAL_ID_NOT_FOUND for an id this coordinator does not know."""
        if not transactional_id:
            return Errors.INVALID_REQUEST, None
        error, entry = self.state_manager.get_transaction_state(transactional_id)
        if error != Errors.NONE:
            return error, None
        if entry is None:
            return Errors.TRANSACTIONAL_ID_NOT_FOUND, None
        return Errors.NONE, entry.transaction_metadata

    def handle_list_transactions(
        self, state_filters: list[str], producer_id_filters: list[int]
    ) -> tuple[int, list[str], list[TransactionMetadata]]:
        """(error, unknown state filters, matching metadata) of every id this broker coordinates."""
        if self.state_manager.is_loading():
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, [], []
        by_name = {s.kafka_name: s for s in TransactionState}
        unknown = [f for f in state_filters if f not in by_name]
        states = {by_name[f] for f in state_filters if f in by_name}
        matching = [
            m
            for m in self.state_manager.all_transactions()
            if (not state_filters or m.state in states)
            and (not producer_id_filters or m.producer_id in producer_id_filters)
        ]
        return Errors.NONE, unknown, matching
