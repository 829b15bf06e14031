"""LogCleanerManager: which logs get cleaned, their cleaning states and the cleaner checkpoints."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from kafpy.common.errors import KafkaError, KafkaStorageError
from kafpy.common.logger import component_logger
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.cleaner.log_to_clean import LogToClean, segments_in_range
from kafpy.storage.log import Log
from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile

CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"


class LogCleaningAbortedError(KafkaError):
    """Raised inside a cleaning round whose partition's cleaning was aborted."""


class LogCleaningState(Enum):
    """Kafka's LogCleaningState: a partition absent from the map is idle."""

    IN_PROGRESS = "LogCleaningInProgress"
    ABORTED = "LogCleaningAborted"
    PAUSED = "LogCleaningPaused"


@dataclass(frozen=True)
class _State:
    state: LogCleaningState
    paused_count: int = 0

    def __str__(self) -> str:
        if self.state is LogCleaningState.PAUSED:
            return f"{self.state.value}({self.paused_count})"
        return str(self.state.value)


_IN_PROGRESS = _State(LogCleaningState.IN_PROGRESS)
_ABORTED = _State(LogCleaningState.ABORTED)


def _paused(n: int) -> _State:
    return _State(LogCleaningState.PAUSED, n)


class LogCleanerManager:
    """Keeps each compacted log's clean/dirty boundary in `cleaner-offset-checkpoint`
    (one per log dir), picks the dirtiest log to clean, and tracks cleaning states
    (Kafka's LogCleanerManager).

    A partition is idle (absent), LogCleaningInProgress, LogCleaningAborted (a cleaner
    is still running on it but must stop), or LogCleaningPaused(n) (paused by n callers;
    never cleaned until resumed n times). `abort_and_pause_cleaning` blocks until any
    round on the partition has stopped, which is what deletion and truncation need.
    """

    def __init__(
        self,
        log_dirs: Iterable[Path],
        logs: Callable[[], Mapping[TopicPartition, Log]],
        time: Time,
    ) -> None:
        self.logs = logs
        self.time = time
        self.log = component_logger("kafpy.log.LogCleaner", "LogCleanerManager")
        self.checkpoints: dict[Path, OffsetCheckpointFile] = {
            Path(d): OffsetCheckpointFile(Path(d) / CLEANER_OFFSET_CHECKPOINT_FILE)
            for d in log_dirs
        }
        self._lock = threading.RLock()
        self._paused_cond = threading.Condition(self._lock)
        self._in_progress: dict[TopicPartition, _State] = {}
        self._uncleanable: dict[Path, set[TopicPartition]] = {}
        self.dirtiest_log_cleanable_ratio = 0.0

    # -- checkpoints -------------------------------------------------------------------------------

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """Every partition's last clean offset, from all dirs."""
        out: dict[TopicPartition, int] = {}
        with self._lock:
            for checkpoint in self.checkpoints.values():
                out.update(self._read(checkpoint))
        return out

    def _read(self, checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
        """A dir's cleaner offsets; an unreadable file counts as empty (every log of the
        dir is cleaned from its start again), and its next write replaces it."""
        try:
            return checkpoint.read()
        except KafkaStorageError as e:
            self.log.warning(
                "Failed to access checkpoint file %s in dir %s: %s. Cleaning the logs there "
                "from their start.",
                checkpoint.path.name,
                checkpoint.path.parent,
                e,
            )
            return {}

    def update_checkpoints(
        self, data_dir: Path, update: tuple[TopicPartition, int] | None = None
    ) -> None:
        """Rewrite `data_dir`'s checkpoint: entries of logs still present, plus `update`."""
        with self._lock:
            checkpoint = self.checkpoints.get(Path(data_dir))
            if checkpoint is None:
                return
            live = self.logs()
            existing = {tp: off for tp, off in self._read(checkpoint).items() if tp in live}
            if update is not None:
                existing[update[0]] = update[1]
            checkpoint.write(existing)

    def handle_log_dir_failure(self, data_dir: Path) -> None:
        """Forget an offline dir: its checkpoint and uncleanable partitions."""
        self.log.info("Stopping cleaning logs in dir %s", data_dir)
        with self._lock:
            self.checkpoints.pop(Path(data_dir), None)
            self._uncleanable.pop(Path(data_dir), None)

    def maybe_truncate_checkpoint(self, data_dir: Path, tp: TopicPartition, offset: int) -> None:
        """Move `tp`'s clean boundary back to `offset` if the log was truncated below it."""
        with self._lock:
            checkpoint = self.checkpoints.get(Path(data_dir))
            if checkpoint is None:
                return
            existing = self._read(checkpoint)
            if existing.get(tp, -1) > offset:
                existing[tp] = offset
                checkpoint.write(existing)

    # -- choosing a log ------------------------------------------------------------------------------

    def grab_filthiest_compacted_log(self, now_ms: int | None = None) -> LogToClean | None:
        """The compacted log most in need of cleaning, marked LogCleaningInProgress; None
        if no log is dirty enough (by min.cleanable.dirty.ratio or max.compaction.lag.ms)."""
        now = self.time.milliseconds() if now_ms is None else now_ms
        with self._lock:
            last_clean = self.all_cleaner_checkpoints()
            uncleanable = set().union(*self._uncleanable.values()) if self._uncleanable else set()
            dirty: list[LogToClean] = []
            for tp, log in self.logs().items():
                if not log.config.compact or tp in self._in_progress or tp in uncleanable:
                    continue
                first_dirty, first_uncleanable = self.cleanable_offsets(
                    log, last_clean.get(tp), now
                )
                ltc = LogToClean(
                    tp,
                    log,
                    first_dirty,
                    first_uncleanable,
                    self._needs_compaction_now(log, first_dirty, first_uncleanable, now),
                )
                if ltc.total_bytes > 0:
                    dirty.append(ltc)
            self.dirtiest_log_cleanable_ratio = max((c.cleanable_ratio for c in dirty), default=0.0)
            cleanable = [
                c
                for c in dirty
                if c.cleanable_bytes > 0
                and (
                    c.needs_compaction_now
                    or c.cleanable_ratio >= c.log.config.min_cleanable_dirty_ratio
                )
            ]
            if not cleanable:
                return None
            # logs past max.compaction.lag.ms go first, then the dirtiest
            filthiest = max(cleanable, key=lambda c: (c.needs_compaction_now, c.cleanable_ratio))
            self._in_progress[filthiest.topic_partition] = _IN_PROGRESS
            return filthiest

    def cleanable_offsets(
        self, log: Log, last_clean_offset: int | None, now: int
    ) -> tuple[int, int]:
        """(first dirty offset, first uncleanable offset) of `log` (Kafka's cleanableOffsets)."""
        segments = log.log_segments()
        log_start_offset = segments[0].base_offset
        if last_clean_offset is None:
            first_dirty = log_start_offset
        elif last_clean_offset < log_start_offset:
            self.log.warning(
                "Resetting first dirty offset of %s to log start offset %d since the checkpointed "
                "offset %d is invalid.",
                log.name,
                log_start_offset,
                last_clean_offset,
            )
            first_dirty = log_start_offset
        elif last_clean_offset > log.log_end_offset:
            self.log.warning(
                "Resetting first dirty offset of %s to log start offset %d since the checkpointed "
                "offset %d is beyond the log end offset %d.",
                log.name,
                log_start_offset,
                last_clean_offset,
                log.log_end_offset,
            )
            first_dirty = log_start_offset
        else:
            first_dirty = last_clean_offset
        candidates = [log.active_segment.base_offset]
        unstable = log.producer_state_manager.first_unstable_offset()
        if unstable is not None:
            candidates.append(unstable)
        lag = max(log.config.min_compaction_lag_ms, 0)
        if lag > 0:
            for s in segments_in_range(log, first_dirty, log.active_segment.base_offset):
                if s.base_offset >= log.active_segment.base_offset:
                    break
                if s.largest_timestamp > now - lag:
                    candidates.append(s.base_offset)
                    break
        first_uncleanable = min(candidates)
        return first_dirty, max(first_dirty, first_uncleanable)

    def _needs_compaction_now(
        self, log: Log, first_dirty: int, first_uncleanable: int, now: int
    ) -> bool:
        """True when the oldest dirty data is older than max.compaction.lag.ms (KIP-354)."""
        max_lag = log.config.max_compaction_lag_ms
        if max_lag <= 0 or first_uncleanable <= first_dirty:
            return False
        for s in segments_in_range(log, first_dirty, first_uncleanable):
            for _, header in s.log.batch_headers(0):
                first_ts = header[7]  # firstTimestamp
                return first_ts >= 0 and now - first_ts > max_lag
        return False

    def deletable_logs(self) -> list[tuple[TopicPartition, Log]]:
        """Logs with cleanup.policy compact,delete that retention may trim now, marked
        LogCleaningInProgress so that cleaning and deleting never overlap."""
        with self._lock:
            out = [
                (tp, log)
                for tp, log in self.logs().items()
                if log.config.compact and tp not in self._in_progress
            ]
            for tp, _ in out:
                self._in_progress[tp] = _IN_PROGRESS
            return out

    # -- states -------------------------------------------------------------------------------------

    def cleaning_state(self, tp: TopicPartition) -> str | None:
        """The state's Kafka name (e.g. `LogCleaningPaused(2)`), None when idle."""
        with self._lock:
            s = self._in_progress.get(tp)
            return None if s is None else str(s)

    def abort_cleaning(self, tp: TopicPartition) -> None:
        """Stop any cleaning of `tp` and forget its state (the log is going away)."""
        with self._lock:
            self.abort_and_pause_cleaning(tp)
            self.resume_cleaning([tp])
        self.log.info("The cleaning for partition %s is aborted", tp)

    def abort_and_pause_cleaning(self, tp: TopicPartition, timeout_ms: int | None = None) -> None:
        """Pause cleaning of `tp`, aborting a round in progress; returns once it has stopped."""
        with self._paused_cond:
            s = self._in_progress.get(tp)
            if s is None:
                self._in_progress[tp] = _paused(1)
            elif s is _IN_PROGRESS or s == _IN_PROGRESS:
                self._in_progress[tp] = _ABORTED
            elif s.state is LogCleaningState.PAUSED:
                self._in_progress[tp] = _paused(s.paused_count + 1)
            else:
                raise IllegalCleaningStateError(
                    f"Compaction for partition {tp} cannot be aborted and paused since it is in {s} state."
                )
            ok = self._paused_cond.wait_for(
                lambda: self._is_paused(tp), None if timeout_ms is None else timeout_ms / 1000
            )
            if not ok:
                raise TimeoutError(
                    f"Cleaning of partition {tp} did not stop within {timeout_ms} ms"
                )
        self.log.info("The cleaning for partition %s is aborted and paused", tp)

    def _is_paused(self, tp: TopicPartition) -> bool:
        s = self._in_progress.get(tp)
        return s is not None and s.state is LogCleaningState.PAUSED

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        """Undo one pause of each partition; the last resume makes it cleanable again."""
        with self._lock:
            for tp in tps:
                s = self._in_progress.get(tp)
                if s is None or s.state is not LogCleaningState.PAUSED:
                    raise IllegalCleaningStateError(
                        f"Compaction for partition {tp} cannot be resumed since it is "
                        f"{'not paused' if s is None else f'in {s} state'}."
                    )
                if s.paused_count == 1:
                    del self._in_progress[tp]
                else:
                    self._in_progress[tp] = _paused(s.paused_count - 1)
        self.log.info("Compaction for partitions %s is resumed", ", ".join(map(str, tps)))

    def check_cleaning_aborted(self, tp: TopicPartition) -> None:
        """Raise LogCleaningAbortedError if `tp`'s cleaning was aborted (the cleaner's check)."""
        with self._lock:
            if self._in_progress.get(tp) == _ABORTED:
                raise LogCleaningAbortedError(f"Cleaning of partition {tp} was aborted")

    def done_cleaning(self, tp: TopicPartition, data_dir: Path, end_offset: int) -> None:
        """A round on `tp` ended: record `end_offset` as its clean boundary, or, if it was
        aborted, leave it paused and wake the caller waiting for the abort."""
        with self._paused_cond:
            if self._in_progress.get(tp) == _IN_PROGRESS:
                self.update_checkpoints(data_dir, (tp, end_offset))
            self._end_in_progress(tp)

    def done_deleting(self, tps: Iterable[TopicPartition]) -> None:
        """Retention on these compact,delete logs is over."""
        with self._paused_cond:
            for tp in tps:
                self._end_in_progress(tp)

    def _end_in_progress(self, tp: TopicPartition) -> None:
        """Under the lock: `tp`'s round is over; an aborted one stays paused and wakes the
        caller waiting for the abort."""
        s = self._in_progress.get(tp)
        if s == _IN_PROGRESS:
            del self._in_progress[tp]
        elif s == _ABORTED:
            self._in_progress[tp] = _paused(1)
            self._paused_cond.notify_all()
        else:
            raise IllegalCleaningStateError(f"In-progress partition {tp} cannot be in {s} state.")

    def mark_partition_uncleanable(self, data_dir: Path, tp: TopicPartition) -> None:
        """Skip `tp` from now on (a round failed on it with an I/O or corruption error)."""
        with self._lock:
            self._uncleanable.setdefault(Path(data_dir), set()).add(tp)

    def uncleanable_partitions(self, data_dir: Path) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable.get(Path(data_dir), ()))


class IllegalCleaningStateError(KafkaError):
    """A cleaning state transition Kafka does not allow (a bug in the caller)."""
