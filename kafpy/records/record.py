"""One decoded record of a v2 batch, with its absolute offset and timestamp resolved."""

from __future__ import annotations

from dataclasses import dataclass

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """A record as tools, compaction and the Spark reader see it.

    `offset` and `timestamp` are absolute (batch base + delta; the batch's max timestamp
    for LogAppendTime batches). `key`, `value` and header values are None when the wire
    length was -1. `sequence` is the producer sequence number (base sequence + offset
    delta, wrapping at int32 max), or -1 when the batch has none.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = -1
