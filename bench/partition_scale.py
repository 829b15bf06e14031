"""Partition scale of one `kafpy server`: N partitions (default 20,000) on one broker.

    python bench/partition_scale.py [--partitions 20000] [--per-topic 100] [--passes 1]

Starts a broker (embedded metadata store) on a free port in a temporary directory and
measures, printing one line per step:
- create: CreateTopics of `--per-topic` partitions a topic (10 topics a request, through
  confluent-kafka's AdminClient) until the broker's Metadata shows every partition led;
- the broker's RSS idle, before and after, and per partition;
- Metadata for all topics: the best and median of 5 raw requests (the broker's time,
  not a client's parsing);
- produce one record to each partition (confluent-kafka, acks=1) and read them all back
  (a consumer assigned every partition), `--passes` times, with the broker's RSS after each
  pass (what parked fetches leave behind shows as growth from pass to pass);
- clean stop (SIGTERM until exit), clean restart until every partition is led, then
  kill -9 and a restart until every partition is led, then the records read back again;
- the broker's open descriptors at each step, and its soft RLIMIT_NOFILE.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import free_port, read_exact, start_broker, wait_port  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request

METADATA_VERSION = 9


def progress(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def nofile_limit(pid: int) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return f"{soft} (hard {hard})"
    return "?"


def metadata(port: int) -> tuple[float, dict]:
    """Seconds for one Metadata request for all topics (from send to the last byte), and
    the answer."""
    body = {"topics": None, "allow_auto_topic_creation": False}
    frame = encode_request(RequestHeader(ApiKey.METADATA, METADATA_VERSION, 1, "scale"), body)
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        start = time.perf_counter()
        s.sendall(frame)
        (size,) = struct.unpack(">i", read_exact(s, 4))
        raw = read_exact(s, size)
        elapsed = time.perf_counter() - start
    return elapsed, decode_response(ApiKey.METADATA, METADATA_VERSION, raw)[1]


def led_partitions(port: int) -> int:
    try:
        _, answer = metadata(port)
    except OSError:
        return 0
    return sum(
        1
        for t in answer["topics"]
        if not t["name"].startswith("__")
        for p in t["partitions"]
        if p["leader_id"] >= 0 and p["error_code"] == 0
    )


def wait_led(port: int, n: int, start: float, what: str, timeout: float = 900) -> float:
    """Seconds from `start` until Metadata shows `n` partitions led."""
    last = -1
    while time.perf_counter() - start < timeout:
        led = led_partitions(port)
        if led >= n:
            return time.perf_counter() - start
        if led != last:
            progress(f"{what}: {led:,} of {n:,} partitions led")
            last = led
        time.sleep(0.5)
    raise SystemExit(f"{what}: only {last:,} of {n:,} partitions led after {timeout} s")


def create_topics(bootstrap: str, topics: list[str], per_topic: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300000})
    for i in range(0, len(topics), 10):
        chunk = [
            NewTopic(t, num_partitions=per_topic, replication_factor=1) for t in topics[i : i + 10]
        ]
        for topic, future in admin.create_topics(chunk, request_timeout=300).items():
            try:
                future.result(300)
            except Exception as exc:  # noqa: BLE001 - reported, and the bench stops
                raise SystemExit(f"creating {topic} failed: {exc}") from None
        if i % 200 == 0:
            progress(f"create: {i + len(chunk):,} of {len(topics):,} topics asked for")


def produce_one_each(bootstrap: str, topics: list[str], per_topic: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20,
                  "queue.buffering.max.messages": 1_000_000})  # fmt: skip
    start = time.perf_counter()
    for t in topics:
        for part in range(per_topic):
            p.produce(t, b"record-%d" % part, partition=part)
        p.poll(0)
    if p.flush(600) != 0:
        raise SystemExit("produce did not finish")
    return time.perf_counter() - start


def read_back(bootstrap: str, topics: list[str], per_topic: int, timeout: float = 600) -> float:
    """Seconds to read one record from every partition (a consumer assigned all of them)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})  # fmt: skip
    c.assign([TopicPartition(t, p, 0) for t in topics for p in range(per_topic)])
    want = len(topics) * per_topic
    seen: set[tuple[str, int]] = set()
    start = time.perf_counter()
    try:
        while len(seen) < want and time.perf_counter() - start < timeout:
            for msg in c.consume(10_000, 1.0):
                if msg.error() is None:
                    seen.add((msg.topic(), msg.partition()))
    finally:
        c.close()
    if len(seen) < want:
        raise SystemExit(f"read back {len(seen):,} of {want:,} partitions' records")
    return time.perf_counter() - start


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> float:
    start = time.perf_counter()
    proc.send_signal(sig)
    proc.wait(600)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--passes", type=int, default=1, help="consumer passes reading everything")
    args = ap.parse_args()
    n_topics = max(1, args.partitions // args.per_topic)
    n = n_topics * args.per_topic
    topics = [f"scale-{i:05d}" for i in range(n_topics)]
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-scale-"))
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    log = (workdir / "server.log").open("ab")
    proc = start_broker(workdir, port, log)
    try:
        wait_port(port)
        time.sleep(1)
        print(
            f"partitions {n:,} ({n_topics:,} topics of {args.per_topic}); broker RLIMIT_NOFILE {nofile_limit(proc.pid)}"
        )
        rss0, fds0 = rss_mb(proc.pid), open_fds(proc.pid)
        print(f"idle, empty          RSS {rss0:8.1f} MB   open fds {fds0:7,}")

        start = time.perf_counter()
        create_topics(bootstrap, topics, args.per_topic)
        created = wait_led(port, n, start, "create")
        time.sleep(2)
        rss1, fds1 = rss_mb(proc.pid), open_fds(proc.pid)
        print(f"create               {created:8.1f} s    ({n / created:,.0f} partitions/s)")
        print(f"idle, {n:,} partitions RSS {rss1:8.1f} MB   open fds {fds1:7,}   "
              f"{(rss1 - rss0) * 1024 / n:.1f} KB per partition")  # fmt: skip

        times = [metadata(port)[0] for _ in range(5)]
        print(
            f"Metadata, all topics best {min(times) * 1e3:6.1f} ms   median {statistics.median(times) * 1e3:6.1f} ms"
        )

        produced = produce_one_each(bootstrap, topics, args.per_topic)
        print(f"produce one each     {produced:8.1f} s    open fds {open_fds(proc.pid):7,}")
        for i in range(args.passes):
            read = read_back(bootstrap, topics, args.per_topic)
            print(
                f"read back all        {read:8.1f} s    open fds {open_fds(proc.pid):7,}   RSS {rss_mb(proc.pid):.1f} MB"
                + (f"   (pass {i + 1})" if args.passes > 1 else "")
            )

        print(f"clean stop           {stop(proc):8.1f} s")
        start = time.perf_counter()
        proc = start_broker(workdir, port, log)
        restarted = wait_led(port, n, start, "clean restart")
        print(
            f"clean restart        {restarted:8.1f} s    until every partition is led; open fds {open_fds(proc.pid):7,}"
        )

        stop(proc, signal.SIGKILL)
        start = time.perf_counter()
        proc = start_broker(workdir, port, log)
        recovered = wait_led(port, n, start, "restart after kill -9")
        print(
            f"kill -9 restart      {recovered:8.1f} s    until every partition is led; open fds {open_fds(proc.pid):7,}"
        )
        read = read_back(bootstrap, topics, args.per_topic)
        print(
            f"read back all        {read:8.1f} s    after the kill -9 restart; RSS {rss_mb(proc.pid):.1f} MB"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
