"""CleanerConfig: the broker's `log.cleaner.*` settings, as Kafka's CleanerConfig."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class CleanerConfig:
    """Settings of the log cleaner (Kafka's keys in brackets).

    num_threads: cleaner threads [log.cleaner.threads].
    dedupe_buffer_size: bytes of offset map memory shared by all threads
        [log.cleaner.dedupe.buffer.size].
    dedupe_buffer_load_factor: how full an offset map may get [log.cleaner.io.buffer.load.factor].
    io_buffer_size: bytes read from a segment, or buffered before a write, at a time
        [log.cleaner.io.buffer.size].
    max_message_size: the largest batch expected [message.max.bytes].
    max_io_bytes_per_second: read+write throttle for all threads together
        [log.cleaner.io.max.bytes.per.second].
    backoff_ms: sleep when no log is dirty enough [log.cleaner.backoff.ms].
    enable_cleaner: start the cleaner at all [log.cleaner.enable].
    hash_algorithm: the digest of keys in the offset map (any hashlib name).
    worker_process: run each round's map building and rewriting in a worker process
        per thread (kafpy's own; the broker always does). Off, rounds run on the cleaner
        threads themselves, which unit tests driving MockTime rely on.
    """

    num_threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_message_size: int = 32 * 1024 * 1024
    max_io_bytes_per_second: float = sys.float_info.max
    backoff_ms: int = 15 * 1000
    enable_cleaner: bool = True
    hash_algorithm: str = "md5"
    worker_process: bool = True
