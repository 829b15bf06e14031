"""Java's `String.hashCode`, which Kafka's placement rules are defined by.

Kafka places a group on a `__consumer_offsets` partition, a partition on a replica
fetcher, and Scala orders the keys of the JSON it writes to ZooKeeper, all by this hash.
"""

from __future__ import annotations


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, int32 wrap-around, as a signed int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h
