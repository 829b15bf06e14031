"""A run of record batches in memory: a produce request's payload, a fetch response's,
or what a segment read returned.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafpy.records.record import Record
from kafpy.records.record_batch import LENGTH_OFFSET, LOG_OVERHEAD, RecordBatch, as_byte_view

if TYPE_CHECKING:
    from kafpy.records.legacy_record import ConvertedMessageSet

_INT32 = struct.Struct(">i")


class MemoryRecords:
    """Concatenated record batches over one buffer, walked batch by batch without copying.

    `batches()` reads only the batch headers and insists that the buffer ends exactly
    at a batch boundary (CorruptRecordError for a torn trailing batch); use
    `batches_allow_partial()` for a fetch response, whose last batch may legitimately
    be cut off by the fetch size. Neither checks CRCs: call `ensure_valid()` on each batch.

    `records_validated` says the records inside the batches were already walked by the
    LogValidator's record checks (the broker does that off its event loop for compressed
    batches), so the append path checks only the headers. `converted` is these batches
    already written as the message set of a log of format v0/v1 (also done off the loop,
    for large appends), which the append then only moves to its offsets.
    """

    __slots__ = ("_buf", "records_validated", "converted")

    def __init__(
        self,
        buffer: bytes | bytearray | memoryview,
        records_validated: bool = False,
        converted: ConvertedMessageSet | None = None,
    ) -> None:
        self._buf = as_byte_view(buffer)
        self.records_validated = records_validated
        self.converted = converted

    @classmethod
    def empty(cls) -> MemoryRecords:
        return cls(b"")

    @property
    def size_in_bytes(self) -> int:
        return len(self._buf)

    def __len__(self) -> int:
        return len(self._buf)

    def buffer(self) -> memoryview:
        """All the bytes (a view, no copy)."""
        return self._buf

    def batches(self) -> Iterator[RecordBatch]:
        """Every batch in order; CorruptRecordError if the last one is torn or one is malformed."""
        buf = self._buf
        end = len(buf)
        pos = 0
        while pos < end:
            batch = RecordBatch(buf, pos)
            yield batch
            pos += batch.size_in_bytes

    def batches_allow_partial(self) -> Iterator[RecordBatch]:
        """Every complete batch in order, stopping quietly at a trailing partial batch."""
        buf = self._buf
        end = len(buf)
        pos = 0
        while end - pos >= LOG_OVERHEAD:
            (length,) = _INT32.unpack_from(buf, pos + LENGTH_OFFSET)
            if pos + LOG_OVERHEAD + length > end:
                return
            batch = RecordBatch(buf, pos)
            yield batch
            pos += batch.size_in_bytes

    def valid_bytes(self) -> int:
        """Bytes taken by complete batches from the start (the rest is a partial batch)."""
        pos = 0
        for batch in self.batches_allow_partial():
            pos = batch.position + batch.size_in_bytes
        return pos

    def records(self) -> Iterator[Record]:
        """All records of all batches (decoding every one: not for hot paths)."""
        for batch in self.batches():
            yield from batch.records()

    def __iter__(self) -> Iterator[RecordBatch]:
        return self.batches()

    def __repr__(self) -> str:
        return f"MemoryRecords(size_in_bytes={len(self._buf)})"
