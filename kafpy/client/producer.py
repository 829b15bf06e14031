"""BatchProducer: writes records to a topic in batches cut by `batch.size`.

A small producer for kafpy's tools (console-producer, the Spark writer, tests,
benchmarks): each `send` call partitions its records (Kafka's default partitioner for
keys, one sticky partition for the records without a key), cuts each partition's records
into batches of at most `batch.size` bytes (a larger record gets a batch of its own, as
Kafka's RecordAccumulator does), and sends them in Produce requests of at most
`max.request.size` bytes, one batch per partition per request (the broker takes one v2
batch per partition per request). A record larger than `max.request.size` is refused
before sending; a batch the broker refuses as too large (MESSAGE_TOO_LARGE) is split and
sent again, so a record too large fails alone and its neighbours are delivered.
Partitions failing with a retriable error (NOT_LEADER_OR_FOLLOWER, a lost connection, ...)
are retried after a metadata refresh, up to `retries` times and until `delivery.timeout.ms`
has passed since the send began; as in Kafka's Sender, a batch whose leader cannot be
connected to (a broker restarting) is not sent and waits without using a retry, and a
batch still undelivered at the deadline fails with Kafka's "Expiring N record(s)" timeout.
With `init_producer_id()` the producer is idempotent (a producer id and sequence numbers
per partition). It keeps no batches in memory between calls.

With a `transactional_id` it is Kafka's transactional producer: `init_transactions()`, then
`begin_transaction()`, sends (each partition added to the transaction before its first
batch, through the TransactionManager), `send_offsets_to_transaction()`, and
`commit_transaction()` or `abort_transaction()`, which wait for the sends in flight first.
KIP-939's two-phase commit: `init_transactions(enable_2pc=True)`, then
`prepare_transaction()` instead of a commit; another producer of the same id,
`init_transactions(enable_2pc=True, keep_prepared_txn=True)`, takes the prepared
transaction over and `complete_transaction(state)` commits or aborts it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.client.consumer_group_metadata import ConsumerGroupMetadata, OffsetAndMetadata
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.partitioner import StickyPartitioner, partition_for_key
from kafpy.client.response_errors import error_for_code
from kafpy.client.transaction_manager import (
    PreparedTxnState,
    State,
    TransactionManager,
    TransactionStateError,
)
from kafpy.common.errors import (
    InvalidTxnStateError,
    KafkaConnectionError,
    KafkaError,
    LeaderNotAvailableError,
    MessageTooLargeError,
    RequestTimedOutError,
)
from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.compression import CompressionType
from kafpy.records.record import Header
from kafpy.records.record_batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, RECORD_BATCH_OVERHEAD

ProducerRecord = (
    tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Sequence[Header]]
)

ACKS_NAMES = {"all": -1, "-1": -1, "0": 0, "1": 1}
DEFAULT_BATCH_SIZE = 16384  # Kafka's batch.size
DEFAULT_MAX_REQUEST_SIZE = 1048576  # Kafka's max.request.size
DEFAULT_DELIVERY_TIMEOUT_MS = 120000  # Kafka's delivery.timeout.ms
# the most a record adds to a batch besides its key, value and headers: length varint (5),
# attributes (1), timestamp delta varlong (10), offset delta varint (5), key and value
# length varints (5 each), header count varint (5)
_RECORD_OVERHEAD_UPPER_BOUND = 36
_HEADER_OVERHEAD_UPPER_BOUND = 10  # a header's key and value length varints


def parse_acks(value: str | int) -> int:
    """Kafka's `acks` setting: all / -1 / 0 / 1."""
    acks = ACKS_NAMES.get(str(value).strip().lower())
    if acks is None:
        raise ValueError(f"Invalid value {value!r} for acks: expected all, -1, 0 or 1")
    return acks


def record_size_upper_bound(record: ProducerRecord) -> int:
    """The most bytes `record` can take in a batch (Kafka's DefaultRecord size bound)."""
    size = _RECORD_OVERHEAD_UPPER_BOUND + len(record[0] or b"") + len(record[1] or b"")
    if len(record) > 2:
        for name, value in record[2]:
            size += _HEADER_OVERHEAD_UPPER_BOUND + len(name.encode()) + len(value or b"")
    return size


@dataclass(frozen=True)
class ProduceResult:
    """Where one batch landed: its first offset (-1 with acks=0)."""

    tp: TopicPartition
    base_offset: int
    record_count: int
    log_append_time: int = -1


class RecordsNotDeliveredError(KafkaError):
    """Some records of a send were not delivered; every other record of it was.

    `errors` holds (index of the record in the records sent, its error) for each record
    not delivered, in order; `results` where the delivered batches landed. The message,
    code and retriability are those of the first error."""

    def __init__(self, errors: list[tuple[int, KafkaError]], results: list[ProduceResult]) -> None:
        first = errors[0][1]
        more = len(errors) - 1
        message = str(first)
        if more:
            message += f" ({more} more record{'s' if more > 1 else ''} not delivered)"
        super().__init__(message)
        self.errors = errors
        self.results = results
        self.code = first.code
        self.retriable = first.retriable


class DeliveryTimeoutError(RequestTimedOutError):
    """Kafka's TimeoutException for a batch not delivered within delivery.timeout.ms."""


@dataclass
class _Batch:
    """Records on their way to one partition, built on first send (so an idempotent
    batch gets its sequence then) and kept as built for retries."""

    tp: TopicPartition
    records: list[tuple[int, ProducerRecord]]  # (index in the send, record)
    data: bytes | None = None
    attempts: int = 0


class BatchProducer:
    """Sends records in batches and waits for the acknowledgements asked for.

    Parameters: `acks` (-1 all in-sync replicas, 1 leader, 0 no answer), `compression`,
    `timeout_ms` (the Produce request's ack timeout), `batch_size` (Kafka's `batch.size`,
    the bytes of records one batch holds at most, default 16384), `max_request_size`
    (Kafka's `max.request.size`, the largest Produce request and so the largest record,
    default 1048576), `delivery_timeout_ms` (Kafka's `delivery.timeout.ms`, how long a
    send may take, its retries included, default 120000), `retries` (how often a batch
    failing with a retriable error is resent, within the delivery timeout; default the
    client's `retries`), `time` (timestamps and the delivery deadline); for transactions
    `transactional_id`, `transaction_timeout_ms` and `max_block_ms` (Kafka's keys, default
    60000 each), with which `acks` must be -1 (its default then).
    Raises RecordsNotDeliveredError naming the records not delivered (a record too large,
    a partition's error once retries are used up) after delivering all the others. In a
    transaction such a failure makes the transaction abortable; a send that fences or
    otherwise ends the producer raises that error (ProducerFencedError) instead."""

    def __init__(
        self,
        client: KafkaClient,
        *,
        acks: int | None = None,
        compression: CompressionType = CompressionType.NONE,
        timeout_ms: int = 30000,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
        time: Time = SYSTEM_TIME,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        max_block_ms: int = 60000,
        delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS,
        retries: int | None = None,
    ) -> None:
        if acks is None:
            acks = 1 if transactional_id is None else -1
        if acks not in (-1, 0, 1):
            raise ValueError(f"Invalid value {acks} for acks: expected -1, 0 or 1")
        if batch_size < 0:
            raise ValueError(f"Invalid value {batch_size} for batch.size: expected 0 or more")
        if max_request_size < 1:
            raise ValueError(
                f"Invalid value {max_request_size} for max.request.size: expected 1 or more"
            )
        if delivery_timeout_ms < 0:
            raise ValueError(
                f"Invalid value {delivery_timeout_ms} for delivery.timeout.ms: expected 0 or more"
            )
        if retries is not None and retries < 0:
            raise ValueError(f"Invalid value {retries} for retries: expected 0 or more")
        if transactional_id is not None and acks != -1:
            raise ValueError(
                "Must set acks to all in order to use the idempotent producer. Otherwise we "
                "cannot guarantee idempotence."
            )
        self.client = client
        self.acks = acks
        self.compression = compression
        self.timeout_ms = timeout_ms
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        self.delivery_timeout_ms = delivery_timeout_ms
        self._retries = retries
        self.time = time
        self._log = component_logger(__name__, "BatchProducer", client.client_id)
        # the idempotent producer's id and epoch; with transactions (whose id and epoch
        # the TransactionManager holds) the epoch the sequences count from
        self._producer_id = NO_PRODUCER_ID
        self._producer_epoch = NO_PRODUCER_EPOCH
        self._sequences: dict[TopicPartition, int] = {}
        self._sticky = StickyPartitioner()
        self.transaction_manager: TransactionManager | None = None
        if transactional_id is not None:
            self.transaction_manager = TransactionManager(
                client,
                transactional_id,
                transaction_timeout_ms=transaction_timeout_ms,
                max_block_ms=max_block_ms,
            )
        self._in_flight = 0
        self._flushed: asyncio.Event | None = None
        self._partition_locks: dict[TopicPartition, asyncio.Lock] = {}

    @property
    def retries(self) -> int:
        """How often a batch failing with a retriable error is resent (the client's
        `retries` unless given)."""
        return self.client.retries if self._retries is None else self._retries

    @property
    def producer_id(self) -> int:
        """The producer id (-1 before init_producer_id / init_transactions)."""
        tm = self.transaction_manager
        return self._producer_id if tm is None else tm.producer_id

    @property
    def producer_epoch(self) -> int:
        """The producer's epoch (-1 before init_producer_id / init_transactions)."""
        tm = self.transaction_manager
        return self._producer_epoch if tm is None else tm.producer_epoch

    @property
    def transactional_id(self) -> str | None:
        tm = self.transaction_manager
        return None if tm is None else tm.transactional_id

    def _transactions(self) -> TransactionManager:
        if self.transaction_manager is None:
            raise TransactionStateError(
                "Cannot use transactional methods without enabling transactions by setting "
                "the transactional.id configuration property"
            )
        return self.transaction_manager

    async def init_transactions(
        self, *, enable_2pc: bool = False, keep_prepared_txn: bool = False
    ) -> PreparedTxnState:
        """Get the producer id and epoch of the transactional id (fencing its older
        producers and having the coordinator finish their open transaction). Call once,
        before the first transaction; called again after a timeout, it resumes.

        KIP-939: `enable_2pc` for two-phase commit (InitProducerId v6; the brokers need
        `transaction.two.phase.commit.enable`, else TransactionalIdAuthorizationFailedError);
        with `keep_prepared_txn` a prepared transaction left by an earlier producer of the
        id is kept, for `complete_transaction`. Returns the kept transaction's state (empty,
        `producer_id` -1, when there was none)."""
        tm = self._transactions()
        await self.client.start()
        kept = await tm.initialize(enable_2pc=enable_2pc, keep_prepared_txn=keep_prepared_txn)
        self._new_epoch()
        return kept

    async def prepare_transaction(self) -> PreparedTxnState:
        """KIP-939's prepareTransaction: wait for the sends in flight and leave the
        transaction open, prepared (no EndTxn; it never times out). Returns its state
        (producer id, epoch), which whoever completes it compares (`complete_transaction`).
        Needs `init_transactions(enable_2pc=True)`; raises if a send failed."""
        tm = self._transactions()
        if not tm.is_two_phase_commit or tm.state is not State.IN_TRANSACTION:
            tm.prepare()  # raises the error that says why
        await self.flush()
        return tm.prepare()

    @property
    def prepared_transaction_state(self) -> PreparedTxnState:
        """The prepared transaction this producer holds (empty when none)."""
        return self._transactions().prepared_transaction_state

    async def complete_transaction(self, prepared: PreparedTxnState) -> bool:
        """KIP-939's completeTransaction: commit the prepared transaction if it is the one
        `prepared` names (same producer id and epoch), abort it otherwise. Returns True when
        it committed. Raises InvalidTxnStateError when no transaction is prepared (after
        `init_transactions(keep_prepared_txn=True)` found none open)."""
        tm = self._transactions()
        if tm.state is not State.PREPARED_TRANSACTION:
            tm.maybe_fail_with_error()
            raise InvalidTxnStateError(
                "Cannot complete transaction because no transaction has been prepared. Call "
                "prepare_transaction() first, or make sure init_transactions(enable_2pc=True, "
                "keep_prepared_txn=True) found one."
            )
        if tm.prepared_transaction_state == prepared:
            await self.commit_transaction()
            return True
        await self.abort_transaction()
        return False

    def begin_transaction(self) -> None:
        """Open a transaction: the sends until commit or abort belong to it."""
        self._transactions().begin()

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group: ConsumerGroupMetadata | str,
    ) -> None:
        """Commit `offsets` (the next offset to read of each partition) for the consumer
        group `group` (its metadata, or its id alone) with the transaction: readers see
        them committed once the transaction commits, never if it aborts."""
        metadata = ConsumerGroupMetadata(group) if isinstance(group, str) else group
        await self._transactions().send_offsets(offsets, metadata)

    async def commit_transaction(self) -> None:
        """Wait for the sends in flight, then commit (EndTxn). If a send failed, the
        transaction is abortable and this raises; only abort_transaction() is then allowed."""
        tm = self._transactions()
        tm.begin_commit()
        await self.flush()
        await tm.end_transaction()
        if self.producer_epoch != self._producer_epoch:
            self._new_epoch()

    async def abort_transaction(self) -> None:
        """Wait for the sends in flight, then abort (EndTxn): readers with
        isolation.level=read_committed never see the transaction's records."""
        tm = self._transactions()
        tm.begin_abort()
        await self.flush()
        await tm.end_transaction()
        if self.producer_epoch != self._producer_epoch:
            self._new_epoch()

    def _new_epoch(self) -> None:
        """The epoch was bumped: sequences start again from 0 in every partition."""
        self._producer_epoch = self.producer_epoch
        self._sequences.clear()

    async def flush(self) -> None:
        """Return once every send in flight has finished (delivered or failed)."""
        while self._in_flight:
            if self._flushed is None:
                self._flushed = asyncio.Event()
            await self._flushed.wait()

    async def init_producer_id(self) -> None:
        """Become idempotent: get a producer id (InitProducerId without a transactional
        id) and number each partition's batches from sequence 0, so a retried Produce is
        not written twice."""
        if self.transaction_manager is not None:
            raise TransactionStateError(
                "A transactional producer gets its producer id from init_transactions()"
            )
        await self.client.start()
        init = await self.client.send_to_any(
            ApiKey.INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout_ms": 60000}
        )
        if init["error_code"]:
            raise error_for_code(init["error_code"], None, "Getting an idempotent producer id")
        self._producer_id, self._producer_epoch = init["producer_id"], init["producer_epoch"]
        self._sequences.clear()

    async def partitions_for(self, topic: str) -> list[int]:
        """The topic's partitions, asking for metadata (which may auto-create the topic)
        until it has some."""
        for tries_left in range(self.client.retries, -1, -1):
            partitions = self.client.cluster.partitions_for(topic)
            if partitions:
                return partitions
            await self.client.refresh_metadata([topic], allow_auto_topic_creation=True)
            info = self.client.cluster.topic(topic)
            if info is not None and info.partitions and info.error_code == Errors.NONE:
                return sorted(info.partitions)
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error_code
            if (code and not Errors.for_code(code).retriable) or tries_left == 0:
                if code == Errors.NONE:
                    raise LeaderNotAvailableError(f"Topic {topic} has no partitions yet.")
                raise error_for_code(code, None, f"Getting metadata of topic {topic}")
            await self.client.backoff()
        raise AssertionError("unreachable")

    async def send(
        self,
        topic: str,
        records: Sequence[ProducerRecord],
        *,
        partition: int | None = None,
    ) -> list[ProduceResult]:
        """Produce `records` ((key, value) or (key, value, headers)) to `topic`, to
        `partition` if given; returns where each batch was written, in the order sent.
        Raises RecordsNotDeliveredError (indexes into `records`) if some were not."""
        with self._counted():
            return await self._send_to_topic(topic, records, partition)

    async def _send_to_topic(
        self, topic: str, records: Sequence[ProducerRecord], partition: int | None
    ) -> list[ProduceResult]:
        await self.client.start()
        partitions = await self.partitions_for(topic)
        by_partition: dict[TopicPartition, list[tuple[int, ProducerRecord]]] = {}
        sticky: int | None = None
        for index, record in enumerate(records):
            if partition is not None:
                p = partition
            elif record[0] is not None:
                p = partitions[partition_for_key(record[0], len(partitions))]
            else:
                if sticky is None:
                    sticky = partitions[self._sticky.next_partition(len(partitions))]
                p = sticky
            by_partition.setdefault(TopicPartition(topic, p), []).append((index, record))
        return await self._send_indexed(by_partition)

    async def send_records(
        self, records: Mapping[TopicPartition, Sequence[ProducerRecord]]
    ) -> list[ProduceResult]:
        """Produce records already assigned to partitions. A failure's index counts the
        records in the mapping's order ({tp0: [r0, r1], tp1: [r2]})."""
        with self._counted():
            return await self._send_records(records)

    async def _send_records(
        self, records: Mapping[TopicPartition, Sequence[ProducerRecord]]
    ) -> list[ProduceResult]:
        await self.client.start()
        indexed: dict[TopicPartition, list[tuple[int, ProducerRecord]]] = {}
        index = 0
        for tp, recs in records.items():
            indexed[tp] = list(enumerate(recs, index))
            index += len(recs)
        return await self._send_indexed(indexed)

    def _cut(
        self,
        tp: TopicPartition,
        records: list[tuple[int, ProducerRecord]],
        errors: list[tuple[int, KafkaError]],
    ) -> deque[_Batch]:
        """Kafka's RecordAccumulator: a batch holds records up to batch.size bytes; a
        record larger than that gets a batch of its own; one larger than
        max.request.size is refused."""
        batches: deque[_Batch] = deque()
        current: list[tuple[int, ProducerRecord]] = []
        size = RECORD_BATCH_OVERHEAD
        for index, record in records:
            try:
                record_size = self.ensure_valid_record_size(record)
            except MessageTooLargeError as e:
                errors.append((index, e))
                continue
            if current and size + record_size > self.batch_size:
                batches.append(_Batch(tp, current))
                current, size = [], RECORD_BATCH_OVERHEAD
            current.append((index, record))
            size += record_size
        if current:
            batches.append(_Batch(tp, current))
        return batches

    def ensure_valid_record_size(self, record: ProducerRecord) -> int:
        """The record's size bound in a batch; raises MessageTooLargeError (as Kafka's
        producer does before sending) if even a batch of its own would be larger than
        max.request.size."""
        record_size = record_size_upper_bound(record)
        if RECORD_BATCH_OVERHEAD + record_size > self.max_request_size:
            raise MessageTooLargeError(
                f"The message is {RECORD_BATCH_OVERHEAD + record_size} bytes when serialized "
                f"which is larger than {self.max_request_size}, which is the value of the "
                "max.request.size configuration."
            )
        return record_size

    def _build(self, batch: _Batch, now: int) -> bytes:
        if batch.data is None:
            idempotent = self.producer_id != NO_PRODUCER_ID
            builder = RecordBatchBuilder(
                compression=self.compression,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self._sequences.get(batch.tp, 0) if idempotent else -1,
                is_transactional=self.transaction_manager is not None,
            )
            for _, record in batch.records:
                builder.append(now, record[0], record[1], record[2] if len(record) > 2 else ())
            batch.data = builder.build()
        return batch.data

    def _requests(self, batches: list[_Batch]) -> list[list[_Batch]]:
        """Kafka's drain: batches into requests of at most max.request.size bytes (each
        request takes at least one batch)."""
        requests: list[list[_Batch]] = []
        size = 0
        for batch in batches:
            assert batch.data is not None
            if not requests or size + len(batch.data) > self.max_request_size:
                requests.append([])
                size = 0
            requests[-1].append(batch)
            size += len(batch.data)
        return requests

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count a send in flight (for flush) from its first step to its last; in a
        transaction, only while the transaction is open."""
        if self.transaction_manager is not None:
            self.transaction_manager.fail_if_not_ready_for_send()
        self._in_flight += 1
        if self._flushed is not None:
            self._flushed.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight and self._flushed is not None:
                self._flushed.set()

    async def _send_indexed(
        self, records: Mapping[TopicPartition, list[tuple[int, ProducerRecord]]]
    ) -> list[ProduceResult]:
        """Without a transaction, just send; in one, add the partitions first, and let a
        failure make the transaction abortable (or the producer unusable)."""
        tm = self.transaction_manager
        if tm is None:
            return await self._send_in_sequence(records)
        try:
            await tm.maybe_add_partitions(records.keys())
            return await self._send_in_sequence(records)
        except TransactionStateError:
            raise
        except RecordsNotDeliveredError as e:
            error = tm.handle_failed_send(e.errors[0][1])
            if tm.state is State.FATAL_ERROR:
                raise error from e
            raise
        except KafkaError as e:
            if tm.last_error is not e:  # not already classed by the TransactionManager
                tm.handle_failed_send(e)
            raise

    async def _send_in_sequence(
        self, records: Mapping[TopicPartition, list[tuple[int, ProducerRecord]]]
    ) -> list[ProduceResult]:
        """An idempotent producer's sends run one at a time per partition (their
        partitions locked in order, so concurrent sends never deadlock): a partition's
        sequence numbers then go to the broker in order, retries included."""
        if self.producer_id == NO_PRODUCER_ID:
            return await self._send_batches_of(records)
        async with contextlib.AsyncExitStack() as locked:
            for tp in sorted(records):
                await locked.enter_async_context(
                    self._partition_locks.setdefault(tp, asyncio.Lock())
                )
            return await self._send_batches_of(records)

    async def _send_batches_of(
        self, records: Mapping[TopicPartition, list[tuple[int, ProducerRecord]]]
    ) -> list[ProduceResult]:
        """Send each partition's batches in order, one batch per partition in flight,
        until each is delivered, fails, or delivery.timeout.ms has passed since now."""
        created = self.time.milliseconds()  # the records' timestamp and the deadline's start
        errors: list[tuple[int, KafkaError]] = []
        queues = {tp: self._cut(tp, recs, errors) for tp, recs in records.items()}
        results: list[ProduceResult] = []
        while True:
            if any(queues.values()) and self._expired(created):
                self._expire(queues, created, errors)
            heads = [queue[0] for queue in queues.values() if queue]
            if not heads:
                break
            by_leader: dict[int, list[_Batch]] = {}
            outcomes: list[tuple[_Batch, ProduceResult | KafkaError]] = []
            unreachable: dict[int, KafkaConnectionError] = {}
            waiting = False
            for batch in heads:
                # as Kafka's Sender, a batch with no broker to ask for its leader, or whose
                # leader cannot be connected to, is not sent and waits: not an attempt
                try:
                    leader = await self.client.leader_for(batch.tp)
                    if leader not in unreachable:
                        try:
                            await self.client.connection(leader)
                        except KafkaConnectionError as e:
                            unreachable[leader] = e
                except KafkaConnectionError as e:
                    waiting = True
                    self._log.debug("%s waits for metadata: %s", batch.tp, e)
                    continue
                except KafkaError as e:
                    outcomes.append((batch, e))
                    continue
                if leader in unreachable:
                    waiting = True
                    self._log.debug(
                        "%s waits for broker %d: %s", batch.tp, leader, unreachable[leader]
                    )
                    continue
                self._build(batch, created)
                by_leader.setdefault(leader, []).append(batch)
            sends = [
                (leader, request)
                for leader, batches in by_leader.items()
                for request in self._requests(batches)
            ]
            answers = await asyncio.gather(
                *(self._produce(leader, request) for leader, request in sends),
                return_exceptions=True,
            )
            for (_, request), answer in zip(sends, answers, strict=True):
                if isinstance(answer, BaseException):
                    if not isinstance(answer, KafkaError):
                        raise answer
                    outcomes.extend((batch, answer) for batch in request)
                else:
                    outcomes.extend((batch, answer[batch.tp]) for batch in request)
            retry_topics = {batch.tp.topic for batch in heads} if waiting else set()
            for batch, outcome in outcomes:
                if self._settle(batch, outcome, queues[batch.tp], created, results, errors):
                    retry_topics.add(batch.tp.topic)
            if retry_topics:
                await self.client.backoff()
                try:
                    await self.client.refresh_metadata(sorted(retry_topics))
                except KafkaError as e:
                    # the brokers may be restarting: the next round waits or retries again,
                    # until the delivery deadline
                    self._log.debug("metadata refresh before a retry failed: %s", e)
        if errors:
            errors.sort(key=lambda e: e[0])
            raise RecordsNotDeliveredError(errors, results)
        return results

    def _expired(self, created: int) -> bool:
        """Kafka's ProducerBatch.hasReachedDeliveryTimeout."""
        return self.delivery_timeout_ms <= self.time.milliseconds() - created

    def _expire(
        self,
        queues: Mapping[TopicPartition, deque[_Batch]],
        created: int,
        errors: list[tuple[int, KafkaError]],
    ) -> None:
        """Fail every batch not yet delivered with Kafka's delivery timeout error."""
        elapsed = self.time.milliseconds() - created
        for tp, queue in queues.items():
            while queue:
                batch = queue.popleft()
                error = DeliveryTimeoutError(
                    f"Expiring {len(batch.records)} record(s) for {tp}:{elapsed} ms has passed "
                    "since batch creation"
                )
                errors.extend((index, error) for index, _ in batch.records)

    def _settle(
        self,
        batch: _Batch,
        outcome: ProduceResult | KafkaError,
        queue: deque[_Batch],
        created: int,
        results: list[ProduceResult],
        errors: list[tuple[int, KafkaError]],
    ) -> bool:
        """Take one batch's outcome: delivered, split (too large), failed, or to retry
        (True: it stays at its queue's head, built as it is, so keeping its sequence)."""
        if isinstance(outcome, ProduceResult):
            queue.popleft()
            results.append(outcome)
            if self.producer_id != NO_PRODUCER_ID:
                self._sequences[batch.tp] = self._sequences.get(batch.tp, 0) + outcome.record_count
        elif isinstance(outcome, MessageTooLargeError) and len(batch.records) > 1:
            # KIP-126: the broker takes smaller batches than we cut; split in two
            queue.popleft()
            half = len(batch.records) // 2
            for part in (batch.records[half:], batch.records[:half]):
                queue.appendleft(_Batch(batch.tp, part))
        elif outcome.retriable and batch.attempts < self.retries:
            # past the deadline the next round expires it (Kafka's canRetry checks both)
            batch.attempts += 1
            return True
        else:
            queue.popleft()
            errors.extend((index, outcome) for index, _ in batch.records)
        return False

    async def send_batches(
        self, batches: dict[TopicPartition, tuple[bytes, int]]
    ) -> list[ProduceResult]:
        """Send ready-made batches ({tp: (batch bytes, record count)}, each within
        max.request.size), retrying the partitions that fail with a retriable error; the
        first error left once retries are used up is raised. Not for a transactional
        producer, which builds its batches itself."""
        if self.transaction_manager is not None:
            raise TransactionStateError(
                "A transactional producer sends records, not ready-made batches: their "
                "producer id and sequences are its own"
            )
        pending = dict(batches)
        results: dict[TopicPartition, ProduceResult] = {}
        for tries_left in range(self.client.retries, -1, -1):
            failed: dict[TopicPartition, KafkaError] = {}
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                try:
                    by_leader.setdefault(await self.client.leader_for(tp), []).append(tp)
                except KafkaError as e:
                    failed[tp] = e
            outcomes = await asyncio.gather(
                *(
                    self._produce_ready(leader, {tp: pending[tp] for tp in tps})
                    for leader, tps in by_leader.items()
                ),
                return_exceptions=True,
            )
            for (_, tps), outcome in zip(by_leader.items(), outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, KafkaError):
                        raise outcome
                    failed.update(dict.fromkeys(tps, outcome))
                    continue
                for tp in tps:
                    got = outcome[tp]
                    if isinstance(got, KafkaError):
                        failed[tp] = got
                    else:
                        results[tp] = got
            if not failed:
                break
            fatal = [(tp, e) for tp, e in failed.items() if not e.retriable]
            if fatal or tries_left == 0:
                tp, error = (fatal or list(failed.items()))[0]
                raise error
            pending = {tp: pending[tp] for tp in failed}
            await self.client.backoff()
            await self.client.refresh_metadata(sorted({tp.topic for tp in failed}))
        return [results[tp] for tp in batches]

    async def _produce(
        self, leader: int, batches: list[_Batch]
    ) -> dict[TopicPartition, ProduceResult | KafkaError]:
        ready: dict[TopicPartition, tuple[bytes, int]] = {}
        for batch in batches:
            assert batch.data is not None
            ready[batch.tp] = (batch.data, len(batch.records))
        return await self._produce_ready(leader, ready)

    async def _produce_ready(
        self, leader: int, batches: dict[TopicPartition, tuple[bytes, int]]
    ) -> dict[TopicPartition, ProduceResult | KafkaError]:
        """One Produce request to `leader`: each partition's outcome."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, (data, _) in batches.items():
            topics.setdefault(tp.topic, []).append({"index": tp.partition, "records": data})
        body = {
            "transactional_id": self.transactional_id,
            "acks": self.acks,
            "timeout_ms": self.timeout_ms,
            "topic_data": [
                {"name": name, "partition_data": parts} for name, parts in topics.items()
            ],
        }
        conn = await self.client.connection(leader)
        if self.acks == 0:
            await conn.send_no_response(ApiKey.PRODUCE, body)
            return {tp: ProduceResult(tp, -1, count) for tp, (_, count) in batches.items()}
        response = await conn.send(ApiKey.PRODUCE, body)
        outcome: dict[TopicPartition, ProduceResult | KafkaError] = {}
        for t in response["responses"]:
            for p in t["partition_responses"]:
                tp = TopicPartition(t["name"], p["index"])
                if tp not in batches:
                    continue
                if p["error_code"]:
                    outcome[tp] = error_for_code(
                        p["error_code"], p.get("error_message"), f"Producing to {tp}"
                    )
                else:
                    outcome[tp] = ProduceResult(
                        tp, p["base_offset"], batches[tp][1], p.get("log_append_time_ms", -1)
                    )
        for tp in batches:
            if tp not in outcome:
                outcome[tp] = KafkaError(
                    f"The Produce response from broker {leader} left out {tp}."
                )
        return outcome
