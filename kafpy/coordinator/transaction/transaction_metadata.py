"""TransactionMetadata: one transactional id's producer, epoch, state and partitions, with
Kafka's state machine of a transaction.

A change goes in two steps, as in Kafka: `prepare_*` checks the transition against
`VALID_PREVIOUS_STATES`, sets `pending_state` and returns a `TxnTransitMetadata` (the
state to write to __transaction_state); once the write succeeded,
`complete_transition_to` applies it (or `pending_state` is cleared when it failed). While
a transition is pending, other requests for the id get CONCURRENT_TRANSACTIONS.

KIP-939 (two-phase commit): a transaction begun after InitProducerId with enable2Pc has
the timeout `TWO_PHASE_COMMIT_TIMEOUT_MS` (Kafka's Int.MaxValue marker), so it is never
aborted on a timeout and the marker survives in __transaction_state. InitProducerId with
keepPreparedTxn on such an open transaction bumps the epoch (fencing the process that
prepared it) but keeps the transaction: `ongoing_txn_producer_epoch` then holds the epoch
it was prepared at, and `producer_epoch` the new owner's, which ends it with EndTxn.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafpy.common.topic_partition import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
_SHORT_MAX = 2**15 - 1
TWO_PHASE_COMMIT_TIMEOUT_MS = 2**31 - 1
"""The transaction timeout of a two-phase-commit transaction (Kafka's Integer.MAX_VALUE)."""


class TransactionState(enum.IntEnum):
    """A transaction's state; the value is the byte Kafka writes in TransactionLogValue."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @classmethod
    def from_byte(cls, value: int) -> TransactionState:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"Unknown transaction state byte {value} from the transaction status message; "
                "known states are 0 (Empty) to 7 (PrepareEpochFence)."
            ) from None

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state, e.g. PrepareCommit."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def is_expiration_allowed(self) -> bool:
        """Whether a transactional id in this state may expire."""
        return self in (
            TransactionState.EMPTY,
            TransactionState.COMPLETE_COMMIT,
            TransactionState.COMPLETE_ABORT,
        )


S = TransactionState
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def is_valid_transition(old: TransactionState, new: TransactionState) -> bool:
    return old in VALID_PREVIOUS_STATES[new]


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps Short.MaxValue back so that a producer can always be fenced."""
    return epoch >= _SHORT_MAX - 1


class IllegalTransactionStateError(Exception):
    """A transition the state machine does not allow was attempted (a coordinator bug)."""


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The state a transactional id moves to, as written to __transaction_state."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass
class TransactionMetadata:
    """The coordinator's view of one transactional id (Kafka's TransactionMetadata)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH
    """While a two-phase-commit transaction kept by InitProducerId(keepPreparedTxn) is open:
    the epoch it was prepared at (`producer_epoch` is the new owner's); else -1."""

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def is_distributed_two_phase_commit_txn(self) -> bool:
        """Whether the id takes part in two-phase commit: its transactions never time out."""
        return self.txn_timeout_ms == TWO_PHASE_COMMIT_TIMEOUT_MS

    @property
    def is_kept_prepared_txn(self) -> bool:
        """Whether the open transaction was kept by InitProducerId(keepPreparedTxn)."""
        return self.ongoing_txn_producer_epoch != NO_PRODUCER_EPOCH

    # -- preparing transitions -------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Bump the epoch to fence the current producer before aborting its transaction."""
        if self.producer_epoch >= _SHORT_MAX:
            raise IllegalTransactionStateError(
                f"Cannot fence producer with epoch equal to Short.MaxValue since this would overflow "
                f"(transactional id {self.transactional_id})"
            )
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
            frozenset(self.topic_partitions), self.txn_start_timestamp, self.txn_last_update_timestamp,
        )  # fmt: skip

    def prepare_keep_prepared_txn(self, now_ms: int) -> TxnTransitMetadata:
        """KIP-939's InitProducerId(keepPreparedTxn) on an open two-phase-commit transaction:
        the next epoch for the new owner (the old one is fenced), the transaction kept open
        with its partitions, and the epoch it was prepared at remembered."""
        if self.state is not S.ONGOING or not self.is_distributed_two_phase_commit_txn:
            raise IllegalTransactionStateError(
                f"Cannot keep the transaction of {self.transactional_id} in state "
                f"{self.state.kafka_name}: only an open two-phase-commit transaction is kept"
            )
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionStateError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}"
            )
        prepared_at = (
            self.ongoing_txn_producer_epoch if self.is_kept_prepared_txn else self.producer_epoch
        )
        return self._prepare(
            S.ONGOING, self.producer_id, self.producer_epoch + 1, self.last_producer_epoch,
            self.txn_timeout_ms, frozenset(self.topic_partitions), self.txn_start_timestamp, now_ms,
            ongoing_epoch=prepared_at,
        )  # fmt: skip

    def prepare_increment_producer_epoch(
        self, new_txn_timeout_ms: int, expected_producer_epoch: int | None, now_ms: int
    ) -> TxnTransitMetadata | None:
        """InitProducerId on an idle id: the next epoch, or None when `expected_producer_epoch`
        shows a fenced producer (the caller answers PRODUCER_FENCED)."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionStateError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}"
            )
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or expected_producer_epoch == self.producer_epoch
        ):
            epochs = (bumped, self.producer_epoch)
        elif expected_producer_epoch == self.last_producer_epoch:
            epochs = (
                self.producer_epoch,
                self.last_producer_epoch,
            )  # a retry of a bump that succeeded
        else:
            return None
        return self._prepare(
            S.EMPTY,
            self.producer_id,
            epochs[0],
            epochs[1],
            new_txn_timeout_ms,
            frozenset(),
            -1,
            now_ms,
            ongoing_epoch=NO_PRODUCER_EPOCH,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, new_txn_timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransitMetadata:
        """A new producer id with epoch 0, once the epochs of the current one are used up."""
        if self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise IllegalTransactionStateError(
                "Cannot rotate producer ids while a transaction is still pending"
            )
        last_epoch = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(
            S.EMPTY, new_producer_id, 0, last_epoch, new_txn_timeout_ms, frozenset(), -1, now_ms,
            ongoing_epoch=NO_PRODUCER_EPOCH,
        )  # fmt: skip

    def prepare_add_partitions(
        self, added: frozenset[TopicPartition], now_ms: int
    ) -> TxnTransitMetadata:
        start = (
            now_ms
            if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
            else self.txn_start_timestamp
        )
        return self._prepare(
            S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
            self.txn_timeout_ms, frozenset(self.topic_partitions) | added, start, now_ms,
        )  # fmt: skip

    def prepare_abort_or_commit(
        self, new_state: TransactionState, now_ms: int
    ) -> TxnTransitMetadata:
        return self._prepare(
            new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
            self.txn_timeout_ms, frozenset(self.topic_partitions), self.txn_start_timestamp, now_ms,
        )  # fmt: skip

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        return self._prepare(
            new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
            self.txn_timeout_ms, frozenset(), self.txn_start_timestamp, now_ms,
            ongoing_epoch=NO_PRODUCER_EPOCH,
        )  # fmt: skip

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(
            S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
            self.txn_timeout_ms, frozenset(), self.txn_start_timestamp, self.txn_last_update_timestamp,
            ongoing_epoch=NO_PRODUCER_EPOCH,
        )  # fmt: skip

    def _prepare(
        self,
        new_state: TransactionState,
        new_producer_id: int,
        new_epoch: int,
        new_last_epoch: int,
        new_txn_timeout_ms: int,
        new_partitions: frozenset[TopicPartition],
        new_start: int,
        update_timestamp: int,
        ongoing_epoch: int | None = None,
    ) -> TxnTransitMetadata:
        """`ongoing_epoch`: the new `ongoing_txn_producer_epoch` (None keeps the current one)."""
        if self.pending_state is not None:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {new_state.kafka_name} while it already "
                f"has a pending state {self.pending_state.kafka_name}"
            )
        if new_producer_id < 0:
            raise IllegalTransactionStateError(f"Illegal new producer id {new_producer_id}")
        if new_epoch < 0:
            raise IllegalTransactionStateError(f"Illegal new producer epoch {new_epoch}")
        if not is_valid_transition(self.state, new_state):
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {new_state.kafka_name} failed since "
                f"{self.state.kafka_name} is not a valid previous state of {new_state.kafka_name}"
            )
        self.pending_state = new_state
        return TxnTransitMetadata(
            new_producer_id, self.producer_id, new_epoch, new_last_epoch, new_txn_timeout_ms,
            new_state, new_partitions, new_start, update_timestamp,
            self.ongoing_txn_producer_epoch if ongoing_epoch is None else ongoing_epoch,
        )  # fmt: skip

    # -- completing them -------------------------------------------------------------------

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply a prepared transition once its record is written (Kafka's checks)."""
        to_state = self.pending_state
        if to_state is None or to_state is not transit.txn_state:
            raise self._failure(transit)
        if transit.txn_last_update_timestamp < self.txn_last_update_timestamp:
            raise self._failure(transit)
        if to_state is S.EMPTY:
            if (
                (
                    self.producer_epoch != transit.producer_epoch
                    and not self._valid_epoch_bump(transit)
                )
                or transit.topic_partitions
                or transit.txn_start_timestamp != -1
            ):
                raise self._failure(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state is S.ONGOING:
            kept = self.state is S.ONGOING and self._valid_keep_prepared(transit)
            if (
                not (self._valid_epoch(transit) or kept)
                or not self.topic_partitions <= transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
            ):
                raise self._failure(transit)
            self.producer_epoch = transit.producer_epoch
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions |= transit.topic_partitions
        elif to_state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            if (
                not self._valid_epoch(transit)
                or self.topic_partitions != transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or self.txn_start_timestamp != transit.txn_start_timestamp
            ):
                raise self._failure(transit)
        elif to_state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            if (
                not self._valid_epoch(transit)
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or (transit.txn_start_timestamp == -1)
            ):
                raise self._failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        elif to_state is S.PREPARE_EPOCH_FENCE:
            raise self._failure(transit)  # never written: InitProducerId aborts instead
        elif to_state is S.DEAD:
            if self.state not in VALID_PREVIOUS_STATES[S.DEAD]:
                raise self._failure(transit)
        self.state = to_state
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.ongoing_txn_producer_epoch = transit.ongoing_txn_producer_epoch
        self.pending_state = None

    def _valid_epoch(self, transit: TxnTransitMetadata) -> bool:
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _valid_keep_prepared(self, transit: TxnTransitMetadata) -> bool:
        """A keepPreparedTxn transition: the next epoch, same producer id, same partitions."""
        return (
            transit.ongoing_txn_producer_epoch != NO_PRODUCER_EPOCH
            and transit.producer_id == self.producer_id
            and transit.producer_epoch == self.producer_epoch + 1
            and transit.topic_partitions == frozenset(self.topic_partitions)
        )

    def _valid_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )

    def _failure(self, transit: TxnTransitMetadata) -> IllegalTransactionStateError:
        return IllegalTransactionStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} "
            f"from {self.state.kafka_name} (pending {self.pending_state})"
        )

    def __str__(self) -> str:
        partitions = ",".join(str(tp) for tp in sorted(self.topic_partitions))
        return (
            f"TransactionMetadata(transactionalId={self.transactional_id}, producerId={self.producer_id}, "
            f"producerEpoch={self.producer_epoch}, txnTimeoutMs={self.txn_timeout_ms}, "
            f"state={self.state.kafka_name}, pendingState="
            f"{self.pending_state.kafka_name if self.pending_state else None}, "
            f"topicPartitions=[{partitions}], txnStartTimestamp={self.txn_start_timestamp}, "
            f"txnLastUpdateTimestamp={self.txn_last_update_timestamp}"
            + (
                f", ongoingTxnProducerEpoch={self.ongoing_txn_producer_epoch})"
                if self.is_kept_prepared_txn
                else ")"
            )
        )
