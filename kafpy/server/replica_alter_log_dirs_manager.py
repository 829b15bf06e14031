"""ReplicaAlterLogDirsManager: the log dirs of one broker, described and moved between.

Kafka's ReplicaManager.describeLogDirs / alterReplicaLogDirs and its
ReplicaAlterLogDirsThread. A replica moves into another dir of the same broker through a
`-future` log created there (`<topic>-<partition>.<uuid>-future`): a task on the broker's
loop copies the current log's stored batches into it, chunk by chunk in a worker thread
(file I/O), and once the future log has reached the current log end offset it replaces
the current log in one synchronous step on the loop, so no append can come in between.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafpy.common.errors import Errors, KafkaError, KafkaStorageError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records import RECORD_BATCH_OVERHEAD as BATCH_HEADER_SIZE
from kafpy.storage.leader_epoch_file_cache import LEADER_EPOCH_CHECKPOINT_FILE
from kafpy.storage.log import Log, LogDirFailedError

if TYPE_CHECKING:
    from kafpy.cluster.partition import Partition
    from kafpy.server.replica_manager import ReplicaManager

log = logging.getLogger("kafpy.server.ReplicaAlterLogDirsManager")

# bytes copied from the current log into the future log per step (replica.fetch.max.bytes)
COPY_CHUNK_BYTES = 1024 * 1024


class ReplicaAlterLogDirsManager:
    """Describes this broker's log dirs and moves its replicas between them.

    `describe_log_dirs(topics)` answers DescribeLogDirs; `alter_replica_log_dirs(moves)`
    answers AlterReplicaLogDirs with one error code per partition and starts a move task
    for each replica that is to change dir. `shutdown()` stops the moves (their future
    logs stay and are resumed by a later AlterReplicaLogDirs).
    """

    def __init__(
        self, replica_manager: ReplicaManager, chunk_bytes: int = COPY_CHUNK_BYTES
    ) -> None:
        self.replica_manager = replica_manager
        self.log_manager = replica_manager.log_manager
        self.chunk_bytes = chunk_bytes
        self._moves: dict[TopicPartition, asyncio.Task[None]] = {}

    # -- DescribeLogDirs ---------------------------------------------------------------------

    def describe_log_dirs(self, topics: Mapping[str, Iterable[int]] | None) -> list[dict[str, Any]]:
        """The `results` of a DescribeLogDirs response: every configured dir, offline ones
        with KAFKA_STORAGE_ERROR; `topics` None means every partition."""
        wanted: dict[str, set[int]] | None = (
            None if topics is None else {t: set(ps) for t, ps in topics.items()}
        )
        lm = self.log_manager
        current = lm.logs_by_topic_partition()
        future = lm.future_logs_by_topic_partition()
        by_dir: dict[Path, dict[str, list[dict[str, Any]]]] = {d: {} for d in lm.live_log_dirs}
        for logs, is_future in ((current, False), (future, True)):
            for tp, lg in sorted(logs.items()):
                if wanted is not None and tp.partition not in wanted.get(tp.topic, ()):
                    continue
                d = Path(lg.dir).parent
                if d not in by_dir:
                    continue
                if is_future:
                    cur = current.get(tp)
                    lag = max(0, cur.log_end_offset - lg.log_end_offset) if cur else 0
                else:
                    lag = 0
                by_dir[d].setdefault(tp.topic, []).append({
                    "partition_index": tp.partition,
                    "partition_size": lg.size,
                    "offset_lag": lag,
                    "is_future_key": is_future,
                })  # fmt: skip
        results = [
            {
                "error_code": Errors.NONE,
                "log_dir": str(d),
                "topics": [{"name": t, "partitions": ps} for t, ps in topics_.items()],
            }
            for d, topics_ in by_dir.items()
        ]
        results += [
            {"error_code": Errors.KAFKA_STORAGE_ERROR, "log_dir": str(d), "topics": []}
            for d in lm.offline_log_dirs
        ]
        return results

    # -- AlterReplicaLogDirs -----------------------------------------------------------------

    def alter_replica_log_dirs(
        self, moves: Mapping[TopicPartition, str]
    ) -> dict[TopicPartition, int]:
        """Move each partition's replica here into the given dir; an error code per partition
        (LOG_DIR_NOT_FOUND: not a dir of this broker, KAFKA_STORAGE_ERROR: the dir or the
        replica is offline, REPLICA_NOT_AVAILABLE: no replica here yet, the dir is kept as
        its preferred one)."""
        return {tp: self._alter_one(tp, path) for tp, path in moves.items()}

    def _alter_one(self, tp: TopicPartition, path: str) -> int:
        lm, rm = self.log_manager, self.replica_manager
        try:
            dest = Path(os.path.realpath(path))
        except ValueError:  # a NUL byte in the path
            return Errors.LOG_DIR_NOT_FOUND
        if dest not in lm.live_log_dirs and dest not in lm.offline_log_dirs:
            log.warning("Unable to alter the log dir of %s: %s is not a log dir here", tp, path)
            return Errors.LOG_DIR_NOT_FOUND
        if dest in lm.offline_log_dirs or tp in rm.offline_partitions:
            return Errors.KAFKA_STORAGE_ERROR
        partition = rm.partitions.get(tp)
        if partition is None or partition.log is None:
            lm.maybe_update_preferred_log_dir(tp, dest)
            if rm.metadata_cache.get_partition_info(tp) is None:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            return Errors.REPLICA_NOT_AVAILABLE
        future = lm.get_log(tp, is_future=True)
        if future is not None and Path(future.dir).parent != dest:
            self._stop_move(tp)
            lm.abort_and_delete_future_log(tp)
        if Path(partition.log.dir).parent == dest:
            return Errors.NONE
        if lm.offline_log_dirs:
            # as Kafka: no future log while a dir is offline (it may hold another copy)
            return Errors.KAFKA_STORAGE_ERROR
        try:
            lm.get_or_create_future_log(tp, dest)
        except KafkaStorageError as e:
            log.error("Unable to create the future log of %s in %s: %s", tp, dest, e)
            return Errors.KAFKA_STORAGE_ERROR
        if tp not in self._moves:
            log.info(
                "Moving the replica of %s from %s to %s", tp, Path(partition.log.dir).parent, dest
            )
            self._start_move(tp)
        return Errors.NONE

    def resume_moves(self) -> None:
        """Start a move for every `-future` log of a hosted replica that has none running
        (a broker restarted mid-move finds them on disk; Kafka resumes them on LeaderAndIsr)."""
        rm = self.replica_manager
        for tp in self.log_manager.future_logs_by_topic_partition():
            partition = rm.partitions.get(tp)
            if tp not in self._moves and partition is not None and partition.log is not None:
                self._start_move(tp)

    def _start_move(self, tp: TopicPartition) -> None:
        task = asyncio.get_running_loop().create_task(self._move(tp))
        self._moves[tp] = task
        task.add_done_callback(functools.partial(self._move_done, tp))

    def _move_done(self, tp: TopicPartition, task: asyncio.Task[None]) -> None:
        if self._moves.get(tp) is task:
            del self._moves[tp]

    def _stop_move(self, tp: TopicPartition) -> None:
        task = self._moves.pop(tp, None)
        if task is not None:
            task.cancel()

    @property
    def moves_in_progress(self) -> list[TopicPartition]:
        return sorted(self._moves)

    async def shutdown(self) -> None:
        """Stop every move; the future logs stay on disk."""
        tasks = list(self._moves.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._moves.clear()

    # -- the move (ReplicaAlterLogDirsThread) ------------------------------------------------

    async def _move(self, tp: TopicPartition) -> None:
        loop = asyncio.get_running_loop()
        lm, rm = self.log_manager, self.replica_manager
        while True:
            partition = rm.partitions.get(tp)
            future = lm.get_log(tp, is_future=True)
            current = partition.log if partition is not None else None
            if partition is None or current is None or future is None:
                log.info("Stopping the move of %s: the replica or its future log is gone", tp)
                if future is not None:
                    lm.abort_and_delete_future_log(tp)
                return
            if (
                future.log_end_offset == current.log_end_offset
                and future.log_start_offset <= current.log_start_offset
                and not _diverged(current, future)
            ):
                self._replace_current_with_future(tp, partition, current, future)
                return
            try:
                await loop.run_in_executor(None, self._copy_chunk, current, future)
            except LogDirFailedError as e:
                rm.report_log_dir_failure(e.log_dir, f"Error while moving {tp}", e)
                return
            except KafkaError as e:
                # the current log moved under us (truncated, rolled away): try again
                log.debug("Retrying a copy step of %s: %s", tp, e)
                await asyncio.sleep(0.05)

    def _copy_chunk(self, current: Log, future: Log) -> int:
        """Copy the next stored batches of `current` into `future` (in a worker thread);
        returns the bytes copied."""
        start, end = current.log_start_offset, current.log_end_offset
        if future.log_end_offset > start and _diverged(current, future):
            # the current log was truncated below the copy and written again (a follower
            # after a leader change): copy again from the start
            log.info(
                "The current log of %s diverged from its future log; copying again",
                current.topic_partition,
            )
            future.truncate_fully_and_start_at(start)
            return 0
        if future.log_end_offset < start or future.log_end_offset > end:
            # the future log starts where the current one does, or follows its truncation
            if future.log_end_offset > end and future.log_start_offset <= end:
                future.truncate_to(end)
            else:
                future.truncate_fully_and_start_at(start)
            return 0
        if future.log_start_offset < start:
            future.maybe_increment_log_start_offset(start)
        info = current.read(future.log_end_offset, self.chunk_bytes)
        size = info.records.size_in_bytes
        if size:
            future.append_as_follower(info.records)
        return size

    def _replace_current_with_future(
        self, tp: TopicPartition, partition: Partition, current: Log, future: Log
    ) -> None:
        """Swap in the caught-up future log; synchronous, so no append comes in between."""
        epochs = Path(current.dir) / LEADER_EPOCH_CHECKPOINT_FILE
        try:
            if epochs.exists():
                shutil.copyfile(epochs, Path(future.dir) / LEADER_EPOCH_CHECKPOINT_FILE)
            new = self.log_manager.replace_current_with_future_log(tp)
        except (OSError, LogDirFailedError) as e:
            d = e.log_dir if isinstance(e, LogDirFailedError) else Path(future.dir).parent
            self.replica_manager.report_log_dir_failure(d, f"Error while moving {tp}", e)
            return
        partition.replace_current_log(new)
        log.info(
            "The replica of %s now lives in %s (moved from %s)",
            tp,
            Path(new.dir).parent,
            Path(current.dir).parent,
        )


def _diverged(current: Log, future: Log) -> bool:
    """Whether the last batch copied into `future` is not the batch `current` holds at that
    offset (compared by batch header: offsets, leader epoch, CRC, producer fields)."""
    last = future.log_end_offset - 1
    if last < max(current.log_start_offset, future.log_start_offset):
        return False
    if last >= current.log_end_offset:
        return True
    try:
        theirs = current.read(last, 1).records.buffer()[:BATCH_HEADER_SIZE]
        ours = future.read(last, 1).records.buffer()[:BATCH_HEADER_SIZE]
    except KafkaError:
        return True
    return bytes(theirs) != bytes(ours)


__all__ = ["ReplicaAlterLogDirsManager"]
