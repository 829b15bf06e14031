"""The values the log layer hands back: what an append did, and what a read found."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import BatchHeader
from kafpy.storage.transaction_index import AbortedTxn

UNKNOWN_OFFSET = -1
NO_TIMESTAMP = -1


@dataclass(slots=True)
class LogAppendInfo:
    """What an append validated and wrote (Kafka's LogAppendInfo).

    first_offset: offset of the first record written (-1 if nothing was written).
    last_offset: offset of the last record written.
    max_timestamp / offset_of_max_timestamp: the largest batch max timestamp and the last
    offset of its batch (-1 / -1 when no batch has a timestamp).
    log_append_time: the broker time stamped on the batches when the topic uses
    LogAppendTime, else -1.
    num_messages: records in the append (from the batch headers); shallow_count: batches;
    valid_bytes: bytes of complete batches; offsets_monotonic: batch offsets increased.
    producer_batches: see the field.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    log_append_time: int = NO_TIMESTAMP
    log_start_offset: int = 0
    num_messages: int = 0
    shallow_count: int = 0
    valid_bytes: int = 0
    offsets_monotonic: bool = True
    last_offset_of_first_batch: int = -1
    source_codec: int = 0
    target_codec: int = 0
    # (position, header) of each written batch with a producer id, from the validator's
    # header walk, for the producer-state check; None when nobody collected them.
    producer_batches: list[tuple[int, BatchHeader]] | None = None


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """An offset with, where known, the segment and byte position holding it."""

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """The result of a read: where it started and the stored bytes, as they are on disk.

    first_entry_incomplete: max_length cut the first batch (only without min_one_message).
    aborted_transactions: filled by reads that ask for them (READ_COMMITTED fetches).
    """

    fetch_offset_metadata: LogOffsetMetadata
    records: MemoryRecords
    first_entry_incomplete: bool = False
    aborted_transactions: list[AbortedTxn] | None = field(default=None)
