"""LazyOffsetCheckpoints: the high watermarks checkpointed in each log dir, read on first use.

A LeaderAndIsr request creating many partitions looks up each one's checkpointed high
watermark; each dir's replication-offset-checkpoint file is read once for the request
(Kafka's LazyOffsetCheckpoints), not once per partition. An unreadable file reads as
empty: the high watermarks start at the log start offsets and move up again as the ISR
confirms; the next checkpoint replaces the file.
"""

from __future__ import annotations

from pathlib import Path

from kafpy.common.errors import KafkaStorageError
from kafpy.common.logger import PrefixAdapter
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

HIGH_WATERMARK_CHECKPOINT_FILE = "replication-offset-checkpoint"


class LazyOffsetCheckpoints:
    """Each log dir's checkpointed high watermarks, read from its file at the first lookup."""

    def __init__(self, log: PrefixAdapter) -> None:
        self.log = log
        self._by_dir: dict[Path, dict[TopicPartition, int]] = {}

    def fetch(self, data_dir: Path, tp: TopicPartition) -> int | None:
        """The high watermark of `tp` checkpointed in `data_dir` (None: none)."""
        entries = self._by_dir.get(data_dir)
        if entries is None:
            try:
                entries = OffsetCheckpointFile(data_dir / HIGH_WATERMARK_CHECKPOINT_FILE).read()
            except KafkaStorageError as e:
                self.log.warning(
                    "Error while reading %s in %s, reading it as empty: %s",
                    HIGH_WATERMARK_CHECKPOINT_FILE,
                    data_dir,
                    e,
                )
                entries = {}
            self._by_dir[data_dir] = entries
        return entries.get(tp)

    def forget(self, data_dir: Path) -> None:
        """Drop what was read from `data_dir` (it went offline)."""
        self._by_dir.pop(data_dir, None)

    def clear(self) -> None:
        """Read every file again at its next lookup (each LeaderAndIsr reads them afresh)."""
        self._by_dir.clear()
