"""An in-memory stand-in for the ReplicaManager side the group coordinator uses: appends to
__consumer_offsets partitions and reads them back for loading."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import RecordBatch
from kafpy.storage.producer_state_manager import AppendOrigin


@dataclass
class _Read:
    records: MemoryRecords


@dataclass
class FakeLog:
    data: bytearray = field(default_factory=bytearray)
    next_offset: int = 0
    log_start_offset: int = 0

    def append(self, batch: bytes) -> None:
        buf = bytearray(batch)
        b = RecordBatch(buf)
        b.set_base_offset(self.next_offset)
        self.next_offset = b.next_offset
        self.data += buf

    @property
    def log_end_offset(self) -> int:
        return self.next_offset

    def read(self, start: int, max_length: int, max_offset: int | None = None) -> _Read:
        out = bytearray()
        for b in MemoryRecords(bytes(self.data)).batches():
            if b.last_offset >= start and (max_offset is None or b.base_offset < max_offset):
                out += bytes(b.buffer())
        return _Read(MemoryRecords(bytes(out)))


@dataclass
class FakePartition:
    log: FakeLog
    # below the log end when the followers have not caught up (None: all replicated)
    replicated_up_to: int | None = None

    @property
    def high_watermark(self) -> int:
        return self.log.next_offset if self.replicated_up_to is None else self.replicated_up_to


class FakeOffsetsLog:
    """Keeps every appended batch per partition; `fail_with` makes appends fail."""

    def __init__(self) -> None:
        self.partitions: dict[TopicPartition, FakePartition] = {}
        self.fail_with: int | None = None
        self.appends = 0

    async def append_records(
        self, timeout_ms: int, required_acks: int, entries: Mapping[TopicPartition, Any],
        internal_topics_allowed: bool = False, origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> dict[TopicPartition, dict[str, Any]]:  # fmt: skip
        assert internal_topics_allowed
        out = {}
        for tp, data in entries.items():
            # as the log's validation: a producer's batch without sequences is the coordinator's
            if RecordBatch(bytes(data)).producer_id >= 0:
                assert origin is AppendOrigin.COORDINATOR
            self.appends += 1
            if self.fail_with is not None:
                out[tp] = {"error_code": self.fail_with}
                continue
            log = self.partitions.setdefault(tp, FakePartition(FakeLog())).log
            base = log.next_offset
            log.append(bytes(data))
            out[tp] = {"error_code": Errors.NONE, "base_offset": base}
        return out

    def get_partition(self, tp: TopicPartition) -> FakePartition | None:
        return self.partitions.get(tp)
