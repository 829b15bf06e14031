"""Reading a coordinator's internal topic partition back when its broker becomes the leader.

The group coordinator (__consumer_offsets) and the transaction coordinator
(__transaction_state) rebuild their state from their partition's log, as Kafka's
GroupMetadataManager.doLoadGroupsAndOffsets and TransactionStateManager.loadTransactionMetadata
do: every batch from the log start offset to the log end offset (not the high watermark: a
new leader's own log is the state from now on), read a chunk of `buffer_size` bytes at a
time, the event loop let in between chunks. What the batches mean is each manager's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import RecordBatch


class LoadableLog(Protocol):
    """What loading needs of a partition's log (kafpy.storage.log.Log)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def read(self, start_offset: int, max_length: int, /, max_offset: int | None = None) -> Any: ...


async def read_to_log_end(log: LoadableLog, buffer_size: int) -> AsyncIterator[RecordBatch]:
    """Every complete batch of `log` from its start offset to the log end offset it had when
    loading began, in order."""
    position = log.log_start_offset
    end = log.log_end_offset
    while position < end:
        info = log.read(position, buffer_size, max_offset=end)
        batches = list(MemoryRecords(info.records.buffer()).batches_allow_partial())
        if not batches:
            break
        for batch in batches:
            position = batch.next_offset
            yield batch
        await asyncio.sleep(0)  # let requests in between chunks
