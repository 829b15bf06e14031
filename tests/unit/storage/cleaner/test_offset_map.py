"""SkimpyOffsetMap: latest offset per key, collisions of digests, fullness."""

from __future__ import annotations

import pytest

from kafpy.storage.cleaner.offset_map import SkimpyOffsetMap


def test_newer_offsets_overwrite_older_and_missing_keys_are_minus_one() -> None:
    m = SkimpyOffsetMap(4096)
    for i in range(100):
        m.put(b"key-%d" % i, i)
    m.put(b"key-7", 500)
    assert m.get(b"key-7") == 500
    assert m.get(b"key-8") == 8
    assert m.get(b"never") == -1
    assert m.size == 100
    assert m.latest_offset == 500


def test_capacity_follows_memory_digest_size_and_load_factor() -> None:
    m = SkimpyOffsetMap(24 * 1000, "md5", 0.9)  # md5: 16-byte digest + 8-byte offset
    assert m.bytes_per_entry == 24 and m.slots == 1000 and m.max_entries == 900
    for i in range(899):
        m.put(b"%d" % i, i)
    assert not m.is_full and m.free_entries() == 1
    m.put(b"899", 899)
    assert m.is_full and m.free_entries() == 0
    m.put(b"899", 900)  # an existing key still updates when full
    assert m.get(b"899") == 900


def test_overfilling_past_the_table_is_refused() -> None:
    m = SkimpyOffsetMap(24 * 4, "md5", 1.0)
    for i in range(4):
        m.put(b"%d" % i, i)
    with pytest.raises(ValueError, match="full"):
        m.put(b"another", 5)


def test_keys_with_the_same_digest_are_one_key_as_in_kafka() -> None:
    # a 1-byte "digest" forces collisions: keys equal modulo 4 share a slot
    m = SkimpyOffsetMap(9 * 16, digest=lambda k: bytes([k[0] % 4]), digest_size=1)
    m.put(b"\x01", 10)
    m.put(b"\x05", 20)
    assert m.get(b"\x01") == 20 and m.get(b"\x05") == 20
    assert m.get(b"\x02") == -1
    assert m.size == 1


def test_clear_and_bad_settings() -> None:
    m = SkimpyOffsetMap(1024)
    m.put(b"a", 3)
    m.clear()
    assert m.size == 0 and m.get(b"a") == -1 and m.latest_offset == -1
    with pytest.raises(ValueError, match="dedupe.buffer.size"):
        SkimpyOffsetMap(10)
    with pytest.raises(ValueError, match="load.factor"):
        SkimpyOffsetMap(1024, load_factor=1.5)
    with pytest.raises(ValueError, match="Unknown key hash algorithm"):
        SkimpyOffsetMap(1024, "nope")
    assert SkimpyOffsetMap(1024, "sha1").hash_size == 20
