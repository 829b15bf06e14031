"""Choosing a partition for a record, as Kafka's Java producer does.

Keyed records go to `toPositive(murmur2(key)) % partitions` (Kafka's DefaultPartitioner),
so kafpy's tools put a key where every Kafka client would. Records without a key stick
to one partition per batch and move on to the next partition with the next batch
(Kafka 2.4+'s sticky partitioning, simplified to round robin over batches).
"""

from __future__ import annotations

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 of `data`, as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for `key`."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """Partitions for records without a key: one partition per batch, the next one for
    the next batch."""

    def __init__(self, start: int = 0) -> None:
        self._next = start

    def next_partition(self, num_partitions: int) -> int:
        partition = self._next % num_partitions
        self._next = partition + 1
        return partition
