"""The durable close of one log dir's logs at a clean shutdown (part of Kafka's
LogManager.shutdown), before the LogManager writes the dir's checkpoints and its clean
shutdown marker.

Kafka fsyncs each log's segment, indexes and producer snapshot: four fsyncs a log, most
of a clean stop's time with thousands of partitions. Where the file system can be
synced as a whole with its errors reported (syncfs, see FileLock), the logs are closed
without fsyncs and then synced at once; only then do their recovery points move to
their log end offsets.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kafpy.common.logger import PrefixAdapter
from kafpy.common.topic_partition import TopicPartition
from kafpy.storage.file_lock import FileLock
from kafpy.storage.log import Log

__all__ = ["close_logs_durably"]

# threads closing a dir's logs when one syncfs then makes them durable: at least this many,
# whatever num.recovery.threads.per.data.dir (which bounds loading and fsyncing closes)
_UNSYNCED_CLOSE_THREADS = 4


def _flush_and_close(log: Log) -> None:
    log.flush()
    log.close()


def _close_unsynced(log: Log) -> None:
    log.close(sync=False)


def close_logs_durably(
    d: Path,
    logs: Mapping[TopicPartition, Log],
    lock: FileLock | None,
    threads: int,
    logger: PrefixAdapter,
) -> bool:
    """Make every log of `d` durable and close it; False if one of them failed.

    `lock` is the dir's `.lock` (its descriptor syncs the file system), `threads` the
    closing threads (num.recovery.threads.per.data.dir), `logger` the LogManager's.
    """
    sync_at_once = lock is not None and lock.can_sync_file_system()
    close = _close_unsynced if sync_at_once else _flush_and_close
    workers = threads
    if sync_at_once:
        # closing without flushing waits on the file system (a snapshot file created
        # per log), not the CPU: overlapped, 20,000 logs close in about half the time
        workers = max(workers, _UNSYNCED_CLOSE_THREADS)
    closed: list[Log] = []
    failed = False
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"log-closing-{d}") as pool:
        futures = {pool.submit(close, log): (tp, log) for tp, log in logs.items()}
        for future, (tp, log) in futures.items():
            try:
                future.result()
                closed.append(log)
            except Exception as e:
                failed = True
                logger.error("Error while closing log %s in %s: %s", tp, d, e)
    if lock is not None and sync_at_once:
        try:
            if not lock.sync_file_system():
                raise OSError(f"the lock on {d} was released (the dir went offline)")
        except OSError as e:
            logger.error("Error while syncing the logs in %s to disk: %s", d, e)
            return False
        for log in closed:
            log.mark_flushed(log.log_end_offset)
    return not failed
