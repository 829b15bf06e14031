"""KafkaBatchWriter and KafkaStreamWriter: DataFrame rows to Kafka records.

Columns as Spark's Kafka sink names them: `value` (required, string or binary), `key`,
`topic` (the `topic` option wins over it), `partition`, `headers`
(array<struct<key:string,value:binary>>). Each task is one idempotent producer
(InitProducerId, then sequence numbers per partition) writing with acks=all, so a
retried Produce is not duplicated. A record with a key and no partition goes where
Kafka's default partitioner (murmur2) sends it, so Java producers and kafpy agree; records
without a key go to one partition per flushed batch, the next one for the next.

Kafka cannot take records back: a failed task fails the job with the error, and what
other tasks wrote stays written (at-least-once, like Spark's own Kafka sink).

With `.option("exactlyOnce", "true")` each task writes in a Kafka transaction that it
prepares (KIP-939 two-phase commit) and the driver commits once the whole micro-batch or
job has succeeded; a failed job aborts them, and a replayed micro-batch is written once
(the protocol is in kafpy.spark.exactly_once). The brokers need
`transaction.two.phase.commit.enable=true`; readers read with
`kafka.isolation.level=read_committed`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    Row,
    StringType,
    StructType,
)

from kafpy.client.partitioner import StickyPartitioner, partition_for_key
from kafpy.client.producer import BatchProducer, ProducerRecord
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.compression import CompressionType
from kafpy.records.record import Header
from kafpy.spark.errors import OptionError
from kafpy.spark.exactly_once import (
    BATCH_ID_PROPERTY,
    QUERY_ID_PROPERTY,
    TaskTransaction,
    abort_all,
    complete_all,
    new_batch_write,
    transactional_id_for,
    write_in_transaction,
)
from kafpy.spark.offset_reader import close_loop, new_client
from kafpy.spark.options import ClientSettings, WriteOptions

_MAX_PENDING_BYTES = 1 << 20
T = TypeVar("T")


class WriteError(RuntimeError):
    """A row cannot be written (no topic, no value, a bad partition)."""


def validate_write_schema(schema: StructType, options: WriteOptions) -> None:
    """Check the DataFrame's columns against what the Kafka sink takes, before any task."""
    types = {f.name.lower(): f.dataType for f in schema.fields}

    def check(name: str, allowed: tuple[type[DataType], ...], what: str) -> None:
        if name in types and not isinstance(types[name], allowed):
            raise OptionError(
                f"Column '{name}' has type {types[name].simpleString()}; the kafpy sink needs "
                f"{what}. Cast it, e.g. col('{name}').cast('string')."
            )

    if "value" not in types:
        raise OptionError(
            "The DataFrame has no 'value' column: the kafpy sink writes each row's 'value' "
            "(string or binary) as the record value; add one, e.g. "
            "to_json(struct(*)).alias('value')."
        )
    check("value", (StringType, BinaryType), "string or binary")
    check("key", (StringType, BinaryType), "string or binary")
    check("topic", (StringType,), "string")
    check("partition", (IntegerType,), "int")
    if "headers" in types:
        t = types["headers"]
        ok = (
            isinstance(t, ArrayType)
            and isinstance(t.elementType, StructType)
            and [f.name for f in t.elementType.fields] == ["key", "value"]
            and isinstance(t.elementType.fields[0].dataType, StringType)
            and isinstance(t.elementType.fields[1].dataType, (BinaryType, StringType))
        )
        if not ok:
            raise OptionError(
                f"Column 'headers' has type {t.simpleString()}; the kafpy sink needs "
                "array<struct<key:string,value:binary>>."
            )
    if options.topic is None and "topic" not in types:
        raise OptionError(
            "No topic to write to: set the option 'topic' or give the DataFrame a 'topic' column."
        )


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote: records per topic partition; with exactlyOnce, its transaction
    (`transactional_id`, `prepared`: the PreparedTxnState as "producerId:epoch", empty when
    the task opened none), the group offset marking it committed (`marker`), the streaming
    query whose commit it is (`query_id`), and whether the task found its partition
    already committed (`skipped`)."""

    records: dict[str, int] = field(default_factory=dict)
    transactional_id: str | None = None
    prepared: str = ""
    marker: int = 0
    streaming: bool = False
    skipped: bool = False
    query_id: str = ""

    def transaction(self) -> TaskTransaction | None:
        if self.transactional_id is None or not self.prepared:
            return None
        return TaskTransaction(self.transactional_id, self.marker, self.streaming, self.query_id)


def _run(settings: ClientSettings, work: Callable[[Any], Awaitable[T]]) -> T:
    """Run `work(client)` on a loop and client of its own (a task's, or the driver's)."""
    loop = asyncio.new_event_loop()
    client = new_client(settings)
    try:
        return loop.run_until_complete(work(client))
    finally:
        close_loop(loop, client)


class KafkaRowWriter:
    """Writes one task's rows: one idempotent producer, batches per partition; or, given
    the task's transaction (exactlyOnce), one transactional producer that prepares it."""

    def __init__(
        self, options: WriteOptions, schema: StructType, txn: TaskTransaction | None = None
    ) -> None:
        self.options = options
        self.columns = {f.name.lower(): f.name for f in schema.fields}
        self.txn = txn

    def write(self, rows: Iterator[Row]) -> KafkaCommitMessage:
        return _run(self.options.client, lambda client: self._write(client, rows))

    async def _write(self, client: Any, rows: Iterator[Row]) -> KafkaCommitMessage:
        await client.start()
        compression = CompressionType.from_name(self.options.compression)
        txn = self.txn
        if txn is None:
            producer = BatchProducer(
                client, acks=-1, compression=compression, timeout_ms=client.request_timeout_ms,
                delivery_timeout_ms=self.options.delivery_timeout_ms,
                retries=self.options.producer_retries,
            )  # fmt: skip
            await producer.init_producer_id()
            counts, _ = await self._produce(producer, rows)
            return KafkaCommitMessage(records=counts)
        counts = {}

        async def produce(producer: BatchProducer) -> str | None:
            nonlocal counts
            counts, first_topic = await self._produce(producer, rows)
            return first_topic

        prepared, skipped = await write_in_transaction(
            client, txn, compression, produce,
            delivery_timeout_ms=self.options.delivery_timeout_ms,
            retries=self.options.producer_retries,
        )  # fmt: skip
        if skipped:
            for _ in rows:  # Spark hands the rows over; the replay needs none of them
                pass
        return KafkaCommitMessage(
            records=counts, transactional_id=txn.transactional_id, prepared=prepared,
            marker=txn.marker, streaming=txn.streaming, skipped=skipped, query_id=txn.query_id,
        )  # fmt: skip

    async def _produce(
        self, producer: BatchProducer, rows: Iterator[Row]
    ) -> tuple[dict[str, int], str | None]:
        """Send the rows; returns the records per partition and the first topic written."""
        first_topic: str | None = None
        pending: dict[TopicPartition, list[ProducerRecord]] = {}
        counts: dict[str, int] = {}
        partitions: dict[str, int] = {}
        sticky = StickyPartitioner()
        sticky_choice: dict[str, int] = {}
        pending_count = 0
        pending_bytes = 0
        col = self.columns
        topic_option = self.options.topic

        async def flush() -> None:
            # the producer cuts the records into batches of batch.size and requests of
            # max.request.size; this only bounds what a task holds in memory
            nonlocal pending_count, pending_bytes
            records = dict(pending)
            pending.clear()
            sticky_choice.clear()
            pending_count = pending_bytes = 0
            if records:
                await producer.send_records(records)
                for tp, recs in records.items():
                    counts[str(tp)] = counts.get(str(tp), 0) + len(recs)

        for row in rows:
            topic = topic_option or (row[col["topic"]] if "topic" in col else None)
            if not topic:
                raise WriteError(
                    "A row has no topic (its 'topic' column is null) and no 'topic' option "
                    "is set: every record needs a topic."
                )
            value = _as_bytes(row[col["value"]])
            key = _as_bytes(row[col["key"]]) if "key" in col else None
            if topic not in partitions:
                partitions[topic] = len(await producer.partitions_for(topic))
                first_topic = first_topic or topic
            count = partitions[topic]
            partition = row[col["partition"]] if "partition" in col else None
            if partition is not None:
                if not 0 <= partition < count:
                    raise WriteError(
                        f"A row asks for partition {partition} of topic '{topic}', which has "
                        f"{count} partitions (0 to {count - 1})."
                    )
            elif key is not None:
                partition = partition_for_key(key, count)
            else:
                if topic not in sticky_choice:
                    sticky_choice[topic] = sticky.next_partition(count)
                partition = sticky_choice[topic]
            headers: list[Header] = []
            if "headers" in col and row[col["headers"]]:
                headers = [(h[0], _as_bytes(h[1])) for h in row[col["headers"]]]
            pending.setdefault(TopicPartition(topic, partition), []).append((key, value, headers))
            pending_count += 1
            pending_bytes += len(value or b"") + len(key or b"")
            if pending_count >= self.options.batch_records or pending_bytes >= _MAX_PENDING_BYTES:
                await flush()
        await flush()
        return counts, first_topic


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _task_context() -> TaskContext:
    tc = TaskContext.get()
    if tc is None:  # pragma: no cover - Spark always runs write() in a task
        raise RuntimeError("exactlyOnce: write() runs outside a Spark task")
    return tc


def _commit(options: WriteOptions, messages: list[WriterCommitMessage | None]) -> None:
    """The driver completes every prepared transaction of the job or micro-batch."""
    prepared = [
        (txn, m.prepared)
        for m in messages
        if isinstance(m, KafkaCommitMessage) and (txn := m.transaction()) is not None
    ]
    if prepared:
        _run(options.client, lambda client: complete_all(client, prepared))


def _abort(
    options: WriteOptions, messages: list[WriterCommitMessage | None], prefix: str | None
) -> None:
    """The driver aborts what every task of the job may have left open, the failed tasks'
    included (ids from the prefix and the partition number)."""
    tids = {
        m.transactional_id
        for m in messages
        if isinstance(m, KafkaCommitMessage) and m.transactional_id is not None
    }
    if prefix is None and tids:
        prefix = next(iter(tids)).rsplit("-", 1)[0]
    if prefix is not None:
        tids.update(transactional_id_for(prefix, p) for p in range(len(messages)))
    if tids:
        _run(options.client, lambda client: abort_all(client, sorted(tids)))


class KafkaBatchWriter(DataSourceWriter):
    """df.write: each task produces its rows; nothing to do on commit (records are visible
    as soon as they are acknowledged) and nothing can be undone on abort.

    With exactlyOnce: one transaction per task (ids `<prefix>-<partition>`, the prefix
    `transactionalIdPrefix` or `kafpy-sink-<random>`), prepared by the task, committed by
    the driver when the job succeeds, aborted when it fails."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        prefix, self.token = new_batch_write()
        self.prefix = options.transactional_id_prefix or prefix

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        txn = None
        if self.options.exactly_once:
            tid = transactional_id_for(self.prefix, _task_context().partitionId())
            txn = TaskTransaction(tid, self.token, streaming=False)
        return KafkaRowWriter(self.options, self.schema, txn).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            _commit(self.options, messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            _abort(self.options, messages, self.prefix)


class KafkaStreamWriter(DataSourceStreamWriter):
    """writeStream: each micro-batch's tasks produce their rows (at-least-once).

    With exactlyOnce: task p of micro-batch B writes in the transaction of
    `<prefix>-<p>` (the prefix `transactionalIdPrefix` or `kafpy-sink-<query id>`) and
    prepares it; `commit(messages, B)` completes them all, `abort` aborts them; a replayed
    micro-batch skips the partitions already committed (kafpy.spark.exactly_once)."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        txn = None
        if self.options.exactly_once:
            tc = _task_context()
            txn = TaskTransaction.for_micro_batch(
                self.options.transactional_id_prefix,
                tc.partitionId(),
                batch_id=tc.getLocalProperty(BATCH_ID_PROPERTY),
                query_id=tc.getLocalProperty(QUERY_ID_PROPERTY),
            )
        return KafkaRowWriter(self.options, self.schema, txn).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.options.exactly_once:
            stale = [
                m.transactional_id
                for m in messages
                if isinstance(m, KafkaCommitMessage) and m.prepared and m.marker != batchId
            ]
            if stale:
                raise RuntimeError(
                    f"exactlyOnce: the transactions of {stale} belong to another micro-batch "
                    f"than {batchId}"
                )
            _commit(self.options, messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.options.exactly_once:
            _abort(self.options, messages, self.options.transactional_id_prefix)
