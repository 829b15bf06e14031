"""Log cleaner benchmarks: cleaning throughput, and produce latency while a log is cleaned.

    python bench/cleaner_bench.py [--part throughput|latency|all] [--dirty-mb 32]
                                  [--keys 10000 --updates 50]

throughput: in-process, one Cleaner round over a freshly written dirty log (uncompressed
batches of 100 records) for 100-byte and 1 KiB values with 1 % and 50 % unique keys;
prints MB/s of dirty log processed (map building + rewriting), and the split.

latency: a `kafpy server` subprocess; a topic with `--keys` keys updated `--updates`
times each (the issue's 10,000 x 50 by default) is written with confluent-kafka as
cleanup.policy=delete, then switched to compact with AlterConfigs. Produce latency of
single acks=1 records to another topic (one in flight at a time) is measured before and
while the cleaner works; prints p50/p99/max, the cleaning time and how far the log
shrank (records outside the active segment vs keys).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_support import free_port, wait_port  # noqa: E402

from kafpy.common.scheduler import MockScheduler  # noqa: E402
from kafpy.common.time import MockTime  # noqa: E402
from kafpy.common.topic_partition import TopicPartition  # noqa: E402
from kafpy.records import MemoryRecords, RecordBatchBuilder  # noqa: E402
from kafpy.storage.cleaner.cleaner import Cleaner, CleanerStats  # noqa: E402
from kafpy.storage.cleaner.log_to_clean import LogToClean  # noqa: E402
from kafpy.storage.cleaner.offset_map import SkimpyOffsetMap  # noqa: E402
from kafpy.storage.cleaner.throttler import Throttler  # noqa: E402
from kafpy.storage.log import Log  # noqa: E402
from kafpy.storage.log_config import LogConfig  # noqa: E402

MB = 1024 * 1024


# -- throughput -----------------------------------------------------------------------------


def write_dirty_log(dir: Path, dirty_bytes: int, value_size: int, unique: float) -> Log:
    time_ = MockTime()
    config = LogConfig(cleanup_policy=["compact"], segment_bytes=64 * MB)
    log = Log(dir, config, 0, 0, MockScheduler(time_), time_)
    record_size = value_size + 20
    n = dirty_bytes // record_size
    n_keys = max(1, int(n * unique))
    rng = random.Random(1)
    value = os.urandom(value_size)
    now = time_.milliseconds()
    written = 0
    while written < n:
        b = RecordBatchBuilder()
        for _ in range(min(100, n - written)):
            b.append(now, b"key-%010d" % rng.randrange(n_keys), value)
        written += b.record_count
        log.append_as_leader(MemoryRecords(bytearray(b.build())), 0)
    log.roll()
    return log


def bench_throughput(dirty_mb: int) -> None:
    print(f"cleaning throughput, {dirty_mb} MB dirty log per case (one round, one thread)")
    print(f"{'value':>6} {'unique':>7} {'records':>9} {'MB/s':>7} {'map MB/s':>9} "
          f"{'rewrite MB/s':>12} {'kept':>7} {'size after':>10}")  # fmt: skip
    for value_size in (100, 1024):
        for unique in (0.01, 0.5):
            tmp = Path(tempfile.mkdtemp(prefix="cleaner-bench-"))
            try:
                log = write_dirty_log(tmp / "t-0", dirty_mb * MB, value_size, unique)
                dirty = sum(s.size for s in log.log_segments())
                time_ = MockTime()
                cleaner = Cleaner(0, SkimpyOffsetMap(128 * MB, "md5", 0.9), 256 * 1024, 1 << 20,
                                  0.9, Throttler(1e300), time_, lambda tp: None)  # fmt: skip
                ltc = LogToClean(TopicPartition("t", 0), log, 0, log.active_segment.base_offset)
                t0 = time.perf_counter()
                cleaner.build_offset_map(log, 0, ltc.first_uncleanable_offset, cleaner.offset_map,
                                         CleanerStats())  # fmt: skip
                t1 = time.perf_counter()
                _, stats2 = cleaner.do_clean(ltc, -(2**62))
                t2 = time.perf_counter()
                # do_clean rebuilt the map itself: the rewrite is the time past that
                map_s = t1 - t0
                total_s = t2 - t1
                rewrite_s = max(total_s - map_s, 1e-9)
                after = sum(s.size for s in log.log_segments())
                print(f"{value_size:>6} {unique:>7.0%} {stats2.messages_read:>9} "
                      f"{dirty / MB / total_s:>7.1f} {dirty / MB / map_s:>9.1f} "
                      f"{dirty / MB / rewrite_s:>12.1f} {stats2.messages_written:>7} "
                      f"{after / MB:>8.1f}MB")  # fmt: skip
                log.close()
            finally:
                shutil.rmtree(tmp, ignore_errors=True)


# -- latency --------------------------------------------------------------------------------


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def measure_latency(bootstrap: str, topic: str, seconds: float, stop: object = None) -> list[float]:
    from confluent_kafka import Producer  # noqa: PLC0415

    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    lat: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (stop is not None and stop()):  # type: ignore[operator]
        t0 = time.perf_counter()
        done: list[float] = []
        p.produce(topic, b"x" * 100, on_delivery=lambda e, m, d=done: d.append(time.perf_counter()))
        while not done:
            p.poll(0.0005)
        lat.append((done[0] - t0) * 1000)
    p.flush(10)
    return lat


def bench_latency(keys: int, updates: int) -> None:
    from confluent_kafka import Producer  # noqa: PLC0415
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: PLC0415

    from kafpy.storage.offset_checkpoint_file import OffsetCheckpointFile  # noqa: PLC0415

    tmp = Path(tempfile.mkdtemp(prefix="cleaner-latency-"))
    port = free_port()
    logs = tmp / "logs"
    out = open(tmp / "broker.out", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafpy", "server", "--override", "broker.id=0",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={logs}",
         "--override", "log.cleaner.backoff.ms=200"],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    bootstrap = f"127.0.0.1:{port}"
    try:
        wait_port(port)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        fs = admin.create_topics([
            NewTopic("dirty", 1, 1, config={"cleanup.policy": "delete", "segment.bytes": str(16 * MB)}),
            NewTopic("probe", 1, 1),
        ])  # fmt: skip
        for f in fs.values():
            f.result(30)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20,
                      "batch.size": 256 * 1024, "queue.buffering.max.messages": 2_000_000})  # fmt: skip
        t0 = time.perf_counter()
        value = b"v" * 100
        for u in range(updates):
            for k in range(keys):
                while True:
                    try:
                        p.produce("dirty", key=b"key-%06d" % k, value=b"%04d" % u + value)
                        break
                    except BufferError:
                        p.poll(0.001)
            p.poll(0)
        p.flush(300)
        total = keys * updates
        dirty_dir = logs / "dirty-0"
        size_before = sum(f.stat().st_size for f in dirty_dir.glob("*.log"))
        print(
            f"wrote {total} records ({size_before / MB:.1f} MB) in {time.perf_counter() - t0:.1f} s"
        )

        base = measure_latency(bootstrap, "probe", 10)
        checkpoint = OffsetCheckpointFile(logs / "cleaner-offset-checkpoint")

        def cleaned() -> bool:
            try:
                entries = checkpoint.read()
            except Exception:
                return False
            active = max(int(f.name.split(".")[0]) for f in dirty_dir.glob("*.log"))
            return entries.get(TopicPartition("dirty", 0), -1) >= active

        res = ConfigResource(
            "topic",
            "dirty",
            set_config={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.01",
                "segment.bytes": str(16 * MB),
            },
        )
        for f in admin.alter_configs([res]).values():
            f.result(30)
        t_clean = time.perf_counter()
        during = measure_latency(bootstrap, "probe", 120, stop=cleaned)
        while not cleaned() and time.perf_counter() - t_clean < 600:
            time.sleep(0.1)
        clean_s = time.perf_counter() - t_clean
        size_after = sum(f.stat().st_size for f in dirty_dir.glob("*.log"))
        segs = sorted(dirty_dir.glob("*.log"))
        outside = 0
        for f in segs[:-1]:
            for b in MemoryRecords(f.read_bytes()).batches_allow_partial():
                outside += b.record_count
        print(f"cleaned in {clean_s:.1f} s (from the config change; includes up to one backoff): "
              f"{size_before / MB:.1f} MB -> {size_after / MB:.2f} MB, "
              f"{size_before / MB / clean_s:.1f} MB/s; {outside} records outside the active "
              f"segment for {keys} keys")  # fmt: skip
        for name, xs in (("no cleaning", base), ("while cleaning", during)):
            if xs:
                print(f"produce latency {name:>15}: n={len(xs):>6} p50={percentile(xs, 0.5):.2f} ms "
                      f"p99={percentile(xs, 0.99):.2f} ms max={max(xs):.2f} ms")  # fmt: skip
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--part", choices=["throughput", "latency", "all"], default="all")
    ap.add_argument("--dirty-mb", type=int, default=32)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--updates", type=int, default=50)
    args = ap.parse_args()
    if args.part in ("throughput", "all"):
        bench_throughput(args.dirty_mb)
    if args.part in ("latency", "all"):
        bench_latency(args.keys, args.updates)


if __name__ == "__main__":
    main()
