"""LeaderEpochFileCache: which leader epoch started at which offset, for one partition.

Kafka keeps, per partition, the offset at which each leader epoch began (KIP-101). A
follower asks the leader for the end offset of an epoch (OffsetForLeaderEpoch) to know
where to truncate; ListOffsets and Fetch report epochs from it. The entries are
persisted in `<partition dir>/leader-epoch-checkpoint`: a version line (0), a count line,
then `epoch startOffset` lines, written to a .tmp file, fsynced and renamed.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.offset_checkpoint_file import CheckpointFile

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    """A leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


def _parse_entry(line: str) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) != 2:
        return None
    try:
        epoch, offset = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return epoch, offset


class LeaderEpochCheckpointFile(CheckpointFile[int, int]):
    """The `leader-epoch-checkpoint` file of one partition directory (epoch -> start offset)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, 0, lambda e, o: f"{e} {o}", _parse_entry)


class LeaderEpochFileCache:
    """The epoch -> start offset entries of one partition, kept in increasing order of both.

    `dir_of` gives the partition's current directory (it moves when the log is renamed
    for deletion); every change is written to its leader-epoch-checkpoint at once.
    """

    def __init__(self, tp: TopicPartition, dir_of: Callable[[], Path]) -> None:
        self.topic_partition = tp
        self._dir_of = dir_of
        self._lock = threading.RLock()
        self.log = component_logger(
            "kafpy.server.epoch.LeaderEpochFileCache", f"LeaderEpochCache {tp}"
        )
        entries = self._checkpoint().read()
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        for epoch, offset in entries.items():
            self._epochs.append(epoch)
            self._offsets.append(offset)

    def _checkpoint(self) -> LeaderEpochCheckpointFile:
        return LeaderEpochCheckpointFile(self._dir_of() / LEADER_EPOCH_CHECKPOINT_FILE)

    def _flush(self) -> None:
        self._checkpoint().write(dict(zip(self._epochs, self._offsets, strict=True)))

    @property
    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return [EpochEntry(e, o) for e, o in zip(self._epochs, self._offsets, strict=True)]

    @property
    def latest_epoch(self) -> int | None:
        with self._lock:
            return self._epochs[-1] if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset`.

        Entries that would break the ordering (an epoch at least as large, or a start
        offset at least as large) are removed first, as Kafka does.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(
                f"Leader epoch {epoch} and start offset {start_offset} of {self.topic_partition} "
                "must both be non-negative"
            )
        with self._lock:
            if self._epochs and epoch == self._epochs[-1] and start_offset >= self._offsets[-1]:
                return
            removed = 0
            while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
                self._epochs.pop()
                self._offsets.pop()
                removed += 1
            if removed:
                self.log.warning(
                    "New epoch entry EpochEntry(epoch=%d, startOffset=%d) caused truncation of %d "
                    "conflicting epoch entries",
                    epoch,
                    start_offset,
                    removed,
                )
            self._epochs.append(epoch)
            self._offsets.append(start_offset)
            self._flush()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetForLeaderEpoch for `requested_epoch`.

        The end offset of an epoch is the start offset of the next larger epoch, or the log
        end offset for the latest one; (-1, -1) when the epoch is undefined or later than
        any known; a requested epoch older than every entry gets the first start offset.
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if requested_epoch == self._epochs[-1]:
                return requested_epoch, log_end_offset
            higher = bisect.bisect_right(self._epochs, requested_epoch)
            if higher == len(self._epochs):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, self._offsets[0]
            return self._epochs[higher - 1], self._offsets[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset` (None before the first entry)."""
        with self._lock:
            i = bisect.bisect_right(self._offsets, offset)
            return self._epochs[i - 1] if i else None

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after `end_offset` (the log was truncated there)."""
        with self._lock:
            if end_offset < 0 or not self._offsets or self._offsets[-1] < end_offset:
                return
            i = bisect.bisect_left(self._offsets, end_offset)
            del self._epochs[i:]
            del self._offsets[i:]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget epochs wholly before `start_offset`; the one holding it now starts there."""
        with self._lock:
            i = bisect.bisect_right(self._offsets, start_offset)
            if i == 0:
                return
            epoch = self._epochs[i - 1]
            del self._epochs[:i]
            del self._offsets[:i]
            self._epochs.insert(0, epoch)
            self._offsets.insert(0, start_offset)
            self._flush()

    def clear_and_flush(self) -> None:
        with self._lock:
            self._epochs.clear()
            self._offsets.clear()
            self._flush()
