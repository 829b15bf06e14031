"""Broker CPU per Produce request: what one small produce costs the broker's event loop.

    python bench/request_cost.py [--requests 20000] [--windows 1,16] [--version 7]

Starts one broker, creates a topic of one partition, and sends it Produce requests the way
a confluent-kafka producer with linger.ms=0 does at a moderate rate: one 100-byte record per
request, acks=1, one partition. A raw socket client keeps `window` requests in flight (1: a
request, its response, the next; 16: pipelined, so several arrive in one read). Printed per
window: requests/s and the broker's CPU time (user + system, from /proc) per request in
microseconds, the figure that bounds the request rate one broker core can serve.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

from bench_support import cpu_seconds, exit_with, free_port, start_broker, wait_port  # noqa: E402

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from kafpy.common.wait import wait_until  # noqa: E402
from kafpy.protocol.api_keys import ApiKey  # noqa: E402
from kafpy.protocol.headers import RequestHeader, encode_request  # noqa: E402
from kafpy.records.builder import build_batch  # noqa: E402

_SIZE = struct.Struct(">i")


def produce_frames(topic: str, n: int, version: int, size: int) -> list[bytes]:
    frames = []
    for i in range(n):
        batch = build_batch([b"x" * size])
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 30000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
        frames.append(encode_request(RequestHeader(ApiKey.PRODUCE, version, i, "cost"), body))
    return frames


def read_responses(sock: socket.socket, buf: bytearray, count: int) -> bytearray:
    """Read until `count` whole responses are in; returns what is left over."""
    while count > 0:
        while len(buf) >= 4 and len(buf) >= 4 + _SIZE.unpack_from(buf)[0]:
            del buf[: 4 + _SIZE.unpack_from(buf)[0]]
            count -= 1
            if count == 0:
                return buf
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise SystemExit("the broker closed the connection")
        buf += chunk
    return buf


def run(port: int, pid: int, frames: list[bytes], window: int) -> tuple[float, float]:
    """(requests/s, broker CPU µs per request) for sending `frames` with `window` in flight."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        sent = inflight = 0
        while sent < len(frames) or inflight:
            if sent < len(frames) and inflight < window:
                batch = frames[sent : sent + window - inflight]
                sock.sendall(b"".join(batch))
                sent += len(batch)
                inflight += len(batch)
            buf = read_responses(sock, buf, 1)
            inflight -= 1
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
    return len(frames) / elapsed, cpu / len(frames) * 1e6


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        f.result(60)

    def led() -> bool:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        return bool(
            md is not None and md.error is None and md.partitions and md.partitions[0].leader >= 0
        )

    wait_until(
        led, 60, interval_s=0.2, on_timeout=exit_with(f"topic {topic} has no leader after 60 s")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--windows", default="1,16")
    ap.add_argument("--version", type=int, default=7, help="Produce version (librdkafka 2.x: 7)")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3, help="runs per window; the best is printed")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-cost-"))
    port = free_port()
    log = open(workdir / "broker.log", "wb")
    broker = start_broker(workdir, port, log)
    try:
        wait_port(port)
        create_topic(f"127.0.0.1:{port}", "cost")
        frames = produce_frames("cost", args.requests, args.version, args.size)
        run(port, broker.pid, frames[: min(2000, len(frames))], 16)  # warm up
        print(f"Produce v{args.version}, one {args.size} B record per request, acks=1, "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        for window in (int(w) for w in args.windows.split(",")):
            best = min((run(port, broker.pid, frames, window) for _ in range(args.runs)),
                       key=lambda r: r[1])  # fmt: skip
            print(f"window {window:>3}: {best[0]:>9,.0f} requests/s, "
                  f"broker CPU {best[1]:6.1f} µs per request", flush=True)  # fmt: skip
    finally:
        broker.terminate()
        broker.wait(60)
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
