"""The readers Spark drives: KafkaBatchReader (spark.read) and KafkaStreamReader
(spark.readStream, with rate limits and Trigger.AvailableNow).

Planning runs on the driver through a KafkaOffsetReader; each planned OffsetRange is one
Spark task, read on an executor by a KafkaPartitionReader. Streaming offsets are Spark's
Kafka offset JSON, {"topic": {"partition": offset}}, always built in sorted key order:
Spark compares offsets as JSON text, and a different key order would plan a batch.
With valueFormat=confluent-avro, the tasks decode the value column with the reader
schema fixed when the query was planned (kafpy.spark.confluent_avro).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from kafpy.spark.confluent_avro import ConfluentAvroValues
from kafpy.spark.group_committer import commit_offsets
from kafpy.spark.offset_reader import KafkaOffsetReader
from kafpy.spark.offsets import TP, OffsetRange, rate_limit, split_ranges
from kafpy.spark.options import ReadOptions, offsets_from_json, offsets_to_json
from kafpy.spark.partition_reader import DataLossError, KafkaPartitionReader, data_loss_message


class KafkaInputPartition(InputPartition):
    """One Spark task: an offset range of one topic partition."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.range = offset_range


def _read(
    options: ReadOptions, partition: InputPartition, value_schema: str | None = None
) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, KafkaInputPartition):
        return  # Spark runs one task with a placeholder partition when none were planned
    batches = KafkaPartitionReader(options, partition.range).batches()
    if options.value_decoding is None or value_schema is None:
        yield from batches
        return
    values = ConfluentAvroValues(options.value_decoding, value_schema)
    for batch in batches:
        yield values.decode(batch)


def _check_ranges(options: ReadOptions, ranges: list[OffsetRange]) -> list[OffsetRange]:
    """Ranges whose start is past their end mean the log went backwards (a re-created
    topic): data loss, or an empty range with failOnDataLoss=false."""
    result = []
    for r in ranges:
        if r.start > r.end:
            if options.fail_on_data_loss:
                raise DataLossError(
                    data_loss_message(
                        r.topic,
                        r.partition,
                        f"the starting offset {r.start} is after the ending offset {r.end}",
                    )
                )
            continue
        result.append(r)
    return result


class KafkaBatchReader(DataSourceReader):
    """spark.read: the offsets between startingOffsets and endingOffsets (as resolved when
    the query is planned), split into at least minPartitions tasks."""

    def __init__(self, options: ReadOptions, value_schema: str | None = None) -> None:
        self.options = options
        self.value_schema = value_schema

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        with KafkaOffsetReader(opts, batch=True) as offsets:
            tps = offsets.partitions()
            start = offsets.resolve(opts.starting, tps, starting=True)
            end = offsets.resolve(opts.ending, tps, starting=False)
        ranges = _check_ranges(
            opts, [OffsetRange(t, p, start[(t, p)], end[(t, p)]) for t, p in tps]
        )
        return [KafkaInputPartition(r) for r in split_ranges(ranges, opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition, self.value_schema)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """spark.readStream: each micro-batch reads from the previous end to the latest offsets,
    capped by maxOffsetsPerTrigger and held back by minOffsetsPerTrigger (until
    maxTriggerDelay passes). Partitions and, with subscribePattern, topics that appear
    are read from their earliest offset."""

    def __init__(self, options: ReadOptions, value_schema: str | None = None) -> None:
        self.options = options
        self.value_schema = value_schema
        self._offsets: KafkaOffsetReader | None = None
        self._target: dict[TP, int] | None = None
        self._last_batch_ms = time.monotonic() * 1000
        self._committed: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_offsets"] = None
        return state

    @property
    def offsets(self) -> KafkaOffsetReader:
        if self._offsets is None:
            self._offsets = KafkaOffsetReader(self.options)
        return self._offsets

    def initialOffset(self) -> dict[str, Any]:
        tps = self.offsets.partitions()
        return offsets_to_json(self.offsets.resolve(self.options.starting, tps, starting=True))

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.offsets.latest(self.offsets.partitions())

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        # Spark plans a micro-batch only once the previous one is complete, so `start`
        # (the previous batch's end) is done: commit it, rather than wait for commit(),
        # which Spark calls only when it starts the batch after next.
        self._commit_to_group(start)
        begin = offsets_from_json(start, "offset") if start else {}
        tps = self.offsets.partitions()
        latest = self.offsets.latest(tps)
        if self._target is not None:
            latest = {
                tp: min(o, self._target[tp]) for tp, o in latest.items() if tp in self._target
            }
        new = [tp for tp in latest if tp not in begin]
        full_start = {**self.offsets.earliest(new), **begin}
        for tp, offset in latest.items():
            if offset < full_start[tp]:
                if self.options.fail_on_data_loss:
                    raise DataLossError(
                        data_loss_message(
                            tp[0],
                            tp[1],
                            f"the log now ends at offset {offset}, before offset "
                            f"{full_start[tp]} the query has read up to",
                        )
                    )
                full_start[tp] = offset
        if isinstance(limit, ReadAllAvailable):
            end = dict(latest)
        else:
            min_rows = self.options.min_offsets_per_trigger
            if isinstance(limit, ReadMinRows):
                min_rows = limit.min_rows
            backlog = sum(max(o - full_start[tp], 0) for tp, o in latest.items())
            now_ms = time.monotonic() * 1000
            if (
                self._target is None
                and min_rows is not None
                and backlog < min_rows
                and now_ms - self._last_batch_ms < self.options.max_trigger_delay_ms
            ):
                return start
            if isinstance(limit, ReadMaxRows):
                end = rate_limit(full_start, latest, limit.max_rows)
            else:
                end = dict(latest)
        for tp, offset in begin.items():
            end.setdefault(tp, offset)  # a partition gone from the metadata keeps its offset
        result = offsets_to_json(end)
        if result != start:
            self._last_batch_ms = time.monotonic() * 1000
        return result

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = offsets_from_json(start, "offset") if start else {}
        until = offsets_from_json(end, "offset") if end else {}
        new = [tp for tp in until if tp not in begin]
        if new:
            begin = {**self.offsets.earliest(new), **begin}
        ranges = [OffsetRange(t, p, begin[(t, p)], o) for (t, p), o in sorted(until.items())]
        ranges = _check_ranges(self.options, ranges)
        return [KafkaInputPartition(r) for r in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition, self.value_schema)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_to_group(end)

    def _commit_to_group(self, end: dict[str, Any]) -> None:
        group = self.options.commit_offsets_to_group
        if group is None or not end or end == self._committed:
            return
        if commit_offsets(self.offsets, group, offsets_from_json(end, "offset")):
            self._committed = end

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None
