"""Partitioning: Kafka's murmur2 (checked against kafka-python's) and sticky partitions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as reference_murmur2

from kafpy.client.partitioner import StickyPartitioner, murmur2, partition_for_key


def test_murmur2_known_values() -> None:
    # values from Kafka's UtilsTest.testMurmur2 (Java ints)
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for data, expected in cases.items():
        assert murmur2(data) == expected, data


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    assert murmur2(data) & 0xFFFFFFFF == reference_murmur2(data) & 0xFFFFFFFF


def test_partition_for_key_is_positive_modulo() -> None:
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert all(0 <= partition_for_key(bytes([i]), 3) < 3 for i in range(256))


def test_sticky_partitioner_moves_on_per_batch() -> None:
    sticky = StickyPartitioner()
    assert [sticky.next_partition(3) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert sticky.next_partition(1) == 0
