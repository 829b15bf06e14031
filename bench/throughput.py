"""Throughput of one `kafpy server`: produce and consume N records with confluent-kafka.

    python bench/throughput.py [--records 1000000] [--sizes 100,1024]

Starts a broker on a free port in a temporary directory, produces N records of each size
with confluent-kafka (acks=1, linger.ms=5, batch.size 1 MiB), consumes them back, and
prints records/s and MB/s for both; also the confluent-kafka consumer alone from its
pre-filled queue (the client's own ceiling) and, when installed, kcat reading the same
records (librdkafka in C). When Debian's `redis-server` and redis-py are
installed, the same records go through Redis Streams (appendonly yes, appendfsync
everysec; pipelined XADD, XRANGE reads) as the reference, with the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import free_port, produce_all, wait_port  # noqa: E402
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

# librdkafka speaking Kafka 0.9's protocol: Produce v1 / Fetch v1 with message format v0,
# which the broker converts to and from record batch v2
OLD_CLIENT = {"api.version.request": False, "broker.version.fallback": "0.9.0"}


def kafpy_produce(
    bootstrap: str, topic: str, n: int, value: bytes, extra: dict[str, object] | None = None
) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5,
                  "batch.size": 1 << 20, "queue.buffering.max.messages": 2_000_000,
                  "queue.buffering.max.kbytes": 2_000_000, **(extra or {})})  # fmt: skip
    return produce_all(p, topic, n, value)


def kafpy_consume(
    bootstrap: str,
    topic: str,
    n: int,
    prefill_s: float = 0.0,
    extra: dict[str, object] | None = None,
) -> float:
    """Seconds to consume n records from offset 0. With prefill_s the consumer first lets
    librdkafka fill its queue for that long, so the timed part is the Python client alone:
    the ceiling of this client on this machine, with no broker in the loop."""
    # librdkafka >= 2.4 stops fetching for fetch.queue.backoff.ms (1 s) whenever its queue
    # holds queued.min.messages (100,000): a fast consumer drains that in ~50 ms and then
    # idles. Throughput tuning raises the queue so fetching never pauses.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 10 << 20,
                  "queued.min.messages": 2_000_000, "queued.max.messages.kbytes": (2 << 20) - 1,
                  "fetch.queue.backoff.ms": 10, **(extra or {})})  # fmt: skip
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    if prefill_s:
        got += len(c.consume(1, 30.0))  # connected and fetching
        time.sleep(prefill_s)
    start = time.perf_counter()
    while got < n:
        # never ask for more than remains: consume() waits its whole timeout for a full batch
        for m in c.consume(min(10000, n - got), 1.0):
            if m.error() and m.error().code() != KafkaError._PARTITION_EOF:
                raise SystemExit(str(m.error()))
            if not m.error():
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def kcat_consume(bootstrap: str, topic: str, n: int) -> float | None:
    """Seconds for kcat (librdkafka in C, no Python in the loop) to read n records from
    offset 0, less its start-up (a run that reads one record); None without kcat."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        return None

    def run(count: int) -> float:
        start = time.perf_counter()
        subprocess.run(
            [kcat, "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-c", str(count),
             "-q", "-f", "", "-X", "queued.min.messages=2000000", "-X", "queued.max.messages.kbytes=2000000"],
            check=True, stdout=subprocess.DEVNULL, timeout=600,
        )  # fmt: skip
        return time.perf_counter() - start

    start_up = min(run(1) for _ in range(3))
    return max(run(n) - start_up, 1e-6)


def redis_reference(n: int, value: bytes, workdir: Path) -> tuple[float, float] | None:
    server = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        redis = None  # type: ignore[assignment]
    if server is None or redis is None:
        return None
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--dir", str(workdir), "--appendonly", "yes",
         "--appendfsync", "everysec", "--save", ""],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_port(port)
        r = redis.Redis(port=port)
        start = time.perf_counter()
        pipe = r.pipeline(transaction=False)
        for i in range(n):
            pipe.xadd("s", {"v": value})
            if i % 10000 == 9999:
                pipe.execute()
        pipe.execute()
        produce = time.perf_counter() - start
        start = time.perf_counter()
        last = "-"
        got = 0
        while got < n:
            entries = r.xrange("s", min=last, count=10000)
            if last != "-":
                entries = entries[1:]
            if not entries:
                break
            got += len(entries)
            last = entries[-1][0]
        return produce, time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--sizes", default="100,1024")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-bench-"))
    port = free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "kafpy", "server", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"log.dirs={workdir / 'data'}"],
        stdout=subprocess.DEVNULL, stderr=open(workdir / "broker.log", "wb"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        wait_port(port)
        bootstrap = f"127.0.0.1:{port}"
        for size in (int(s) for s in args.sizes.split(",")):
            n = args.records
            value = os.urandom(size // 2).hex().encode()[:size]
            topic = f"bench-{size}"
            kafpy_produce(bootstrap, topic, 1000, value)  # create the topic, warm up
            n_total = n + 1000
            tp = kafpy_produce(bootstrap, topic, n, value)
            tc = kafpy_consume(bootstrap, topic, n_total)
            tcc = kafpy_consume(
                bootstrap, topic, n_total, prefill_s=max(2.0, n_total * size / 200e6)
            )
            mb = n * size / 1e6
            print(f"kafpy  {size:>5} B  produce {n / tp:>12,.0f} rec/s {mb / tp:>8.1f} MB/s   "
                  f"consume {n_total / tc:>12,.0f} rec/s {n_total * size / 1e6 / tc:>8.1f} MB/s")  # fmt: skip
            print(f"kafpy  {size:>5} B  consume/produce {tp / tc:.2f}x;  the client alone (confluent-kafka "
                  f"from its pre-filled queue, no broker in the loop) {n_total / tcc:>12,.0f} rec/s")  # fmt: skip
            old_topic = f"{topic}-v0"
            kafpy_produce(bootstrap, old_topic, 1000, value, OLD_CLIENT)
            to = kafpy_produce(bootstrap, old_topic, n, value, OLD_CLIENT)
            tco = kafpy_consume(bootstrap, old_topic, n_total, extra=OLD_CLIENT)
            print(f"kafpy  {size:>5} B  message format v0 (librdkafka as a 0.9 client, converted by the broker): "
                  f"produce {n / to:>12,.0f} rec/s ({tp / to:.2f}x of v2)   "
                  f"consume {n_total / tco:>12,.0f} rec/s ({tc / tco:.2f}x of v2)")  # fmt: skip
            tk = kcat_consume(bootstrap, topic, n_total)
            if tk is not None:
                print(f"kafpy  {size:>5} B  consume with kcat (C client, start-up excluded) {n_total / tk:>12,.0f} rec/s "
                      f"{n_total * size / 1e6 / tk:>8.1f} MB/s  (consume/produce {tp / tk:.2f}x)")  # fmt: skip
            ref = redis_reference(n, value, workdir)
            if ref is None:
                print("redis  (redis-server or redis-py not installed: no reference)")
                continue
            rp, rc = ref
            print(f"redis  {size:>5} B  produce {n / rp:>12,.0f} rec/s {mb / rp:>8.1f} MB/s   "
                  f"consume {n / rc:>12,.0f} rec/s {mb / rc:>8.1f} MB/s")  # fmt: skip
            print(
                f"ratio  kafpy/redis  produce {rp / tp:.2f}x  consume {rc / tc * n_total / n:.2f}x"
            )
    finally:
        broker.terminate()
        broker.wait(60)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
