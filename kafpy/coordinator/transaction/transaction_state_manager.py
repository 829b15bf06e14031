"""TransactionStateManager: the transactional ids of the __transaction_state partitions this
broker leads, kept in memory and in the log (Kafka's TransactionStateManager).

It keeps, per owned partition, the coordinator epoch (the partition's leader epoch when
this broker became its leader) and the metadata of each transactional id; writes state
changes to the partition with acks=all; loads a partition from its log when this broker
becomes its leader (requests for its ids get COORDINATOR_LOAD_IN_PROGRESS meanwhile, then
transactions found in PrepareCommit/PrepareAbort get their markers sent); drops it when
this broker stops leading (NOT_COORDINATOR from then on); lists transactions past their
timeout; and removes transactional ids idle for `transactional.id.expiration.ms`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafpy.common.logger import component_logger
from kafpy.common.time import Time
from kafpy.common.topic import TRANSACTION_STATE_TOPIC_NAME
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_metadata_manager import partition_for
from kafpy.coordinator.internal_topic_loader import read_to_log_end
from kafpy.coordinator.transaction import transaction_log
from kafpy.coordinator.transaction.transaction_config import TransactionConfig
from kafpy.coordinator.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from kafpy.protocol.errors import Errors
from kafpy.records.builder import RecordBatchBuilder

# Kafka writes __transaction_state with acks=all, always
ENFORCED_REQUIRED_ACKS = -1


class TransactionLogAppender(Protocol):
    """What the manager needs from the broker's ReplicaManager."""

    async def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: Mapping[TopicPartition, memoryview | bytes | None],
        internal_topics_allowed: bool = False,
    ) -> dict[TopicPartition, dict[str, Any]]: ...

    def get_partition(self, tp: TopicPartition) -> Any: ...


@dataclass
class TxnMetadataCacheEntry:
    """The transactional ids of one owned partition, at the coordinator epoch it was loaded with."""

    coordinator_epoch: int
    metadata_per_transactional_id: dict[str, TransactionMetadata] = field(default_factory=dict)


@dataclass(frozen=True)
class CoordinatorEpochAndTxnMetadata:
    coordinator_epoch: int
    transaction_metadata: TransactionMetadata


@dataclass(frozen=True)
class TransactionalIdAndProducerIdEpoch:
    transactional_id: str
    producer_id: int
    producer_epoch: int


# (coordinator epoch, commit?, metadata, transit to the Complete state)
SendMarkers = Callable[[int, bool, TransactionMetadata, TxnTransitMetadata], None]

# Kafka maps the append errors of a state write to what a transactional client handles
_APPEND_ERRORS: dict[int, int] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
}


class TransactionStateManager:
    """Transactional ids of the __transaction_state partitions this broker leads.

    Parameters: `broker_id`, `config` (TransactionConfig), `log` (the ReplicaManager:
    appends as leader and finds a partition's local log), `time`.
    """

    def __init__(
        self, broker_id: int, config: TransactionConfig, log: TransactionLogAppender, time: Time
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.replica_log = log
        self.time = time
        self.transaction_metadata_cache: dict[int, TxnMetadataCacheEntry] = {}
        self.loading_partitions: dict[int, int] = {}  # partition -> coordinator epoch
        self._load_tasks: dict[int, asyncio.Task[None]] = {}
        self.log = component_logger(
            "kafpy.coordinator.transaction.TransactionStateManager",
            f"Transaction State Manager {broker_id}",
        )

    def shutdown(self) -> None:
        for task in self._load_tasks.values():
            task.cancel()
        self._load_tasks.clear()
        self.loading_partitions.clear()
        self.transaction_metadata_cache.clear()

    # -- placement and lookup ---------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions."""
        return partition_for(transactional_id, self.config.transaction_log_num_partitions)

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    def is_loading(self) -> bool:
        return bool(self.loading_partitions)

    def get_transaction_state(
        self, transactional_id: str
    ) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        """(error, the id's metadata or None if unknown): COORDINATOR_LOAD_IN_PROGRESS while its
        partition loads, NOT_COORDINATOR when this broker does not own it."""
        partition = self.partition_for(transactional_id)
        if partition in self.loading_partitions:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, None
        entry = self.transaction_metadata_cache.get(partition)
        if entry is None:
            return Errors.NOT_COORDINATOR, None
        metadata = entry.metadata_per_transactional_id.get(transactional_id)
        if metadata is None:
            return Errors.NONE, None
        return Errors.NONE, CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, metadata)

    def put_transaction_state_if_not_exists(
        self, metadata: TransactionMetadata
    ) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        partition = self.partition_for(metadata.transactional_id)
        if partition in self.loading_partitions:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, None
        entry = self.transaction_metadata_cache.get(partition)
        if entry is None:
            return Errors.NOT_COORDINATOR, None
        current = entry.metadata_per_transactional_id.setdefault(
            metadata.transactional_id, metadata
        )
        return Errors.NONE, CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, current)

    def all_transactions(self) -> list[TransactionMetadata]:
        """Every transactional id this broker coordinates (for ListTransactions)."""
        return [
            m
            for entry in self.transaction_metadata_cache.values()
            for m in entry.metadata_per_transactional_id.values()
        ]

    def timed_out_transactions(self) -> list[TransactionalIdAndProducerIdEpoch]:
        """Ongoing transactions older than their timeout, with no transition pending; never
        a two-phase-commit one (KIP-939: only its external coordinator may end it)."""
        now = self.time.milliseconds()
        out = []
        for partition, entry in self.transaction_metadata_cache.items():
            if partition in self.loading_partitions:
                continue
            for m in entry.metadata_per_transactional_id.values():
                if (
                    m.state in (TransactionState.ONGOING, TransactionState.PREPARE_EPOCH_FENCE)
                    and m.pending_state is None
                    and not m.is_distributed_two_phase_commit_txn
                    and m.txn_start_timestamp + m.txn_timeout_ms < now
                ):
                    out.append(
                        TransactionalIdAndProducerIdEpoch(
                            m.transactional_id, m.producer_id, m.producer_epoch
                        )
                    )
        return out

    # -- writes -----------------------------------------------------------------------------

    async def append_transaction_to_log(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        transit: TxnTransitMetadata,
        retry_on_coordinator_not_available: bool = False,
    ) -> int:
        """Write a prepared transition (acks=all) and, once written, apply it to the cached
        metadata; returns the error for the client (NONE when applied). On failure the
        pending state is cleared, except for COORDINATOR_NOT_AVAILABLE with
        `retry_on_coordinator_not_available` (the marker completion retries it)."""
        tp = TopicPartition(TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id))
        value = (
            None
            if transit.txn_state is TransactionState.DEAD
            else transaction_log.value_to_bytes(transit)
        )
        builder = RecordBatchBuilder()
        builder.append(
            self.time.milliseconds(), transaction_log.key_to_bytes(transactional_id), value
        )
        error, owner = self.get_transaction_state(transactional_id)
        if error == Errors.NONE and (owner is None or owner.coordinator_epoch != coordinator_epoch):
            error = Errors.NOT_COORDINATOR
        if error == Errors.NONE:
            result = await self.replica_log.append_records(
                self.config.request_timeout_ms, ENFORCED_REQUIRED_ACKS, {tp: builder.build()},
                internal_topics_allowed=True,
            )  # fmt: skip
            code = int(result[tp]["error_code"])
            error = _APPEND_ERRORS.get(code, code)
            if error != Errors.NONE:
                self.log.error(
                    "Appending %s's state %s to %s failed with %s; returning %s",
                    transactional_id, transit.txn_state.kafka_name, tp,
                    Errors(code).name, Errors(error).name,
                )  # fmt: skip
        # the cache may have changed while the write waited for the replicas
        state_error, current = self.get_transaction_state(transactional_id)
        if current is None or current.coordinator_epoch != coordinator_epoch:
            self.log.info(
                "The cached metadata of %s changed (state error %s) while its %s was written; "
                "returning NOT_COORDINATOR",
                transactional_id, Errors(state_error).name, transit.txn_state.kafka_name,
            )  # fmt: skip
            return Errors.NOT_COORDINATOR
        metadata = current.transaction_metadata
        if error == Errors.NONE:
            metadata.complete_transition_to(transit)
            if transit.txn_state is TransactionState.DEAD:
                self.transaction_metadata_cache[tp.partition].metadata_per_transactional_id.pop(
                    transactional_id, None
                )
            return Errors.NONE
        if not (retry_on_coordinator_not_available and error == Errors.COORDINATOR_NOT_AVAILABLE):
            metadata.pending_state = None
        return error

    async def remove_expired_transactional_ids(self) -> int:
        """Tombstone ids idle past transactional.id.expiration.ms (Kafka's
        transactionalId-expiration task); returns how many were removed."""
        now = self.time.milliseconds()
        removed = 0
        for partition, entry in list(self.transaction_metadata_cache.items()):
            if partition in self.loading_partitions:
                continue
            for m in list(entry.metadata_per_transactional_id.values()):
                if (
                    m.state.is_expiration_allowed
                    and m.pending_state is None
                    and m.txn_last_update_timestamp + self.config.transactional_id_expiration_ms
                    <= now
                ):
                    transit = m.prepare_dead()
                    error = await self.append_transaction_to_log(
                        m.transactional_id, entry.coordinator_epoch, transit
                    )
                    if error == Errors.NONE:
                        removed += 1
                        self.log.info(
                            "Removed expired transactional id %s (producer id %d)",
                            m.transactional_id, m.producer_id,
                        )  # fmt: skip
        return removed

    # -- leadership -------------------------------------------------------------------------

    def schedule_load(
        self, partition: int, coordinator_epoch: int, send_markers: SendMarkers
    ) -> None:
        """Become the coordinator of a partition at `coordinator_epoch`: load it in the
        background, then complete the transactions it left prepared."""
        current = self.transaction_metadata_cache.get(partition)
        if current is not None and current.coordinator_epoch >= coordinator_epoch:
            return
        if self.loading_partitions.get(partition, -1) >= coordinator_epoch:
            return
        self.log.info(
            "Loading transaction metadata from %s-%d at epoch %d",
            TRANSACTION_STATE_TOPIC_NAME, partition, coordinator_epoch,
        )  # fmt: skip
        old = self._load_tasks.pop(partition, None)
        if old is not None:
            old.cancel()
        self.transaction_metadata_cache.pop(partition, None)
        self.loading_partitions[partition] = coordinator_epoch
        self._load_tasks[partition] = asyncio.ensure_future(
            self._load(partition, coordinator_epoch, send_markers)
        )

    async def _load(
        self, partition: int, coordinator_epoch: int, send_markers: SendMarkers
    ) -> None:
        start = self.time.milliseconds()
        try:
            loaded = await self.load_partition(partition)
            if self.loading_partitions.get(partition) != coordinator_epoch:
                return  # resigned or re-elected meanwhile
            self.transaction_metadata_cache[partition] = TxnMetadataCacheEntry(
                coordinator_epoch, loaded
            )
            del self.loading_partitions[partition]
            self.log.info(
                "Finished loading %d transaction metadata from %s-%d in %d milliseconds, "
                "of which %d were pending markers",
                len(loaded), TRANSACTION_STATE_TOPIC_NAME, partition, self.time.milliseconds() - start,
                sum(1 for m in loaded.values()
                    if m.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)),
            )  # fmt: skip
            for metadata in loaded.values():
                if metadata.state in (
                    TransactionState.PREPARE_COMMIT,
                    TransactionState.PREPARE_ABORT,
                ):
                    commit = metadata.state is TransactionState.PREPARE_COMMIT
                    transit = metadata.prepare_complete(self.time.milliseconds())
                    send_markers(coordinator_epoch, commit, metadata, transit)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log.exception(
                "Error loading transactions from %s-%d", TRANSACTION_STATE_TOPIC_NAME, partition
            )
            if self.loading_partitions.get(partition) == coordinator_epoch:
                del self.loading_partitions[partition]
        finally:
            if self._load_tasks.get(partition) is asyncio.current_task():
                del self._load_tasks[partition]

    async def load_partition(self, partition: int) -> dict[str, TransactionMetadata]:
        """Read a partition from its log start to its log end, as Kafka does (a new leader's
        high watermark may lag records every in-sync replica had acknowledged); later
        records win, tombstones remove."""
        tp = TopicPartition(TRANSACTION_STATE_TOPIC_NAME, partition)
        p = self.replica_log.get_partition(tp)
        log = None if p is None else p.log
        if log is None:
            return {}
        loaded: dict[str, TransactionMetadata] = {}
        async for batch in read_to_log_end(log, self.config.transaction_log_load_buffer_size):
            if batch.is_control:
                continue
            for record in batch.records():
                if record.key is None:
                    continue
                transactional_id = transaction_log.read_key(record.key)
                metadata = transaction_log.read_value(transactional_id, record.value)
                if metadata is None:
                    loaded.pop(transactional_id, None)
                else:
                    loaded[transactional_id] = metadata
        return loaded

    def remove_transactions_for_partition(
        self, partition: int, coordinator_epoch: int | None = None
    ) -> None:
        """Stop coordinating a partition (at `coordinator_epoch`, or any epoch when None)."""
        loading_epoch = self.loading_partitions.get(partition)
        if loading_epoch is not None and (
            coordinator_epoch is None or loading_epoch <= coordinator_epoch
        ):
            del self.loading_partitions[partition]
            task = self._load_tasks.pop(partition, None)
            if task is not None:
                task.cancel()
        entry = self.transaction_metadata_cache.get(partition)
        if entry is None:
            return
        if coordinator_epoch is not None and entry.coordinator_epoch > coordinator_epoch:
            return
        del self.transaction_metadata_cache[partition]
        self.log.info(
            "Unloaded transaction metadata of %d transactional ids from %s-%d (coordinator epoch %d)",
            len(entry.metadata_per_transactional_id), TRANSACTION_STATE_TOPIC_NAME, partition,
            entry.coordinator_epoch,
        )  # fmt: skip
