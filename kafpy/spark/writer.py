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
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

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
from kafpy.spark.offset_reader import close_loop, new_client
from kafpy.spark.options import WriteOptions

_MAX_PENDING_BYTES = 1 << 20


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
    """What one task wrote: records per topic partition."""

    records: dict[str, int] = field(default_factory=dict)


class KafkaRowWriter:
    """Writes one task's rows: one idempotent producer, batches per partition."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.columns = {f.name.lower(): f.name for f in schema.fields}

    def write(self, rows: Iterator[Row]) -> KafkaCommitMessage:
        loop = asyncio.new_event_loop()
        client = new_client(self.options.client)
        try:
            return loop.run_until_complete(self._write(client, rows))
        finally:
            close_loop(loop, client)

    async def _write(self, client: Any, rows: Iterator[Row]) -> KafkaCommitMessage:
        await client.start()
        producer = BatchProducer(
            client,
            acks=-1,
            compression=CompressionType.from_name(self.options.compression),
            timeout_ms=client.request_timeout_ms,
        )
        await producer.init_producer_id()
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
        return KafkaCommitMessage(records=counts)


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


class KafkaBatchWriter(DataSourceWriter):
    """df.write: each task produces its rows; nothing to do on commit (records are visible
    as soon as they are acknowledged) and nothing can be undone on abort."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return KafkaRowWriter(self.options, self.schema).write(iterator)


class KafkaStreamWriter(DataSourceStreamWriter):
    """writeStream: each micro-batch's tasks produce their rows (at-least-once)."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return KafkaRowWriter(self.options, self.schema).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass
