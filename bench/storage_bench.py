"""Storage benchmark: Log.append_as_leader and Log.read against a plain os.write ceiling.

Run: `python bench/storage_bench.py [--dir DIR] [--mb N] [--reps R]`

For batches of 1 KiB, 16 KiB and 1 MiB it measures, in the same directory:
- ceiling: an `os.write` loop writing the same batch bytes to a file;
- append: `Log.append_as_leader` of the same batch (full validation: CRC-32C check,
  offset and leader-epoch patching, index entries every index.interval.bytes);
- read: `Log.read` of the whole log in 1 MiB chunks (the fetch path);
- fetch: the cost of one small `Log.read` (up to 64 KiB), in microseconds: "tail" from
  the last batch appended (a consumer that keeps up), "lagging" from offsets spread over
  the log (an offset index lookup and a scan of batch headers).
Each figure is the best of R repetitions (page-cache timings are noisy). Progress goes to
stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafpy.common.scheduler import KafkaScheduler  # noqa: E402
from kafpy.common.time import SYSTEM_TIME  # noqa: E402
from kafpy.records import MemoryRecords, RecordBatchBuilder  # noqa: E402
from kafpy.storage.log import Log  # noqa: E402
from kafpy.storage.log_config import LogConfig  # noqa: E402

SIZES = [(1024, "1 KiB"), (16 * 1024, "16 KiB"), (1024 * 1024, "1 MiB")]
READ_CHUNK = 1024 * 1024


def make_batch(target_size: int) -> bytearray:
    """One uncompressed batch of about `target_size` bytes (records of ~1 KiB each)."""
    builder = RecordBatchBuilder()
    now = SYSTEM_TIME.milliseconds()
    value = os.urandom(min(1000, max(target_size - 100, 10)))
    while builder.uncompressed_size_in_bytes + len(value) + 20 <= target_size:
        builder.append(now, b"key", value)
    if builder.record_count == 0:
        builder.append(now, b"key", value)
    return bytearray(builder.build())


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bench_ceiling(dir: Path, batch: bytearray, count: int) -> float:
    path = dir / "ceiling.bin"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    for _ in range(count):
        os.write(fd, batch)
    elapsed = time.perf_counter() - t0
    os.close(fd)
    path.unlink()
    return elapsed


def bench_append(
    dir: Path, batch: bytearray, count: int, scheduler: KafkaScheduler
) -> tuple[float, Log]:
    log_dir = dir / "bench-0"
    shutil.rmtree(log_dir, ignore_errors=True)
    # max.message.bytes raised so that the 1 MiB batches are accepted
    config = LogConfig(max_message_bytes=2 * 1024 * 1024)
    log = Log(log_dir, config, 0, 0, scheduler, SYSTEM_TIME)
    records = MemoryRecords(batch)
    append = log.append_as_leader
    t0 = time.perf_counter()
    for _ in range(count):
        append(records, 0)
    return time.perf_counter() - t0, log


def bench_read(log: Log) -> tuple[float, int]:
    offset = log.log_start_offset
    end = log.log_end_offset
    total = 0
    read = log.read
    t0 = time.perf_counter()
    while offset < end:
        info = read(offset, READ_CHUNK)
        data = info.records
        total += data.size_in_bytes
        # the next fetch starts after the last complete batch (a fetch may end mid-batch)
        *_, last = data.batches_allow_partial()
        offset = last.next_offset
    return time.perf_counter() - t0, total


FETCH_SIZE = 64 * 1024
FETCHES = 20000


def bench_fetch(log: Log) -> tuple[float, float]:
    """Microseconds per small fetch: at the tail, and at offsets spread over the log."""
    read = log.read
    end = log.log_end_offset
    tail = end - 1
    t0 = time.perf_counter()
    for _ in range(FETCHES):
        read(tail, FETCH_SIZE)
    tail_us = (time.perf_counter() - t0) / FETCHES * 1e6
    step = max(1, end // FETCHES)
    offsets = [(i * 7919 * step) % end for i in range(FETCHES)]
    t0 = time.perf_counter()
    for offset in offsets:
        read(offset, FETCH_SIZE)
    lagging_us = (time.perf_counter() - t0) / FETCHES * 1e6
    return tail_us, lagging_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", default=None, help="where to write (default: a temp dir under /tmp)"
    )
    parser.add_argument("--mb", type=int, default=256, help="MiB written per measurement")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (the best is reported)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="kafpy-bench-", dir=args.dir))
    scheduler = KafkaScheduler(threads=1)
    scheduler.startup()
    rows = []
    try:
        for size, label in SIZES:
            batch = make_batch(size)
            count = max(1, (args.mb * 1024 * 1024) // len(batch))
            volume = count * len(batch) / 1e6
            best_ceiling = best_append = best_read = float("inf")
            best_tail = best_lagging = float("inf")
            for rep in range(args.reps):
                progress(f"[{label}] rep {rep + 1}/{args.reps}: ceiling ({count} x {len(batch)} B)")
                best_ceiling = min(best_ceiling, bench_ceiling(base, batch, count))
                progress(f"[{label}] rep {rep + 1}/{args.reps}: Log.append_as_leader")
                elapsed, log = bench_append(base, batch, count, scheduler)
                best_append = min(best_append, elapsed)
                progress(f"[{label}] rep {rep + 1}/{args.reps}: Log.read (1 MiB chunks)")
                read_elapsed, read_bytes = bench_read(log)
                best_read = min(best_read, read_elapsed)
                progress(f"[{label}] rep {rep + 1}/{args.reps}: Log.read ({FETCHES} small fetches)")
                tail_us, lagging_us = bench_fetch(log)
                best_tail = min(best_tail, tail_us)
                best_lagging = min(best_lagging, lagging_us)
                log.delete()
            rows.append(
                (
                    label,
                    len(batch),
                    volume / best_ceiling,
                    volume / best_append,
                    count / best_append,
                    (best_ceiling / best_append) * 100,
                    read_bytes / 1e6 / best_read,
                    best_tail,
                    best_lagging,
                )
            )
    finally:
        scheduler.shutdown()
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(
        f"{'batch':>7} {'bytes':>8} {'os.write MB/s':>14} {'append MB/s':>12} {'batches/s':>10} "
        f"{'append/ceiling':>15} {'read MB/s':>10} {'tail fetch us':>14} {'lagging fetch us':>17}"
    )
    for label, nbytes, ceil_mbs, app_mbs, bps, ratio, read_mbs, tail_us, lag_us in rows:
        print(
            f"{label:>7} {nbytes:>8} {ceil_mbs:>14.0f} {app_mbs:>12.0f} {bps:>10.0f} "
            f"{ratio:>14.0f}% {read_mbs:>10.0f} {tail_us:>14.1f} {lag_us:>17.1f}"
        )


if __name__ == "__main__":
    main()
