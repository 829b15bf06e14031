"""The broker's checks of a Produce request's records before the append (Kafka's
KafkaApis.handleProduceRequest and ProduceRequest.validateRecords): one v2 batch per
partition from v3 on, and the record checks of compressed batches, run off the event loop.
"""

from __future__ import annotations

import asyncio

from kafpy.common.errors import CorruptRecordError, InvalidRecordError, KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    H_LENGTH,
    H_MAGIC,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    header_at,
)
from kafpy.server.replica_manager import ReplicaManager
from kafpy.storage.log_validator import LogValidator


def validate_produce_records(records: memoryview | bytes | None) -> KafkaError | None:
    """Kafka's check of a v3+ produce payload: exactly one v2 batch (a partial trailing
    batch is dropped later, as Kafka does). Returns the error for the partition, or None.
    Reads the first header and the next batch's length only; the LogValidator walks the
    batch itself."""
    one_batch = "Produce requests with version 3 and above must have exactly one record batch"
    if records is None:
        return InvalidRecordError(one_batch)
    end = len(records)
    try:
        header = header_at(records, 0, end, " of the produce request")
        if header is None:
            return InvalidRecordError(one_batch)
        if header[H_MAGIC] != MAGIC_V2:
            return _wrong_magic(header[H_MAGIC])
        if header_at(records, header[H_LENGTH] + LOG_OVERHEAD, end) is not None:
            return InvalidRecordError(
                "Produce requests with version 3 and above are only allowed to contain exactly one record batch"
            )
    except CorruptRecordError as exc:
        return exc
    return None


def _wrong_magic(magic: int) -> InvalidRecordError:
    return InvalidRecordError(
        "Produce requests with version 3 and above are only allowed to contain record batches "
        f"with magic version 2, got {magic}"
    )


async def validate_compressed_records(
    replica_manager: ReplicaManager,
    entries: dict[TopicPartition, MemoryRecords | memoryview | bytes | None],
) -> None:
    """Run the LogValidator's record checks of compressed batches in a thread.

    Decompressing and walking a batch can take a while (up to decompressed_limit
    bytes), so it happens off the event loop and the other connections are served
    meanwhile. A batch that passes is handed on marked `records_validated`, and the
    append checks only its header; one that fails is handed on as it came, and the
    append's own validation (bounded as well) answers its error.
    """
    for tp, data in entries.items():
        if data is None or isinstance(data, MemoryRecords) or len(data) < RECORD_BATCH_OVERHEAD:
            continue
        if not data[ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK:
            continue  # uncompressed: one pass over the record lengths, on the loop
        partition = replica_manager.get_partition(tp)
        log = partition.log if partition is not None and partition.is_leader else None
        if log is None:
            continue  # the append answers NOT_LEADER_OR_FOLLOWER
        view = memoryview(data)
        validator = LogValidator(log.config, tp)
        try:
            await asyncio.to_thread(validator.validate_records, view, log.time.milliseconds())
        except Exception:  # the append validates again, bounded, and answers the error
            continue
        entries[tp] = MemoryRecords(view, records_validated=True)
