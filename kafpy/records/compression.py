"""Kafka's compression codecs with the framings Kafka clients actually write.

A compressed v2 batch carries its records as one compressed stream after the 61-byte
header. What the stream looks like per codec:

- gzip: an ordinary gzip member (Java's GZIPOutputStream); several members are accepted.
- snappy: the xerial framing Java's snappy-java and librdkafka write: a 16-byte header
  (0x82 "SNAPPY" 0x00, version 1, compatible version 1, big-endian int32s) followed by
  blocks of raw snappy, each prefixed by its big-endian int32 length. Decompression also
  accepts a bare raw snappy block (some non-Java clients send that) and the official
  snappy framing format.
- lz4: the LZ4 frame format with independent blocks. Kafka's Java reader rejects
  linked blocks ("Dependent block stream is unsupported"), so kafpy writes the frame itself:
  64 KiB independent blocks, no checksums, no content size, the way Kafka's Java
  KafkaLZ4BlockOutputStream does.
- zstd: a standard zstd frame (with or without a content size; several frames accepted).

All the byte crunching is done by `cramjam`.

Decompression is bounded: `decompress(codec, data, limit)` writes into a buffer of
`limit` + 1 bytes whose pages the kernel maps only as they are written, and fails with
MessageTooLargeError as soon as the stream would pass `limit`, so a small batch that
claims to expand to gigabytes costs at most `limit` bytes and stops early.
`decompressed_limit` is the bound the broker, the cleaner and the Spark reader use.
"""

from __future__ import annotations

import mmap
import struct
import threading
from enum import IntEnum
from typing import Any

import cramjam

from kafpy.common.errors import CorruptRecordError, MessageTooLargeError

Buffer = bytes | bytearray | memoryview


# The most a batch's records may decompress to, whatever its record count: Kafka's default
# socket.request.max.bytes, the largest request a broker reads into memory at all.
MAX_DECOMPRESSED_BATCH_BYTES = 100 * 1024 * 1024


def decompressed_limit(record_count: int, max_message_bytes: int) -> int:
    """How many bytes a compressed batch of `record_count` records may decompress to.

    No record may be larger than `max.message.bytes` (what the topic accepts for a whole
    batch; the Java producer also refuses records over its max.request.size), so the
    count bounds the content; the whole never passes MAX_DECOMPRESSED_BATCH_BYTES, and
    never goes below `max.message.bytes` either.
    """
    by_count = max(record_count, 1) * max_message_bytes
    return max(max_message_bytes, min(by_count, MAX_DECOMPRESSED_BATCH_BYTES))


class CompressionType(IntEnum):
    """The codec id held in bits 0-2 of a record batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka's `compression.type` config uses ("none", "gzip", ...)."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """The codec for a `compression.type` value such as "snappy" (case-insensitive)."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(
                f"Unknown compression codec {name!r}; expected one of "
                f"{', '.join(c.kafka_name for c in cls)}"
            ) from None

    @classmethod
    def from_id(cls, codec_id: int) -> CompressionType:
        """The codec for the id found in batch attributes; CorruptRecordError if unknown."""
        try:
            return cls(codec_id)
        except ValueError:
            raise CorruptRecordError(
                f"Unknown compression codec id {codec_id}; Kafka defines ids 0 to 4 "
                "(none, gzip, snappy, lz4, zstd)"
            ) from None


# --- snappy (xerial framing) -------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default block size
_SNAPPY_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"
_INT32_BE = struct.Struct(">i")


def _snappy_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_INT32_BE.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw_length(block: Buffer) -> int:
    """The uncompressed length a raw snappy block declares in its varint preamble."""
    value = shift = 0
    for i, byte in enumerate(bytes(memoryview(block)[:5])):
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
        if i == 4:
            break
    raise CorruptRecordError("snappy block has no valid length preamble")


def _snappy_decompress(data: Buffer, limit: int) -> bytes:
    view = memoryview(data)
    head = bytes(view[:16])
    if len(view) >= 16 and head.startswith(_XERIAL_MAGIC):
        # The version fields are ignored: some producers write them little-endian.
        parts = []
        total = 0
        pos, end = 16, len(view)
        while pos < end:
            if end - pos < 4:
                raise CorruptRecordError(
                    f"snappy stream is truncated: {end - pos} bytes left where a 4-byte "
                    "block length was expected"
                )
            (size,) = _INT32_BE.unpack_from(view, pos)
            pos += 4
            if size < 0 or pos + size > end:
                raise CorruptRecordError(
                    f"snappy block length {size} at position {pos - 4} runs past the "
                    f"end of the {end}-byte stream"
                )
            block = view[pos : pos + size]
            total += _snappy_raw_length(block)
            if total > limit:
                raise _too_large("snappy", len(view), limit)
            parts.append(bytes(cramjam.snappy.decompress_raw(block)))
            pos += size
        return b"".join(parts)
    if head.startswith(_SNAPPY_FRAMED_MAGIC):
        return _bounded(cramjam.snappy.decompress_into, "snappy", view, limit)
    if _snappy_raw_length(view) > limit:
        raise _too_large("snappy", len(view), limit)
    return bytes(cramjam.snappy.decompress_raw(view))


# --- lz4 (frame format, independent blocks) -----------------------------------

_LZ4_MAGIC = struct.pack("<I", 0x184D2204)
_LZ4_FLG = 0x60  # version 01, block independence; no checksums, no content size
_LZ4_BD = 0x40  # maximum block size 64 KiB
_LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_UNCOMPRESSED_BIT = 0x80000000
_UINT32_LE = struct.Struct("<I")

_XXH_PRIME1 = 2654435761
_XXH_PRIME2 = 2246822519
_XXH_PRIME3 = 3266489917
_XXH_PRIME5 = 374761393
_MASK32 = 0xFFFFFFFF


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes: all the LZ4 frame descriptor checksum needs."""
    if len(data) >= 16:
        raise ValueError("_xxh32_short handles inputs shorter than 16 bytes only")

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _MASK32

    h = (seed + _XXH_PRIME5 + len(data)) & _MASK32
    pos = 0
    while pos + 4 <= len(data):
        (word,) = _UINT32_LE.unpack_from(data, pos)
        h = (rotl((h + word * _XXH_PRIME3) & _MASK32, 17) * 668265263) & _MASK32
        pos += 4
    for byte in data[pos:]:
        h = (rotl((h + byte * _XXH_PRIME5) & _MASK32, 11) * _XXH_PRIME1) & _MASK32
    h ^= h >> 15
    h = (h * _XXH_PRIME2) & _MASK32
    h ^= h >> 13
    h = (h * _XXH_PRIME3) & _MASK32
    h ^= h >> 16
    return h


def _lz4_frame_header() -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    checksum = (_xxh32_short(descriptor) >> 8) & 0xFF
    return _LZ4_MAGIC + descriptor + bytes((checksum,))


_LZ4_FRAME_HEADER = _lz4_frame_header()
_LZ4_END_MARK = b"\x00\x00\x00\x00"


def _lz4_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_LZ4_FRAME_HEADER]
    for start in range(0, len(view), _LZ4_BLOCK_SIZE):
        chunk = view[start : start + _LZ4_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            parts.append(_UINT32_LE.pack(len(chunk) | _LZ4_UNCOMPRESSED_BIT))
            parts.append(bytes(chunk))
        else:
            parts.append(_UINT32_LE.pack(len(block)))
            parts.append(block)
    parts.append(_LZ4_END_MARK)
    return b"".join(parts)


# The output buffer of a bounded decompression is kept per thread and reused: mapping fresh
# pages for each batch (and faulting them in) would cost more than decompressing it.
_KEPT_BUFFER_BYTES = 16 * 1024 * 1024
_thread_buffers = threading.local()


def _too_large(codec: str, size: int, limit: int) -> MessageTooLargeError:
    return MessageTooLargeError(
        f"{codec} data of {size} bytes decompresses to more than {limit} bytes, the most "
        "its batch may hold (max.message.bytes per record); the batch is refused"
    )


def _bounded(decompress_into: Any, codec: str, data: Buffer, limit: int) -> bytes:
    """Decompress into a `limit` + 1 byte buffer: stops as soon as the output passes it."""
    buffer = getattr(_thread_buffers, "buffer", None)
    if buffer is None or len(buffer) <= limit:
        if buffer is not None:
            buffer.close()
        # an anonymous mapping: pages are backed only as they are written, never zero-filled
        buffer = _thread_buffers.buffer = mmap.mmap(-1, limit + 1)
    n = 0
    try:
        with memoryview(buffer) as whole, whole[: limit + 1] as out:
            try:
                n = decompress_into(data, out)
            except cramjam.DecompressionError as exc:
                if "failed to write whole buffer" in str(exc):
                    raise _too_large(codec, len(data), limit) from None
                raise
            if n > limit:
                raise _too_large(codec, len(data), limit)
            return bytes(out[:n])
    finally:
        if n > _KEPT_BUFFER_BYTES:  # give a big batch's pages back
            del _thread_buffers.buffer
            buffer.close()


# --- dispatch ----------------------------------------------------------------


def compress(codec: CompressionType | int, data: Buffer) -> bytes:
    """Compress `data` (the serialized records of a batch) with Kafka's framing for `codec`."""
    codec = CompressionType(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec is CompressionType.SNAPPY:
        return _snappy_compress(data)
    if codec is CompressionType.LZ4:
        return _lz4_compress(data)
    return bytes(cramjam.zstd.compress(data))


def decompress(
    codec: CompressionType | int, data: Buffer, limit: int = MAX_DECOMPRESSED_BATCH_BYTES
) -> bytes:
    """Decompress a batch's records section; CorruptRecordError if the stream is damaged,
    MessageTooLargeError as soon as it passes `limit` bytes (see decompressed_limit)."""
    codec = CompressionType.from_id(int(codec))
    if codec is CompressionType.NONE:
        return bytes(data)
    try:
        if codec is CompressionType.GZIP:
            return _bounded(cramjam.gzip.decompress_into, "gzip", data, limit)
        if codec is CompressionType.SNAPPY:
            return _snappy_decompress(data, limit)
        if codec is CompressionType.LZ4:
            return _bounded(cramjam.lz4.decompress_into, "lz4", data, limit)
        return _bounded(cramjam.zstd.decompress_into, "zstd", data, limit)
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(
            f"{codec.kafka_name} data of {len(data)} bytes does not decompress: {exc}"
        ) from exc


# --- message format v0's lz4 framing -------------------------------------------------
#
# Kafka before 0.10 (message format v0) wrote lz4 frames whose header checksum was taken
# over the magic number as well as the frame descriptor (KAFKA-1493); message format v1
# and later use the correct checksum. Clients writing magic 0 still produce the broken
# form, and readers of magic 0 expect it.


def _lz4_descriptor_end(data: Buffer) -> int:
    """Offset of the header checksum byte of the lz4 frame `data`."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        raise CorruptRecordError("lz4 data does not start with an lz4 frame header")
    flg = data[4]
    return 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)


def lz4_frame_from_legacy(data: Buffer) -> bytes:
    """The lz4 frame of a magic 0 message with its header checksum made standard."""
    end = _lz4_descriptor_end(data)
    if end >= len(data):
        raise CorruptRecordError("lz4 frame header is truncated")
    out = bytearray(data)
    out[end] = (_xxh32_short(bytes(out[4:end])) >> 8) & 0xFF
    return bytes(out)


def lz4_frame_to_legacy(data: Buffer) -> bytes:
    """A standard lz4 frame with the header checksum magic 0 readers expect."""
    end = _lz4_descriptor_end(data)
    out = bytearray(data)
    out[end] = (_xxh32_short(bytes(out[:end])) >> 8) & 0xFF
    return bytes(out)
