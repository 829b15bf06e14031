"""CleanerConfig: the broker's `log.cleaner.*` settings, as Kafka's CleanerConfig.

The keys only the cleaner reads are declared here (`CLEANER_CONFIG_DEF`, which KafkaConfig
takes in, as it takes the log keys from `kafpy.storage.log_config`); the dataclass defaults
are those declarations' defaults, so a default is written once.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafpy.common.config_def import ConfigDef, ConfigSource, ConfigType, Importance, Range
from kafpy.storage.log_config import BROKER_LOG_CONFIG_DEF


def _cleaner_config_def() -> ConfigDef:
    m = Importance.MEDIUM
    t = ConfigType
    return (
        ConfigDef()
        .define("log.cleaner.threads", t.INT, 1, Range.at_least(0), m,
                "The number of background threads compacting logs.")
        .define("log.cleaner.dedupe.buffer.size", t.LONG, 128 * 1024 * 1024, None, m,
                "The memory for the cleaners' offset maps, shared by all cleaner threads.")
        .define("log.cleaner.io.buffer.size", t.INT, 512 * 1024, Range.at_least(0), m,
                "The memory for the cleaners' read and write buffers, shared by all cleaner threads.")
        .define("log.cleaner.io.buffer.load.factor", t.DOUBLE, 0.9, None, m,
                "How full a cleaner's offset map may get before a round ends.")
        .define("log.cleaner.io.max.bytes.per.second", t.DOUBLE, 1.7976931348623157e308, None, m,
                "The cleaners' combined read+write I/O limit.")
        .define("log.cleaner.backoff.ms", t.LONG, 15 * 1000, Range.at_least(0), m,
                "How long a cleaner sleeps when no log needs cleaning.")
    )  # fmt: skip


CLEANER_CONFIG_DEF: ConfigDef = _cleaner_config_def()
"""The server.properties keys only the log cleaner reads (a subset of KafkaConfig)."""

# Kafka's CleanerConfig default, not message.max.bytes': a cleaner built without a broker
# configuration (tests, an embedded LogManager) accepts batches up to 32 MiB.
_MAX_MESSAGE_SIZE = 32 * 1024 * 1024


@dataclass(frozen=True)
class CleanerConfig:
    """Settings of the log cleaner (Kafka's keys in brackets).

    num_threads: cleaner threads [log.cleaner.threads].
    dedupe_buffer_size: bytes of offset map memory shared by all threads
        [log.cleaner.dedupe.buffer.size].
    dedupe_buffer_load_factor: how full an offset map may get [log.cleaner.io.buffer.load.factor].
    io_buffer_size: bytes read from a segment, or buffered before a write, at a time
        [log.cleaner.io.buffer.size, divided among the threads].
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

    num_threads: int = CLEANER_CONFIG_DEF.default("log.cleaner.threads")
    dedupe_buffer_size: int = CLEANER_CONFIG_DEF.default("log.cleaner.dedupe.buffer.size")
    dedupe_buffer_load_factor: float = CLEANER_CONFIG_DEF.default(
        "log.cleaner.io.buffer.load.factor"
    )
    io_buffer_size: int = CLEANER_CONFIG_DEF.default("log.cleaner.io.buffer.size")
    max_message_size: int = _MAX_MESSAGE_SIZE
    max_io_bytes_per_second: float = CLEANER_CONFIG_DEF.default(
        "log.cleaner.io.max.bytes.per.second"
    )
    backoff_ms: int = CLEANER_CONFIG_DEF.default("log.cleaner.backoff.ms")
    enable_cleaner: bool = BROKER_LOG_CONFIG_DEF.default("log.cleaner.enable")
    hash_algorithm: str = "md5"
    worker_process: bool = True

    @classmethod
    def from_config(cls, config: ConfigSource) -> CleanerConfig:
        """The cleaner settings of a broker configuration (anything with `get(key)`, such as
        KafkaConfig): the I/O buffer memory is shared among the threads, as in Kafka."""
        threads = int(config.get("log.cleaner.threads"))
        return cls(
            num_threads=threads,
            dedupe_buffer_size=int(config.get("log.cleaner.dedupe.buffer.size")),
            dedupe_buffer_load_factor=float(config.get("log.cleaner.io.buffer.load.factor")),
            io_buffer_size=int(config.get("log.cleaner.io.buffer.size")) // max(threads, 1),
            max_message_size=int(config.get("message.max.bytes")),
            max_io_bytes_per_second=float(config.get("log.cleaner.io.max.bytes.per.second")),
            backoff_ms=int(config.get("log.cleaner.backoff.ms")),
            enable_cleaner=bool(config.get("log.cleaner.enable")) and threads > 0,
        )
