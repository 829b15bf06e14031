"""LogDirCheckpoints: the offset checkpoint files the LogManager keeps in each log dir.

`recovery-point-offset-checkpoint` holds each log's recovery point (below it, the log is
known to be on disk); `log-start-offset-checkpoint` the log start offsets that moved
past their log's first segment (DeleteRecords, retention). Kafka's LogManager keeps one
OffsetCheckpointFile of each per dir; so does this class.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kafpy.common.errors import KafkaStorageError
from kafpy.common.logger import PrefixAdapter
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

if TYPE_CHECKING:
    from kafpy.storage.log import Log

__all__ = [
    "LOG_START_OFFSET_CHECKPOINT_FILE",
    "RECOVERY_POINT_CHECKPOINT_FILE",
    "LogDirCheckpoints",
]

RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"


class LogDirCheckpoints:
    """The recovery point and log start offset checkpoints of one log dir.

    Reads warn (on the LogManager's logger) and give None for a file that cannot be
    read; writes raise KafkaStorageError, which the LogManager reports as a failure of
    the dir.
    """

    def __init__(self, dir: Path, log: PrefixAdapter) -> None:
        self.dir = dir
        self.log = log
        self.recovery_points = OffsetCheckpointFile(dir / RECOVERY_POINT_CHECKPOINT_FILE)
        self.log_start_offsets = OffsetCheckpointFile(dir / LOG_START_OFFSET_CHECKPOINT_FILE)

    def read_recovery_points(self) -> dict[TopicPartition, int] | None:
        return self._read(self.recovery_points, RECOVERY_POINT_CHECKPOINT_FILE)

    def read_log_start_offsets(self) -> dict[TopicPartition, int] | None:
        return self._read(self.log_start_offsets, LOG_START_OFFSET_CHECKPOINT_FILE)

    def _read(
        self, checkpoint: OffsetCheckpointFile, kind: str
    ) -> dict[TopicPartition, int] | None:
        """The checkpoint's entries, or None (warned about) if it cannot be read."""
        try:
            return checkpoint.read()
        except KafkaStorageError as e:
            d = self.dir
            self.log.warning("Error occurred while reading %s file of directory %s: %s", kind, d, e)
            self.log.warning("Resetting the %s to 0 for all logs in %s", kind.replace("-", " "), d)
            return None

    def write_recovery_points(self, logs: Mapping[TopicPartition, Log]) -> None:
        """Write the recovery point of each of `logs` (the logs of this dir)."""
        self.recovery_points.write({tp: log.recovery_point for tp, log in logs.items()})

    def write_log_start_offsets(self, logs: Mapping[TopicPartition, Log]) -> None:
        """Write the log start offsets of `logs` that moved past their first segment."""
        offsets: dict[TopicPartition, int] = {}
        for tp, log in logs.items():
            segments = log.log_segments()
            # as Kafka: only logs whose start offset moved past their first segment's base
            if segments and log.log_start_offset > segments[0].base_offset:
                offsets[tp] = log.log_start_offset
        self.log_start_offsets.write(offsets)
