"""Codecs: Kafka's framings (xerial snappy, independent-block LZ4 frames), decoding what
other writers produce, and clear errors for damaged streams."""

from __future__ import annotations

import gzip
import os
import struct
from collections.abc import Callable

import cramjam
import kafka.codec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafpy.common.errors import CorruptRecordError, MessageTooLargeError
from kafpy.records.compression import (
    MAX_DECOMPRESSED_BATCH_BYTES,
    CompressionType,
    _xxh32_short,
    compress,
    decompress,
    decompressed_limit,
)

ALL_CODECS = list(CompressionType)
COMPRESSIBLE = b"kafpy compresses this line again and again. " * 3000  # ~132 KiB
RANDOM = os.urandom(70_000)


def test_ids_and_names_are_kafkas() -> None:
    assert [int(c) for c in CompressionType] == [0, 1, 2, 3, 4]
    assert [c.kafka_name for c in CompressionType] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert CompressionType.from_name("snappy") is CompressionType.SNAPPY
    assert CompressionType.from_name(" ZSTD ") is CompressionType.ZSTD


def test_unknown_names_and_ids_are_explained() -> None:
    with pytest.raises(
        ValueError, match="Unknown compression codec 'brotli'; expected one of none"
    ):
        CompressionType.from_name("brotli")
    with pytest.raises(CorruptRecordError, match="Unknown compression codec id 6"):
        decompress(6, b"x")


@pytest.mark.parametrize("codec", ALL_CODECS)
@pytest.mark.parametrize(
    "data", [b"", b"a", COMPRESSIBLE, RANDOM], ids=["empty", "one", "text", "random"]
)
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    compressed = compress(codec, data)
    assert decompress(codec, compressed) == data
    assert decompress(codec, memoryview(bytearray(compressed))) == data


@settings(max_examples=50)
@given(st.sampled_from(ALL_CODECS), st.binary(max_size=3000))
def test_round_trip_random(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


# --- snappy ------------------------------------------------------------------


def test_snappy_uses_the_xerial_framing_with_32k_blocks() -> None:
    out = compress(CompressionType.SNAPPY, COMPRESSIBLE)
    assert out[:16] == b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01"
    pos, blocks, decoded = 16, 0, b""
    while pos < len(out):
        (size,) = struct.unpack_from(">i", out, pos)
        block = out[pos + 4 : pos + 4 + size]
        decoded += bytes(cramjam.snappy.decompress_raw(block))
        pos += 4 + size
        blocks += 1
    assert pos == len(out)
    assert decoded == COMPRESSIBLE
    assert blocks == -(-len(COMPRESSIBLE) // (32 * 1024))


def test_snappy_matches_kafka_pythons_xerial_encoder(kafka_python_codecs: None) -> None:
    theirs = kafka.codec.snappy_encode(COMPRESSIBLE, xerial_compatible=True)
    assert compress(CompressionType.SNAPPY, COMPRESSIBLE) == theirs
    assert kafka.codec.snappy_decode(compress(CompressionType.SNAPPY, RANDOM)) == RANDOM


def test_snappy_accepts_raw_and_framed_streams() -> None:
    raw = bytes(cramjam.snappy.compress_raw(COMPRESSIBLE))
    framed = bytes(cramjam.snappy.compress(COMPRESSIBLE))
    assert decompress(CompressionType.SNAPPY, raw) == COMPRESSIBLE
    assert decompress(CompressionType.SNAPPY, framed) == COMPRESSIBLE


def test_snappy_xerial_with_little_endian_version_fields_is_accepted() -> None:
    out = bytearray(compress(CompressionType.SNAPPY, COMPRESSIBLE))
    out[8:16] = struct.pack("<ii", 1, 1)
    assert decompress(CompressionType.SNAPPY, out) == COMPRESSIBLE


def test_snappy_block_length_past_the_end_is_corrupt() -> None:
    out = compress(CompressionType.SNAPPY, b"hello" * 10)
    with pytest.raises(CorruptRecordError, match="runs past the end"):
        decompress(CompressionType.SNAPPY, out[:-3])
    with pytest.raises(CorruptRecordError, match="truncated"):
        decompress(CompressionType.SNAPPY, out + b"\x00\x00")


# --- lz4 ---------------------------------------------------------------------


def test_xxh32_known_vectors() -> None:
    assert _xxh32_short(b"") == 0x02CC5D05
    assert _xxh32_short(b"abcd") == 0xA3643705
    # cramjam's own frame descriptor (FLG 0x54, BD 0x40) carries this checksum byte
    flg_bd_hc = bytes(cramjam.lz4.compress(b"x"))[4:7]
    assert (_xxh32_short(flg_bd_hc[:2]) >> 8) & 0xFF == flg_bd_hc[2]


def test_lz4_frame_has_independent_64k_blocks_as_kafka_requires() -> None:
    out = compress(CompressionType.LZ4, COMPRESSIBLE)
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg, bd = out[4], out[5]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence: Kafka's Java reader refuses linked blocks
    assert not flg & 0x08  # no content size
    assert bd == 0x40  # 64 KiB blocks
    assert (_xxh32_short(out[4:6]) >> 8) & 0xFF == out[6]
    assert out.endswith(b"\x00\x00\x00\x00")
    # each block decodes on its own
    pos, decoded = 7, b""
    while True:
        (size,) = struct.unpack_from("<I", out, pos)
        pos += 4
        if size == 0:
            break
        block = out[pos : pos + (size & 0x7FFFFFFF)]
        if size & 0x80000000:
            decoded += block
        else:
            expected = min(64 * 1024, len(COMPRESSIBLE) - len(decoded))
            decoded += bytes(cramjam.lz4.decompress_block(block, output_len=expected))
        pos += size & 0x7FFFFFFF
    assert decoded == COMPRESSIBLE


def test_lz4_stores_incompressible_blocks_uncompressed() -> None:
    out = compress(CompressionType.LZ4, RANDOM)
    (size,) = struct.unpack_from("<I", out, 7)
    assert size == 0x80000000 | 64 * 1024
    assert decompress(CompressionType.LZ4, out) == RANDOM


def test_lz4_decodes_linked_block_frames_with_checksums() -> None:
    theirs = bytes(cramjam.lz4.compress(COMPRESSIBLE))
    assert decompress(CompressionType.LZ4, theirs) == COMPRESSIBLE


def test_lz4_damaged_descriptor_checksum_is_corrupt() -> None:
    out = bytearray(compress(CompressionType.LZ4, b"hello"))
    out[6] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="lz4 data of .* does not decompress"):
        decompress(CompressionType.LZ4, out)


# --- zstd and gzip -------------------------------------------------------------


def test_zstd_streaming_frame_without_content_size_and_concatenated_frames() -> None:
    streaming = cramjam.zstd.Compressor()
    streaming.compress(COMPRESSIBLE)
    frame = bytes(streaming.finish())
    assert decompress(CompressionType.ZSTD, frame) == COMPRESSIBLE
    both = frame + compress(CompressionType.ZSTD, b"tail")
    assert decompress(CompressionType.ZSTD, both) == COMPRESSIBLE + b"tail"


def test_gzip_from_the_standard_library_and_multiple_members() -> None:
    member = gzip.compress(COMPRESSIBLE, compresslevel=9)
    assert decompress(CompressionType.GZIP, member) == COMPRESSIBLE
    assert decompress(CompressionType.GZIP, member + gzip.compress(b"!")) == COMPRESSIBLE + b"!"
    assert gzip.decompress(compress(CompressionType.GZIP, COMPRESSIBLE)) == COMPRESSIBLE


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([c for c in ALL_CODECS if c]), st.binary(max_size=200))
def test_garbage_is_corrupt_not_a_crash(codec: CompressionType, junk: bytes) -> None:
    try:
        decompress(codec, b"\x00garbage" + junk)
    except CorruptRecordError as exc:
        assert codec.kafka_name in str(exc)


# --- bounded decompression ------------------------------------------------------------

COMPRESSED_CODECS = [c for c in CompressionType if c is not CompressionType.NONE]


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_decompression_stops_at_the_limit(codec: CompressionType) -> None:
    data = compress(codec, bytes(4 << 20))
    assert decompress(codec, data, limit=4 << 20) == bytes(4 << 20)
    with pytest.raises(MessageTooLargeError, match=f"more than {1 << 20} bytes"):
        decompress(codec, data, limit=1 << 20)
    with pytest.raises(MessageTooLargeError):
        decompress(codec, data, limit=(4 << 20) - 1)


@pytest.mark.parametrize(
    "framing",
    [
        lambda data: bytes(cramjam.snappy.compress_raw(data)),  # a bare raw block
        lambda data: bytes(cramjam.snappy.compress(data)),  # the official framing
    ],
)
def test_other_snappy_framings_are_bounded_too(framing: Callable[[bytes], bytes]) -> None:
    data = framing(bytes(2 << 20))
    assert len(decompress(CompressionType.SNAPPY, data, limit=2 << 20)) == 2 << 20
    with pytest.raises(MessageTooLargeError):
        decompress(CompressionType.SNAPPY, data, limit=1 << 20)


def test_a_gigabyte_zstd_bomb_is_refused_without_allocating_it() -> None:
    compressor = cramjam.zstd.Compressor()
    chunk = bytes(1 << 20)
    for _ in range(1024):
        compressor.compress(chunk)
    bomb = bytes(compressor.finish())
    assert len(bomb) < 64 * 1024
    before = _peak_rss_kib()
    with pytest.raises(MessageTooLargeError):
        decompress(CompressionType.ZSTD, bomb, limit=1 << 20)
    assert _peak_rss_kib() - before < 64 * 1024  # far less than the gigabyte


def test_decompressed_limit_is_what_the_records_may_need_within_the_request_cap() -> None:
    assert decompressed_limit(1, 1_048_588) == 1_048_588
    assert decompressed_limit(0, 1_048_588) == 1_048_588
    assert decompressed_limit(10, 1_000_000) == 10_000_000
    assert decompressed_limit(100_000, 1_000_000) == MAX_DECOMPRESSED_BATCH_BYTES
    # a topic allowing batches above the cap keeps its own bound
    assert decompressed_limit(1, 200 << 20) == 200 << 20


def _peak_rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")
