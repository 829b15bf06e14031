"""KafkaPartitionReader: what one Spark task does — fetch one offset range of one partition
over the Kafka protocol and hand it on as Arrow record batches.

Runs on an executor with its own asyncio loop and kafpy client. Offsets missing inside the
range (compaction, control batches, aborted transactions) are normal and skipped;
offsets missing at its start (retention or deletion removed them) are data loss: an
error naming the partition and the offsets with failOnDataLoss=true, a jump to the
earliest available offset with failOnDataLoss=false.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafpy.client.fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.spark.arrow import decode_batches
from kafpy.spark.offset_reader import close_loop, new_client
from kafpy.spark.offsets import OffsetRange
from kafpy.spark.options import ReadOptions

_MAX_EMPTY_FETCHES = 50


class DataLossError(RuntimeError):
    """Offsets a query must read are no longer in the partition (failOnDataLoss=true)."""


def data_loss_message(topic: str, partition: int, what: str) -> str:
    return (
        f"Partition {topic}-{partition}: {what}. Records the query was to read are lost "
        "(removed by retention or by deleting records, or the topic was re-created). "
        "If this is expected, set the option failOnDataLoss=false to skip them and go on "
        "from the earliest available offset."
    )


class KafkaPartitionReader:
    """Reads offsets [start, end) of one partition as Arrow record batches."""

    def __init__(self, options: ReadOptions, offset_range: OffsetRange) -> None:
        self.options = options
        self.range = offset_range
        self.tp = TopicPartition(offset_range.topic, offset_range.partition)

    def batches(self) -> Iterator[pa.RecordBatch]:
        loop = asyncio.new_event_loop()
        client = new_client(self.options.client)
        try:
            yield from self._batches(loop, client)
        finally:
            close_loop(loop, client)

    def _batches(
        self, loop: asyncio.AbstractEventLoop, client: KafkaClient
    ) -> Iterator[pa.RecordBatch]:
        topic, partition, position, end = self.range
        fail = self.options.fail_on_data_loss
        include_headers = self.options.include_headers
        fetcher = Fetcher(client, isolation_level=self.options.client.isolation_level)
        if position == EARLIEST_TIMESTAMP:
            position = loop.run_until_complete(fetcher.list_offsets([self.tp], EARLIEST_TIMESTAMP))[
                self.tp
            ]
        empty = 0
        while position < end:
            entry = loop.run_until_complete(self._fetch(client, position))
            code = entry["error_code"]
            if code == Errors.OFFSET_OUT_OF_RANGE:
                earliest, latest = (
                    loop.run_until_complete(fetcher.list_offsets([self.tp], ts))[self.tp]
                    for ts in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP)
                )
                if position < earliest:
                    if fail:
                        raise DataLossError(
                            data_loss_message(
                                topic,
                                partition,
                                f"offsets {position} to {min(earliest, end) - 1} are no longer "
                                f"available (the log now starts at offset {earliest})",
                            )
                        )
                    position = earliest
                    continue
                if fail:
                    raise DataLossError(
                        data_loss_message(
                            topic,
                            partition,
                            f"offsets {position} to {end - 1} are beyond the end of the log "
                            f"(next offset {latest})",
                        )
                    )
                return
            if code:
                raise error_for_code(code, None, f"Fetching {topic}-{partition} at {position}")
            data = entry.get("records") or b""
            aborted = None
            if self.options.client.isolation_level == 1:
                aborted = [
                    (a["producer_id"], a["first_offset"])
                    for a in entry.get("aborted_transactions") or ()
                ]
            chunk = decode_batches(
                data,
                topic,
                partition,
                position,
                end,
                include_headers=include_headers,
                aborted=aborted,
            )
            if chunk.batch is not None and chunk.batch.num_rows:
                yield chunk.batch
            if chunk.next_offset > position:
                position = chunk.next_offset
                empty = 0
                continue
            high_watermark = entry["high_watermark"]
            if high_watermark <= position:
                # The log ends before the range does: the records were lost.
                if fail:
                    raise DataLossError(
                        data_loss_message(
                            topic,
                            partition,
                            f"offsets {position} to {end - 1} are missing: the log ends at "
                            f"offset {high_watermark}",
                        )
                    )
                return
            empty += 1
            if empty > _MAX_EMPTY_FETCHES:
                raise RuntimeError(
                    f"Fetching partition {topic}-{partition} at offset {position} returned no "
                    f"complete record batch {empty} times although the log goes on to offset "
                    f"{high_watermark}; raise kafka.max.partition.fetch.bytes."
                )

    async def _fetch(self, client: KafkaClient, position: int) -> dict[str, Any]:
        settings = self.options.client
        body = {
            "replica_id": -1,
            "max_wait_ms": settings.fetch_max_wait_ms,
            "min_bytes": 1,
            "max_bytes": settings.fetch_max_bytes,
            "isolation_level": settings.isolation_level,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": self.tp.topic,
                    "partitions": [
                        {
                            "partition": self.tp.partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": position,
                            "log_start_offset": -1,
                            "partition_max_bytes": settings.max_partition_fetch_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

        def check(response: dict[str, Any]) -> None:
            entry = _entry(response, self.tp)
            code = entry["error_code"]
            if code and code != Errors.OFFSET_OUT_OF_RANGE:
                error = error_for_code(code, None, f"Fetching {self.tp} at {position}")
                if error.retriable:
                    raise error

        response = await client.send_to_leader(
            self.tp,
            ApiKey.FETCH,
            body,
            timeout_ms=settings.request_timeout_ms + settings.fetch_max_wait_ms,
            check=check,
        )
        return _entry(response, self.tp)


def _entry(response: dict[str, Any], tp: TopicPartition) -> dict[str, Any]:
    if response.get("error_code"):
        raise error_for_code(response["error_code"], None, f"Fetching {tp}")
    for t in response["responses"]:
        if t["topic"] != tp.topic:
            continue
        for p in t["partitions"]:
            if p["partition_index"] == tp.partition:
                entry: dict[str, Any] = p
                return entry
    raise RuntimeError(f"The Fetch response left out partition {tp}.")
