"""Record batches in Kafka's v2 format (magic 2): parsing, validation, building, compression."""

from kafpy.records.builder import RecordBatchBuilder, build_batch
from kafpy.records.compression import CompressionType
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record import Record
from kafpy.records.record_batch import (
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    TimestampType,
)

__all__ = [
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "RECORD_BATCH_OVERHEAD",
    "CompressionType",
    "MemoryRecords",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "build_batch",
]
