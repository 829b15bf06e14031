"""CleanerConfig reads the broker's log.cleaner.* keys; its defaults are the keys' defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kafpy.server.kafka_config import KafkaConfig
from kafpy.storage.cleaner.cleaner_config import CleanerConfig


def test_defaults_are_the_broker_config_defaults(tmp_path: Path) -> None:
    config = KafkaConfig({"log.dirs": str(tmp_path)})
    # max_message_size alone is Kafka's CleanerConfig default rather than message.max.bytes'
    expected = dataclasses.replace(
        CleanerConfig(), max_message_size=config.get("message.max.bytes")
    )
    assert CleanerConfig.from_config(config) == expected


def test_io_buffer_is_shared_among_threads(tmp_path: Path) -> None:
    config = KafkaConfig({
        "log.dirs": str(tmp_path),
        "log.cleaner.threads": "4",
        "log.cleaner.io.buffer.size": "4096",
    })  # fmt: skip
    cleaner = CleanerConfig.from_config(config)
    assert (cleaner.num_threads, cleaner.io_buffer_size, cleaner.enable_cleaner) == (4, 1024, True)


def test_no_threads_disables_the_cleaner(tmp_path: Path) -> None:
    config = KafkaConfig({"log.dirs": str(tmp_path), "log.cleaner.threads": "0"})
    assert not CleanerConfig.from_config(config).enable_cleaner
