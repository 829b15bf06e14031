"""The exactly-once protocol of the kafpy sink (`.option("exactlyOnce", "true")`).

Spark's writes have two phases: every task writes and returns a commit message, then the
driver commits the job (or aborts it). Kafka transactions with KIP-939's two-phase commit
follow the same shape. The brokers must run with `transaction.two.phase.commit.enable=true`.

Transactional ids. Task `p` of a write uses the id `<prefix>-<p>`. The prefix is the
`transactionalIdPrefix` option, or `kafpy-sink-<query id>` for a streaming query (Spark's
query id, kept in the checkpoint, so it is the same after a restart), or
`kafpy-sink-<random>` for one batch `.write`. The id is the same for every attempt of a
task, so a retried or speculative attempt's InitProducerId fences the earlier attempt and
aborts what it left open.

A task (micro-batch B, partition p):
1. `init_transactions(enable_2pc=True)`. This aborts any transaction the id left open: an
   earlier attempt's, or one a crashed driver never completed.
2. Streaming only: reads the committed offsets of the consumer group named like the
   transactional id. The group's offset is the last micro-batch whose transaction
   committed, and its metadata names the query that committed it (Spark's query id, kept
   in the checkpoint). If it is this query's and B or later, B's rows of this partition
   are already in Kafka (the driver died after committing them and before Spark recorded
   the batch), so the task writes nothing and says so. An offset another query committed
   does not count: a query whose checkpoint was deleted is a new query, with a new query
   id and batch ids from 0 again, and with a fixed `transactionalIdPrefix` it finds the
   old query's higher batch ids in the groups; it writes its batches all the same.
3. Begins a transaction, writes its rows, and commits the group's offset (B for a stream,
   with the query id in its metadata; the job's random token for a batch write) into the
   same transaction
   (`send_offsets_to_transaction`, on partition 0 of the first topic written: a group
   offset needs an existing partition), so the offset is committed exactly when the rows are.
4. `prepare_transaction()` and returns (transactional id, producer id, epoch). A task
   with no rows opens no transaction.

The driver, `commit(messages, B)`: for each prepared transaction, a producer of its id runs
`init_transactions(enable_2pc=True, keep_prepared_txn=True)` and
`complete_transaction(prepared)`: commit when the kept transaction is the one the task
prepared. If it is another (a later attempt prepared it and this message is stale), it is
aborted and the batch fails. If none is open, the group's offset says whether it committed
(fine) or was aborted (the batch fails). A failed batch loses nothing: the restarted query
replays it. `abort(messages, B)` aborts every transaction of the batch, including those of
tasks that failed (their ids follow from the prefix and the partition number).

Restarting after a driver crash. Spark replays the last batch that is in its offset log
but not in its commit log. Each task of the replay either finds its partition committed
(step 2) and skips it, or aborts what was left (step 1) and writes again. So every row of
B is in Kafka once, whether the crash came before, during or after the driver's commits.

Readers must read with `kafka.isolation.level=read_committed`. A read_uncommitted reader
also sees the records of aborted attempts.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from kafpy.client.consumer_group_admin import ConsumerGroupAdmin
from kafpy.client.consumer_group_metadata import OffsetAndMetadata
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import DEFAULT_DELIVERY_TIMEOUT_MS, BatchProducer
from kafpy.client.transaction_manager import PreparedTxnState
from kafpy.common.errors import Errors, KafkaError, ProducerFencedError
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.compression import CompressionType
from kafpy.spark.errors import OptionError

SINK_PREFIX = "kafpy-sink"
QUERY_ID_PROPERTY = "sql.streaming.queryId"  # Spark's StreamExecution.QUERY_ID_KEY
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # Spark's StreamExecution.BATCH_ID_KEY

_log = component_logger(__name__, "ExactlyOnceSink")


class SinkTransactionError(RuntimeError):
    """A transaction of the sink cannot be completed as the protocol needs: the batch
    fails, and the restarted query replays it."""


@dataclass(frozen=True)
class TaskTransaction:
    """Which transaction one task writes in: its transactional id, and the group offset
    that marks it committed (the micro-batch id, or a batch write's token)."""

    transactional_id: str
    marker: int
    streaming: bool
    query_id: str = ""

    @classmethod
    def for_micro_batch(
        cls, prefix: str | None, partition: int, *, batch_id: str | None, query_id: str | None
    ) -> TaskTransaction:
        """Task `partition` of a streaming query's micro-batch (Spark's local properties
        give the query and batch ids)."""
        if query_id is None:
            raise OptionError(
                "Option 'exactlyOnce': this task knows no streaming query id (Spark's local "
                f"property {QUERY_ID_PROPERTY} is not set): it names the transactional ids "
                "and tells this query's commits from another's."
            )
        if prefix is None:
            prefix = f"{SINK_PREFIX}-{query_id}"
        if batch_id is None:
            raise OptionError(
                "Option 'exactlyOnce': this task knows no micro-batch id (Spark's local "
                f"property {BATCH_ID_PROPERTY} is not set)."
            )
        return cls(
            transactional_id_for(prefix, partition), int(batch_id), streaming=True,
            query_id=query_id,
        )  # fmt: skip


def transactional_id_for(prefix: str, partition: int) -> str:
    return f"{prefix}-{partition}"


def new_batch_write() -> tuple[str, int]:
    """A batch `.write`'s default prefix and its token (the group offset its commits
    carry, telling its own commits apart from an earlier job's)."""
    return f"{SINK_PREFIX}-{uuid.uuid4()}", secrets.randbelow(1 << 62) + 1


def _refusal(e: KafkaError, transactional_id: str) -> Exception:
    """The sink's sentence for an error that no retry can fix."""
    if e.code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return OptionError(
            f"Option 'exactlyOnce' needs two-phase commit (KIP-939) for transactional id "
            f"{transactional_id}: enable transaction.two.phase.commit.enable on the brokers, "
            "and with an authorizer grant Write and TwoPhaseCommit on the transactional ids "
            f"({e})."
        )
    if isinstance(e, ProducerFencedError):
        return OptionError(
            f"Option 'transactionalIdPrefix': transactional id {transactional_id} was taken "
            "over by another producer while this task wrote: another attempt of this task, "
            "or another application using the same ids. Give each query its own "
            f"transactionalIdPrefix ({e})."
        )
    return e


async def write_in_transaction(
    client: KafkaClient,
    txn: TaskTransaction,
    compression: CompressionType,
    produce: Callable[[BatchProducer], Awaitable[str | None]],
    *,
    delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS,
    retries: int | None = None,
) -> tuple[str, bool]:
    """Steps 1 to 4 of a task (see the module's docstring). `produce` writes the task's
    rows with the producer and returns the first topic written (None: no rows). Returns
    (the prepared transaction's state, "" when there was none; whether the partition was
    already committed). The producer's sends take `delivery_timeout_ms` and `retries`."""
    tid = txn.transactional_id
    producer = BatchProducer(
        client, compression=compression, timeout_ms=client.request_timeout_ms,
        transactional_id=tid, delivery_timeout_ms=delivery_timeout_ms, retries=retries,
    )  # fmt: skip
    try:
        await producer.init_transactions(enable_2pc=True)
        if txn.streaming and is_committed(await committed_markers(client, txn), txn):
            _log.info("Batch %d of %s is already committed: skipped", txn.marker, tid)
            return "", True
        producer.begin_transaction()
        try:
            topic = await produce(producer)
            if topic is None:
                await producer.abort_transaction()  # nothing was added: no EndTxn
                return "", False
            await producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): OffsetAndMetadata(txn.marker, metadata=_note(txn))},
                tid,
            )
            return str(await producer.prepare_transaction()), False
        except BaseException:
            await _abort_quietly(producer)
            raise
    except KafkaError as e:
        raise _refusal(e, tid) from e


def _note(txn: TaskTransaction) -> str:
    """The committed offset's metadata: whose commit it is."""
    if txn.streaming:
        return f"{_query_note(txn)}{txn.marker}"
    return f"kafpy-sink job {txn.marker}"


def _query_note(txn: TaskTransaction) -> str:
    return f"kafpy-sink query {txn.query_id} batch "


async def _abort_quietly(producer: BatchProducer) -> None:
    """A failed task aborts its transaction (a two-phase one never times out); if it
    cannot, the next attempt's InitProducerId will."""
    try:
        await asyncio.wait_for(producer.abort_transaction(), _client_timeout(producer))
    except (TimeoutError, KafkaError, OSError) as e:
        _log.warning("Could not abort the transaction of %s: %s", producer.transactional_id, e)


def _client_timeout(producer: BatchProducer) -> float:
    return producer.client.request_timeout_ms / 1000


async def committed_markers(client: KafkaClient, txn: TaskTransaction) -> set[int]:
    """The offsets the sink's group of `txn`'s transactional id has committed for `txn`'s
    query (see `markers_of`)."""
    group = ConsumerGroupAdmin(client)
    return markers_of(await group.list_group_offsets_and_metadata(txn.transactional_id), txn)


def markers_of(
    committed: Mapping[TopicPartition, OffsetAndMetadata], txn: TaskTransaction
) -> set[int]:
    """The committed offsets that count for `txn`: for a micro-batch, only those its own
    query committed (their metadata names its query id); for a batch write, all (its token
    tells its own apart)."""
    if not txn.streaming:
        return {o.offset for o in committed.values()}
    note = _query_note(txn)
    return {o.offset for o in committed.values() if (o.metadata or "").startswith(note)}


def is_committed(markers: set[int], txn: TaskTransaction) -> bool:
    """Whether the group's offsets show `txn`'s batch committed: a micro-batch id at least
    as high (batch ids only grow), or a batch write's own token."""
    if txn.streaming:
        return max(markers, default=-1) >= txn.marker
    return txn.marker in markers


async def complete_all(
    client: KafkaClient, prepared: Sequence[tuple[TaskTransaction, str]]
) -> None:
    """The driver's commit: complete every (task transaction, PreparedTxnState text)."""
    results = await asyncio.gather(
        *(_complete(client, txn, state) for txn, state in prepared), return_exceptions=True
    )
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]


async def _complete(client: KafkaClient, txn: TaskTransaction, prepared: str) -> None:
    tid = txn.transactional_id
    producer = BatchProducer(client, transactional_id=tid, timeout_ms=client.request_timeout_ms)
    try:
        kept = await producer.init_transactions(enable_2pc=True, keep_prepared_txn=True)
    except KafkaError as e:
        raise _refusal(e, tid) from e
    if kept.producer_id == -1:
        if is_committed(await committed_markers(client, txn), txn):
            return  # committed already (an earlier completion got through)
        raise SinkTransactionError(
            f"The prepared transaction {prepared} of {tid} was aborted before the driver "
            "could commit it (a later attempt of the task, or an administrator, ended it). "
            "The batch fails; restarting the query writes it again."
        )
    if not await producer.complete_transaction(PreparedTxnState.parse(prepared)):
        raise SinkTransactionError(
            f"{tid} holds the prepared transaction {kept}, not {prepared} which the task "
            "reported: another attempt of the task replaced it. It was aborted; the batch "
            "fails, and restarting the query writes it again."
        )
    _log.debug("Committed the transaction %s of %s", prepared, tid)


async def abort_all(client: KafkaClient, transactional_ids: Sequence[str]) -> None:
    """The driver's abort: end the transaction each id holds, prepared or not."""
    results = await asyncio.gather(
        *(_abort(client, tid) for tid in transactional_ids), return_exceptions=True
    )
    for tid, r in zip(transactional_ids, results, strict=True):
        if isinstance(r, BaseException):
            _log.warning("Could not abort the transaction of %s: %s", tid, r)


async def _abort(client: KafkaClient, tid: str) -> None:
    # without keep_prepared_txn, InitProducerId aborts whatever the id left open
    producer = BatchProducer(client, transactional_id=tid, timeout_ms=client.request_timeout_ms)
    await producer.init_transactions(enable_2pc=True)
