"""TransactionManager: the transactional half of a producer (Kafka's TransactionManager).

It holds a transactional producer's state machine and speaks to its coordinators:
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn to the transaction
coordinator of `transactional.id` (FindCoordinator key_type 1), TxnOffsetCommit to the
group coordinator. The producer (`BatchProducer`) calls it around its own sends: before
the first batch to a partition in a transaction the partition is added, a failed send
puts the transaction in the abortable state, and a commit flushes the sends before EndTxn.

Errors are classed as Kafka 2.8's handlers class them:
- the coordinator moved or is not there yet (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a
  lost connection): find it again and resend;
- busy (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS): resend after
  `retry.backoff.ms` (20 ms for the first AddPartitionsToTxn of a transaction, while the
  markers of the previous one are being written);
- fenced (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH with a transactional id), not
  authorized, or anything unexpected: FATAL_ERROR, every later call raises
  (ProducerFencedError when fenced), the producer can only be closed;
- a failed send, a topic or group not authorized, a stale member: ABORTABLE_ERROR, only
  `abort_transaction` is allowed, and it bumps the epoch (KIP-360) when the producer's
  sequences may have been lost.
Every operation waits at most `max.block.ms`, then raises RequestTimedOutError; init,
commit and abort may then be called again and resume where they stopped.

The state machine is Kafka's (an enum, a table of valid previous states, one place that
performs and logs transitions). KIP-939's two-phase commit adds PREPARED_TRANSACTION
between IN_TRANSACTION and the two completions: `initialize(enable_2pc=True)` sends
InitProducerId v6 (the id's transactions then never time out), `prepare()` leaves the
flushed transaction open and names it by a PreparedTxnState (producer id, epoch), and
`initialize(enable_2pc=True, keep_prepared_txn=True)` in another process takes over a
prepared transaction (the coordinator answers the next epoch and the kept transaction's
(producer id, epoch)), which that process then completes: commit when the state it was
handed is the kept one, abort otherwise (KIP-939's completeTransaction).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.client.consumer_group_metadata import ConsumerGroupMetadata, OffsetAndMetadata
from kafpy.client.find_coordinator import CoordinatorType, find_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import (
    BrokerNotAvailableError,
    Errors,
    InvalidTxnStateError,
    KafkaConnectionError,
    KafkaError,
    ProducerFencedError,
    RequestTimedOutError,
    UnsupportedVersionError,
    for_code,
)
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.records.record_batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

ADD_PARTITIONS_RETRY_BACKOFF_MS = 20
"""Kafka's backoff for the first AddPartitionsToTxn of a transaction answered
CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being written)."""

_FENCED = frozenset({Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH})
_MOVED = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})
_BUSY = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS})
_PID_LOST = frozenset({Errors.UNKNOWN_PRODUCER_ID, Errors.INVALID_PRODUCER_ID_MAPPING})
# errors of a produce that make the producer unusable (Kafka's handleFailedBatch)
_FATAL_PRODUCE = frozenset(
    {
        *_FENCED,
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        Errors.UNSUPPORTED_VERSION,
    }
)


class State(enum.Enum):
    """A transactional producer's states (Kafka's TransactionManager.State)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    PREPARED_TRANSACTION = "PREPARED_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = State
VALID_PREVIOUS_STATES: dict[State, frozenset[State]] = {
    S.UNINITIALIZED: frozenset({S.READY}),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.PREPARED_TRANSACTION: frozenset({S.IN_TRANSACTION, S.INITIALIZING}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.PREPARED_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset(
        {S.IN_TRANSACTION, S.PREPARED_TRANSACTION, S.ABORTABLE_ERROR}
    ),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR}),
    S.FATAL_ERROR: frozenset(State),  # from anywhere; never left
}
"""Kafka's isTransitionValid: the states each state may be entered from."""


@dataclass(frozen=True)
class PreparedTxnState:
    """A prepared transaction's identity (KIP-939's PreparedTxnState): the producer id and
    epoch it was prepared at. The process that prepares it hands it to whoever completes
    it; `str()` gives Kafka's "producerId:epoch" form and `parse` reads it back."""

    producer_id: int = NO_PRODUCER_ID
    epoch: int = NO_PRODUCER_EPOCH

    def __str__(self) -> str:
        return "" if self.producer_id == NO_PRODUCER_ID else f"{self.producer_id}:{self.epoch}"

    @classmethod
    def parse(cls, text: str) -> PreparedTxnState:
        if not text:
            return cls()
        pid, sep, epoch = text.partition(":")
        try:
            if not sep:
                raise ValueError
            return cls(int(pid), int(epoch))
        except ValueError:
            raise ValueError(
                f"Invalid prepared transaction state {text!r}: expected producerId:epoch"
            ) from None


class TransactionStateError(KafkaError):
    """A transactional method called when the producer's state does not allow it (Kafka's
    IllegalStateException, an invalid transition, or a call after an error); nothing was
    sent. `__cause__` is the earlier error when there was one."""


class _Outcome(enum.Enum):
    """What a coordinator's answer asks of the request loop."""

    DONE = "done"
    RETRY = "retry"
    FIND_COORDINATOR = "find the coordinator and retry"


class _Deadline:
    """`max.block.ms` for one operation on the loop's clock."""

    def __init__(self, timeout_ms: int, operation: str) -> None:
        self.timeout_ms = timeout_ms
        self.operation = operation
        self.ends = asyncio.get_running_loop().time() + timeout_ms / 1000

    def remaining_ms(self) -> int:
        return max(0, int((self.ends - asyncio.get_running_loop().time()) * 1000))

    def expired(self) -> RequestTimedOutError:
        return RequestTimedOutError(
            f"Timeout expired after {self.timeout_ms} milliseconds while awaiting {self.operation}"
        )

    async def backoff(self, ms: int) -> None:
        if self.remaining_ms() < ms:
            raise self.expired()
        await asyncio.sleep(ms / 1000)


class TransactionManager:
    """The transactions of one `transactional.id` (see the module's docstring).

    Parameters: `client`, `transactional_id`, `transaction_timeout_ms` (sent in
    InitProducerId: the coordinator aborts a transaction left open longer), `max_block_ms`
    (how long each operation may wait), `retry_backoff_ms` (default: the client's)."""

    def __init__(
        self,
        client: KafkaClient,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60000,
        max_block_ms: int = 60000,
        retry_backoff_ms: int | None = None,
    ) -> None:
        self.client = client
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.max_block_ms = max_block_ms
        self.retry_backoff_ms = (
            client.retry_backoff_ms if retry_backoff_ms is None else retry_backoff_ms
        )
        self._state = State.UNINITIALIZED
        self._last_error: KafkaError | None = None
        self._producer_id = NO_PRODUCER_ID
        self._producer_epoch = NO_PRODUCER_EPOCH
        self._partitions: set[TopicPartition] = set()  # added to the open transaction
        self._transaction_started = False  # a partition or the offsets were added
        self._epoch_bump_required = False
        self._two_phase_commit = False  # initialized with enable_2pc
        self._prepared = PreparedTxnState()  # the transaction in PREPARED_TRANSACTION
        self._coordinators: dict[tuple[CoordinatorType, str], int] = {}
        self._requests = asyncio.Lock()  # one coordinator request at a time, as Kafka's
        self._log = component_logger(
            __name__, f"TransactionManager transactionalId={transactional_id}"
        )

    # --- state ---

    @property
    def state(self) -> State:
        return self._state

    @property
    def last_error(self) -> KafkaError | None:
        """The error that put the producer in ABORTABLE_ERROR or FATAL_ERROR."""
        return self._last_error

    @property
    def producer_id(self) -> int:
        return self._producer_id

    @property
    def producer_epoch(self) -> int:
        return self._producer_epoch

    @property
    def is_two_phase_commit(self) -> bool:
        """Whether the producer was initialized with `enable_2pc` (KIP-939)."""
        return self._two_phase_commit

    @property
    def prepared_transaction_state(self) -> PreparedTxnState:
        """The prepared transaction (PREPARED_TRANSACTION): the one `prepare()` left open,
        or the one `initialize(keep_prepared_txn=True)` kept; empty in any other state."""
        if self._state is not State.PREPARED_TRANSACTION:
            return PreparedTxnState()
        return self._prepared

    @property
    def partitions_in_transaction(self) -> frozenset[TopicPartition]:
        return frozenset(self._partitions)

    async def coordinator(self) -> int:
        """The id of the broker coordinating the transactional id (as last found; looked
        up when not known)."""
        return await self._coordinator(
            CoordinatorType.TRANSACTION,
            self.transactional_id,
            _Deadline(self.max_block_ms, "FindCoordinator"),
        )

    def has_producer_id(self) -> bool:
        return self._producer_id != NO_PRODUCER_ID

    def _transition_to(self, target: State, error: KafkaError | None = None) -> None:
        """Kafka's transitionTo: the one place states change; an error state keeps its
        error, any other state clears it."""
        if self._state not in VALID_PREVIOUS_STATES[target]:
            raise TransactionStateError(
                f"TransactionalId {self.transactional_id}: Invalid transition attempted from "
                f"state {self._state.value} to state {target.value}"
            )
        if target in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
            assert error is not None
            self._last_error = error
            self._log.info(
                "Transition from state %s to error state %s: %s", self._state.value,
                target.value, error,
            )  # fmt: skip
        else:
            self._last_error = None
            self._log.debug("Transition from state %s to %s", self._state.value, target.value)
        self._state = target

    def transition_to_abortable_error(self, error: KafkaError) -> None:
        """The open transaction can only be aborted now (skipped while it is aborting)."""
        if self._state is State.ABORTING_TRANSACTION:
            self._log.debug("Skipping the abortable error while aborting: %s", error)
            return
        if self._state is State.FATAL_ERROR:
            return
        self._transition_to(State.ABORTABLE_ERROR, error)

    def transition_to_fatal_error(self, error: KafkaError) -> None:
        """The producer can only be closed now."""
        self._transition_to(State.FATAL_ERROR, error)

    def _fatal(self, error: KafkaError) -> KafkaError:
        self.transition_to_fatal_error(error)
        return error

    def _abortable(self, error: KafkaError, *, bump_epoch: bool = False) -> KafkaError:
        if bump_epoch:
            self._epoch_bump_required = True
        self.transition_to_abortable_error(error)
        return error

    def _fenced(self) -> KafkaError:
        return self._fatal(ProducerFencedError(Errors.PRODUCER_FENCED.message))

    def maybe_fail_with_error(self) -> None:
        """Raise if the producer is in an error state (Kafka's maybeFailWithError)."""
        if self._state not in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
            return
        if isinstance(self._last_error, ProducerFencedError):
            raise ProducerFencedError(
                "The producer has been rejected from the broker because it tried to use an "
                "old epoch with the transactionalId"
            ) from self._last_error
        raise TransactionStateError(
            "Cannot execute transactional method because we are in an error state: "
            f"{self._last_error}"
        ) from self._last_error

    def fail_if_not_ready_for_send(self) -> None:
        """Kafka's failIfNotReadyForSend: sends go only into an open transaction."""
        if self._state in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
            if isinstance(self._last_error, ProducerFencedError):
                self.maybe_fail_with_error()
            raise TransactionStateError(
                "Cannot perform send because at least one previous transactional or "
                f"idempotent request has failed with errors: {self._last_error}"
            ) from self._last_error
        if not self.has_producer_id():
            raise TransactionStateError(
                "Cannot perform a 'send' before completing a call to initTransactions when "
                "transactions are enabled."
            )
        if self._state is not State.IN_TRANSACTION:
            raise TransactionStateError(f"Cannot call send in state {self._state.value}")

    # --- the operations ---

    async def initialize(
        self, *, enable_2pc: bool = False, keep_prepared_txn: bool = False
    ) -> PreparedTxnState:
        """InitProducerId for the transactional id: a producer id and a new epoch, which
        fences older producers of the id and has the coordinator finish (abort) the
        transaction they left open. Called again after a timeout, it resumes.

        KIP-939 (InitProducerId v6): `enable_2pc` makes the id's transactions two-phase
        (they never time out; the brokers must allow it with
        `transaction.two.phase.commit.enable`); with `keep_prepared_txn` an open prepared
        transaction is kept instead of aborted: the producer enters PREPARED_TRANSACTION,
        ready to complete it. Returns the kept transaction's state (empty when none was
        open, or without `keep_prepared_txn`)."""
        if keep_prepared_txn and not enable_2pc:
            raise TransactionStateError(
                "keep_prepared_txn needs enable_2pc: only a two-phase-commit producer can "
                "take over a prepared transaction"
            )
        if self._state is not State.INITIALIZING:
            self._transition_to(State.INITIALIZING)
            self._log.info(
                "Invoking InitProducerId for the first time in order to acquire a producer ID"
            )
        self._two_phase_commit = enable_2pc
        ongoing = await self._init_producer_id(
            bump=False, enable_2pc=enable_2pc, keep_prepared_txn=keep_prepared_txn
        )
        if keep_prepared_txn and ongoing.producer_id != NO_PRODUCER_ID:
            # the kept transaction's partitions are the coordinator's: EndTxn completes them
            self._prepared = ongoing
            self._transaction_started = True
            self._transition_to(State.PREPARED_TRANSACTION)
            self._log.info("Kept the prepared transaction %s", ongoing)
            return ongoing
        self._transition_to(State.READY)
        return PreparedTxnState()

    def begin(self) -> None:
        """Open a transaction (nothing is sent until the first partition is added)."""
        self.maybe_fail_with_error()
        self._transition_to(State.IN_TRANSACTION)

    async def maybe_add_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """AddPartitionsToTxn for those of `partitions` not yet in the transaction, all in
        one request; returns once they are in it."""
        if self._partitions.issuperset(partitions):  # the common case: no wait on the lock
            return
        async with self._requests:
            new = set(partitions) - self._partitions
            if not new:
                return
            self.fail_if_not_ready_for_send()
            deadline = _Deadline(self.max_block_ms, "AddPartitionsToTxn")
            try:
                await self._add_partitions(new, deadline)
            except RequestTimedOutError as e:  # the records cannot go in: Kafka expires them
                raise self._abortable(e) from None

    async def send_offsets(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group: ConsumerGroupMetadata,
    ) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator: the offsets
        count as the group's committed offsets only once the transaction commits."""
        self.maybe_fail_with_error()
        if self._state is not State.IN_TRANSACTION:
            raise TransactionStateError(
                "Cannot send offsets to transaction either because the producer is not in an "
                "active transaction"
            )
        async with self._requests:
            deadline = _Deadline(self.max_block_ms, "AddOffsetsToTxn")
            try:
                await self._add_offsets(group.group_id, deadline)
                deadline.operation = "TxnOffsetCommit"
                await self._txn_offset_commit(offsets, group, deadline)
            except RequestTimedOutError as e:  # whether the offsets went in is not known
                raise self._abortable(e) from None

    def prepare(self) -> PreparedTxnState:
        """KIP-939's prepareTransaction, once the producer has flushed its sends: the
        transaction stays open (no EndTxn) for another process to complete."""
        self.maybe_fail_with_error()
        if not self._two_phase_commit:
            raise InvalidTxnStateError("Cannot prepare a transaction when 2PC is not enabled")
        if self._state is not State.IN_TRANSACTION:
            raise TransactionStateError(
                f"Cannot prepare a transaction in state {self._state.value}"
            )
        self._transition_to(State.PREPARED_TRANSACTION)
        self._prepared = PreparedTxnState(self._producer_id, self._producer_epoch)
        return self._prepared

    def begin_commit(self) -> None:
        """Enter COMMITTING_TRANSACTION (the producer then flushes its sends and calls
        `end_transaction`); nothing to do when a commit that timed out is called again."""
        if self._state is State.COMMITTING_TRANSACTION:
            return
        self.maybe_fail_with_error()
        self._transition_to(State.COMMITTING_TRANSACTION)

    def begin_abort(self) -> None:
        """Enter ABORTING_TRANSACTION: allowed from an open transaction or the abortable
        error state."""
        if self._state is State.ABORTING_TRANSACTION:
            return
        if self._state is not State.ABORTABLE_ERROR:
            self.maybe_fail_with_error()
        self._transition_to(State.ABORTING_TRANSACTION)

    async def end_transaction(self) -> None:
        """EndTxn with the outcome of the state entered by begin_commit / begin_abort
        (skipped when nothing was added: the coordinator knows of no transaction), then,
        after an abort that needs it, InitProducerId with the current producer id and epoch
        to bump the epoch (KIP-360). Ends in READY."""
        committing = self._state is State.COMMITTING_TRANSACTION
        if not committing and self._state is not State.ABORTING_TRANSACTION:
            self.maybe_fail_with_error()
            raise TransactionStateError(f"Cannot end a transaction in state {self._state.value}")
        async with self._requests:
            deadline = _Deadline(self.max_block_ms, f"EndTxn({str(committing).lower()})")
            if self._transaction_started:
                await self._end_txn(committing, deadline)
            else:
                self._log.debug(
                    "Not sending EndTxn for completed transaction since no partitions or "
                    "offsets were successfully added"
                )
            self._partitions.clear()
            self._transaction_started = False
            if self._epoch_bump_required and not committing:
                deadline.operation = "InitProducerId"
                await self._init_producer_id(bump=True, deadline=deadline)
                self._epoch_bump_required = False
            self._transition_to(State.READY)

    def handle_failed_send(self, error: KafkaError) -> KafkaError:
        """A send of the transaction failed (Kafka's handleFailedBatch): fencing and
        authorization are fatal, anything else makes the transaction abortable, with an
        epoch bump at the abort since the partition's sequence may now have a gap. Returns
        the error to raise (ProducerFencedError when fenced)."""
        if error.code in _FENCED:
            return self._fenced()
        if error.code in _FATAL_PRODUCE:
            return self._fatal(error)
        # Kafka bumps only outside a commit and moves later sequences back instead; this
        # producer keeps no batches to move, so any failed send bumps the epoch at the abort
        return self._abortable(error, bump_epoch=True)

    # --- requests ---

    async def _coordinator(self, kind: CoordinatorType, key: str, deadline: _Deadline) -> int:
        node = self._coordinators.get((kind, key))
        if node is not None:
            return node
        try:
            node = await find_coordinator(
                self.client, key, kind, timeout_ms=deadline.remaining_ms(), context=""
            )
        except KafkaConnectionError:
            raise
        except KafkaError as e:
            if e.code in (*_MOVED, Errors.COORDINATOR_LOAD_IN_PROGRESS):
                raise deadline.expired() from e
            if e.code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                raise self._fatal(e) from None
            if e.code == Errors.GROUP_AUTHORIZATION_FAILED:
                raise self._abortable(e) from None
            raise self._fatal(
                KafkaError(
                    f"Could not find a coordinator with type {kind.name} with key {key} due to "
                    f"unexpected error: {e}"
                )
            ) from None
        self._coordinators[(kind, key)] = node
        return node

    async def _request(
        self,
        kind: CoordinatorType,
        key: str,
        api: ApiKey,
        body: Callable[[], Mapping[str, Any]],
        handle: Callable[[dict[str, Any]], _Outcome],
        deadline: _Deadline,
        backoff_ms: Callable[[], int] | None = None,
        version: int | None = None,
    ) -> None:
        """Send to the coordinator of `key` until `handle` says DONE (or raises); at
        `version` when given (a broker without it is a fatal error)."""
        while True:
            node = await self._coordinator(kind, key, deadline)
            try:
                if version is not None:
                    await self._require_version(node, api, version)
                response = await self.client.send_to_node(
                    node, api, body(), version=version, timeout_ms=max(1, deadline.remaining_ms())
                )
                outcome = handle(response)
            except (KafkaConnectionError, RequestTimedOutError, BrokerNotAvailableError) as e:
                if deadline.remaining_ms() == 0:
                    raise deadline.expired() from e
                self._log.debug("Disconnected from coordinator %d (%s). Will retry.", node, e)
                outcome = _Outcome.FIND_COORDINATOR
            if outcome is _Outcome.DONE:
                return
            if outcome is _Outcome.FIND_COORDINATOR:
                self._coordinators.pop((kind, key), None)
            await deadline.backoff(backoff_ms() if backoff_ms else self.retry_backoff_ms)

    async def _require_version(self, node: int, api: ApiKey, version: int) -> None:
        try:
            best = (await self.client.connection(node)).pick_version(api)
        except UnsupportedVersionError as e:
            raise self._fatal(e) from None
        if best < version:
            raise self._fatal(UnsupportedVersionError(
                f"Broker {node} does not support {api.name} version {version} (it supports up "
                f"to {best}): two-phase commit (KIP-939) needs a broker that does"
            ))  # fmt: skip

    async def _init_producer_id(
        self,
        *,
        bump: bool,
        deadline: _Deadline | None = None,
        enable_2pc: bool = False,
        keep_prepared_txn: bool = False,
    ) -> PreparedTxnState:
        """InitProducerId; returns the ongoing transaction a v6 answer names (KIP-939)."""
        deadline = deadline or _Deadline(self.max_block_ms, "InitProducerId")
        body = {
            "transactional_id": self.transactional_id,
            "transaction_timeout_ms": self.transaction_timeout_ms,
            "producer_id": self._producer_id if bump else NO_PRODUCER_ID,
            "producer_epoch": self._producer_epoch if bump else NO_PRODUCER_EPOCH,
            "enable2_pc": enable_2pc or (bump and self._two_phase_commit),
            "keep_prepared_txn": keep_prepared_txn,
        }
        ongoing = PreparedTxnState()

        def handle(r: dict[str, Any]) -> _Outcome:
            nonlocal ongoing
            code = r["error_code"]
            if code == Errors.NONE:
                self._producer_id, self._producer_epoch = r["producer_id"], r["producer_epoch"]
                ongoing = PreparedTxnState(
                    r.get("ongoing_txn_producer_id", NO_PRODUCER_ID),
                    r.get("ongoing_txn_producer_epoch", NO_PRODUCER_EPOCH),
                )
                self._log.info(
                    "ProducerId set to %d with epoch %d", self._producer_id, self._producer_epoch
                )
                return _Outcome.DONE
            if code in _MOVED:
                return _Outcome.FIND_COORDINATOR
            if code in _BUSY:
                return _Outcome.RETRY
            if code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and body["enable2_pc"]:
                raise self._fatal(error_for_code(code, (
                    f"Transactional id {self.transactional_id} may not use two-phase commit: "
                    "enable transaction.two.phase.commit.enable on the brokers, and with an "
                    "authorizer grant Write and TwoPhaseCommit on the transactional id"
                )))  # fmt: skip
            if code in (
                Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                Errors.CLUSTER_AUTHORIZATION_FAILED,
            ):
                raise self._fatal(error_for_code(code, r.get("error_message")))
            if code in _FENCED:
                raise self._fenced()
            if code == Errors.INVALID_TXN_STATE and keep_prepared_txn:
                raise self._fatal(error_for_code(code, (
                    f"The open transaction of {self.transactional_id} cannot be kept: it was "
                    "not begun with two-phase commit"
                )))  # fmt: skip
            raise self._fatal(
                KafkaError(f"Unexpected error in InitProducerIdResponse; {_text(code)}")
            )

        await self._request(
            CoordinatorType.TRANSACTION, self.transactional_id, ApiKey.INIT_PRODUCER_ID,
            lambda: body, handle, deadline, version=6 if body["enable2_pc"] else None,
        )  # fmt: skip
        return ongoing

    async def _add_partitions(self, partitions: set[TopicPartition], deadline: _Deadline) -> None:
        pending = set(partitions)
        first_in_transaction = not self._partitions

        def body() -> dict[str, Any]:
            topics: dict[str, list[int]] = {}
            for tp in sorted(pending):
                topics.setdefault(tp.topic, []).append(tp.partition)
            return {
                "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self._producer_id,
                "v3_and_below_producer_epoch": self._producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }

        backoff = self.retry_backoff_ms

        def handle(r: dict[str, Any]) -> _Outcome:
            nonlocal backoff
            backoff = self.retry_backoff_ms
            unauthorized: set[str] = set()
            errors: dict[TopicPartition, str] = {}
            added: list[TopicPartition] = []
            for t in r["results_by_topic_v3_and_below"]:
                for p in t["results_by_partition"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    code = p["partition_error_code"]
                    if code == Errors.NONE:
                        added.append(tp)
                    elif code in _MOVED:
                        return _Outcome.FIND_COORDINATOR
                    elif code == Errors.CONCURRENT_TRANSACTIONS:
                        if first_in_transaction:
                            backoff = ADD_PARTITIONS_RETRY_BACKOFF_MS
                        return _Outcome.RETRY
                    elif code in (
                        Errors.COORDINATOR_LOAD_IN_PROGRESS,
                        Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    ):
                        return _Outcome.RETRY
                    elif code in _FENCED:
                        raise self._fenced()
                    elif code in (
                        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        Errors.INVALID_TXN_STATE,
                    ):
                        raise self._fatal(error_for_code(code))
                    elif code == Errors.TOPIC_AUTHORIZATION_FAILED:
                        unauthorized.add(tp.topic)
                    elif code == Errors.OPERATION_NOT_ATTEMPTED:
                        continue
                    elif code in _PID_LOST:
                        raise self._abortable(error_for_code(code), bump_epoch=True)
                    else:
                        errors[tp] = Errors.for_code(code).name
            self._partitions.update(added)
            pending.difference_update(added)
            if added:
                self._transaction_started = True
            if unauthorized:
                raise self._abortable(
                    for_code(Errors.TOPIC_AUTHORIZATION_FAILED)(
                        f"Not authorized to access topics: {sorted(unauthorized)}"
                    )
                )
            if errors:
                raise self._abortable(
                    KafkaError(f"Could not add partitions to transaction due to errors: {errors}")
                )
            self._log.debug("Successfully added partitions %s to transaction", sorted(added))
            return _Outcome.DONE

        await self._request(
            CoordinatorType.TRANSACTION, self.transactional_id, ApiKey.ADD_PARTITIONS_TO_TXN,
            body, handle, deadline, lambda: backoff,
        )  # fmt: skip

    async def _add_offsets(self, group_id: str, deadline: _Deadline) -> None:
        body = {
            "transactional_id": self.transactional_id,
            "producer_id": self._producer_id,
            "producer_epoch": self._producer_epoch,
            "group_id": group_id,
        }

        def handle(r: dict[str, Any]) -> _Outcome:
            code = r["error_code"]
            if code == Errors.NONE:
                self._transaction_started = True
                return _Outcome.DONE
            if code in _MOVED:
                return _Outcome.FIND_COORDINATOR
            if code in _BUSY:
                return _Outcome.RETRY
            if code in _PID_LOST:
                raise self._abortable(error_for_code(code), bump_epoch=True)
            if code in _FENCED:
                raise self._fenced()
            if code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                raise self._fatal(error_for_code(code))
            if code == Errors.GROUP_AUTHORIZATION_FAILED:
                raise self._abortable(
                    error_for_code(code, f"Not authorized to access group: {group_id}")
                )
            raise self._fatal(
                KafkaError(f"Unexpected error in AddOffsetsToTxnResponse: {_text(code)}")
            )

        await self._request(
            CoordinatorType.TRANSACTION, self.transactional_id, ApiKey.ADD_OFFSETS_TO_TXN,
            lambda: body, handle, deadline,
        )  # fmt: skip

    async def _txn_offset_commit(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group: ConsumerGroupMetadata,
        deadline: _Deadline,
    ) -> None:
        pending = {
            tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }

        def body() -> dict[str, Any]:
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp in sorted(pending):
                o = pending[tp]
                topics.setdefault(tp.topic, []).append({
                    "partition_index": tp.partition, "committed_offset": o.offset,
                    "committed_leader_epoch": o.leader_epoch, "committed_metadata": o.metadata,
                })  # fmt: skip
            return {
                "transactional_id": self.transactional_id,
                "group_id": group.group_id,
                "producer_id": self._producer_id,
                "producer_epoch": self._producer_epoch,
                "generation_id": group.generation_id,
                "member_id": group.member_id,
                "group_instance_id": group.group_instance_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }

        def handle(r: dict[str, Any]) -> _Outcome:
            outcome = _Outcome.DONE
            for t in r["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    code = p["error_code"]
                    if code == Errors.NONE:
                        pending.pop(tp, None)
                    elif code in (*_MOVED, Errors.REQUEST_TIMED_OUT):
                        outcome = _Outcome.FIND_COORDINATOR
                    elif code in (
                        Errors.UNKNOWN_TOPIC_OR_PARTITION,
                        Errors.COORDINATOR_LOAD_IN_PROGRESS,
                    ):
                        if outcome is _Outcome.DONE:
                            outcome = _Outcome.RETRY
                    elif code == Errors.GROUP_AUTHORIZATION_FAILED:
                        raise self._abortable(
                            error_for_code(
                                code, f"Not authorized to access group: {group.group_id}"
                            )
                        )
                    elif code == Errors.FENCED_INSTANCE_ID:
                        raise self._abortable(error_for_code(code))
                    elif code in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
                        raise self._abortable(error_for_code(
                            code,
                            "Transaction offset Commit failed due to consumer group metadata "
                            f"mismatch: {_text(code)}",
                        ))  # fmt: skip
                    elif code in _FENCED:
                        raise self._fenced()
                    elif code in (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                  Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT):  # fmt: skip
                        raise self._fatal(error_for_code(code))
                    else:
                        raise self._fatal(
                            KafkaError(
                                f"Unexpected error in TxnOffsetCommitResponse: {_text(code)}"
                            )
                        )
            return outcome if pending else _Outcome.DONE

        await self._request(
            CoordinatorType.GROUP, group.group_id, ApiKey.TXN_OFFSET_COMMIT, body, handle, deadline
        )

    async def _end_txn(self, committed: bool, deadline: _Deadline) -> None:
        body = {
            "transactional_id": self.transactional_id,
            "producer_id": self._producer_id,
            "producer_epoch": self._producer_epoch,
            "committed": committed,
        }

        def handle(r: dict[str, Any]) -> _Outcome:
            code = r["error_code"]
            if code == Errors.NONE:
                return _Outcome.DONE
            if code in _MOVED:
                return _Outcome.FIND_COORDINATOR
            if code in _BUSY:
                return _Outcome.RETRY
            if code in _FENCED:
                raise self._fenced()
            if code in (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Errors.INVALID_TXN_STATE):
                raise self._fatal(error_for_code(code))
            if code in _PID_LOST:
                raise self._abortable(error_for_code(code), bump_epoch=True)
            raise self._fatal(KafkaError(f"Unhandled error in EndTxnResponse: {_text(code)}"))

        await self._request(
            CoordinatorType.TRANSACTION, self.transactional_id, ApiKey.END_TXN,
            lambda: body, handle, deadline,
        )  # fmt: skip


def _text(code: int) -> str:
    return Errors.for_code(code).message
