"""Fixtures of the records tests: kafka-python as the reference implementation.

kafka-python 3.0.12 frames snappy (xerial) and gzip itself but needs python-snappy, lz4
and zstandard for the codec primitives, which are not installed. `kafka_python_codecs`
gives it those primitives from cramjam for the duration of a test: raw snappy blocks
(kafka-python still writes and parses the xerial framing with its own code), cramjam's
LZ4 frame (linked blocks with block and content checksums, so a frame shaped unlike
kafpy's) and a plain zstd frame.
"""

from __future__ import annotations

import types
from collections.abc import Iterator

import cramjam
import kafka.codec
import kafka.record.default_records as default_records
import pytest


@pytest.fixture
def kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    snappy = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
    )
    monkeypatch.setattr(kafka.codec, "snappy", snappy)
    monkeypatch.setattr(kafka.codec, "lz4", object())
    monkeypatch.setattr(kafka.codec, "zstd", object())
    monkeypatch.setattr(
        default_records, "lz4_encode", lambda data: bytes(cramjam.lz4.compress(bytes(data)))
    )
    monkeypatch.setattr(
        default_records, "lz4_decode", lambda data: bytes(cramjam.lz4.decompress(bytes(data)))
    )
    monkeypatch.setattr(
        default_records, "zstd_encode", lambda data: bytes(cramjam.zstd.compress(bytes(data)))
    )
    monkeypatch.setattr(
        default_records, "zstd_decode", lambda data: bytes(cramjam.zstd.decompress(bytes(data)))
    )
    assert kafka.codec.has_snappy() and kafka.codec.has_lz4() and kafka.codec.has_zstd()
    yield
