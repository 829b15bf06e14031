"""Read-committed fetch benchmark: Log.read of a transactional log at read_uncommitted
against read_committed (which also collects the aborted transactions of each chunk from
the `.txnindex` files, as a read_committed Fetch does).

Run: `python bench/read_committed_bench.py [--dir DIR] [--txns N] [--reps R]`

The log holds N transactions of two ~16 KiB batches each from four producers, every other
one aborted (its marker adds a `.txnindex` entry), in 16 MiB segments. Each figure is the
best of R full reads in 1 MiB chunks. Progress goes to stderr, the table to stdout.
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
from kafpy.records.control_record import (  # noqa: E402
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from kafpy.storage.log import Log  # noqa: E402
from kafpy.storage.log_config import LogConfig  # noqa: E402

READ_CHUNK = 1024 * 1024
PRODUCERS = 4


def txn_batch(pid: int, seq: int, value: bytes) -> bytearray:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=0, base_sequence=seq,
                                 is_transactional=True)  # fmt: skip
    now = SYSTEM_TIME.milliseconds()
    for _ in range(16):
        builder.append(now, b"key", value)
    return bytearray(builder.build())


def fill(log: Log, txns: int) -> int:
    """Write the transactions; returns how many were aborted."""
    value = os.urandom(1000)
    seqs = dict.fromkeys(range(PRODUCERS), 0)
    aborted = 0
    for i in range(txns):
        pid = i % PRODUCERS
        for _ in range(2):
            log.append_as_leader(MemoryRecords(txn_batch(pid, seqs[pid], value)), 0)
            seqs[pid] += 16
        commit = i % 2 == 0
        aborted += not commit
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        marker = build_end_transaction_marker(EndTransactionMarker(kind, 0), producer_id=pid,
                                              producer_epoch=0, timestamp=SYSTEM_TIME.milliseconds())  # fmt: skip
        log.append_as_leader(MemoryRecords(bytearray(marker)), 0, is_from_client=False)
    return aborted


def read_all(log: Log, committed: bool) -> tuple[float, int, int]:
    """(seconds, bytes, aborted entries listed) for one pass in 1 MiB chunks."""
    offset, total, listed = log.log_start_offset, 0, 0
    end = log.log_end_offset
    t0 = time.perf_counter()
    while offset < end:
        info = log.read(offset, READ_CHUNK, end, True, committed)
        records = MemoryRecords(info.records.buffer())
        last = None
        for batch in records.batches_allow_partial():
            last = batch
        if last is None:
            break
        total += info.records.size_in_bytes
        listed += len(info.aborted_transactions or ())
        offset = last.next_offset
    return time.perf_counter() - t0, total, listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--txns", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="kafpy-rc-bench-", dir=args.dir))
    scheduler = KafkaScheduler(threads=1)
    scheduler.startup()
    try:
        config = LogConfig(segment_bytes=16 * 1024 * 1024)
        log = Log(base / "t-0", config, 0, 0, scheduler, SYSTEM_TIME)
        print(f"writing {args.txns} transactions ...", file=sys.stderr, flush=True)
        aborted = fill(log, args.txns)
        print(f"log: {log.size / 2**20:.0f} MiB in {log.num_segments} segments, "
              f"{aborted} aborted transactions", file=sys.stderr, flush=True)  # fmt: skip
        print(f"{'isolation':<18}{'MiB/s':>10}{'aborted listed':>16}")
        rates = {}
        for name, committed in (("read_uncommitted", False), ("read_committed", True)):
            best = min((read_all(log, committed) for _ in range(args.reps)), key=lambda r: r[0])
            seconds, size, listed = best
            rates[name] = size / 2**20 / seconds
            print(f"{name:<18}{rates[name]:>10.0f}{listed:>16}")
        ratio = rates["read_committed"] / rates["read_uncommitted"]
        print(f"read_committed / read_uncommitted: {ratio:.2f}")
        log.close()
    finally:
        scheduler.shutdown()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
