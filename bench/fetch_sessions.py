"""Idle fetches, full against incremental (KIP-227 fetch sessions): bytes and broker CPU.

    python bench/fetch_sessions.py [--partitions 2000] [--fetches 300] [--max-wait-ms 0]

Starts one broker, creates one topic of `--partitions` partitions (empty: every fetch is
idle), and sends it, from one raw connection, the Fetch v11 requests of one consumer
assigned every partition at its end: first `--fetches` full fetches (session epoch -1,
every partition named, as a sessionless client sends them), then one full fetch with epoch
0 that opens a session and `--fetches` incremental fetches within it (no partition named,
nothing answered). Prints per kind the request and response bytes and the broker's CPU
time (user + system, every thread, from /proc) per fetch, and the incremental/full ratio.
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
from typing import Any

from bench_support import cpu_seconds, free_port, start_broker, wait_port  # noqa: E402

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from kafpy.protocol.api_keys import ApiKey  # noqa: E402
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request  # noqa: E402

VERSION = 11
_SIZE = struct.Struct(">i")


def fetch_body(topic: str, partitions: int, session_id: int, epoch: int, max_wait_ms: int,
               named: bool) -> dict[str, Any]:  # fmt: skip
    parts = [{"partition": p, "current_leader_epoch": -1, "fetch_offset": 0,
              "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p in range(partitions)]  # fmt: skip
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 52428800,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": topic, "partitions": parts}] if named else [],
            "forgotten_topics_data": [], "rack_id": ""}  # fmt: skip


def frame(body: dict[str, Any], correlation_id: int) -> bytes:
    return encode_request(RequestHeader(ApiKey.FETCH, VERSION, correlation_id, "bench"), body)


def roundtrip(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    buf = bytearray()
    while len(buf) < 4 or len(buf) < 4 + _SIZE.unpack_from(buf)[0]:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise SystemExit("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def run(sock: socket.socket, pid: int, frames: list[bytes]) -> tuple[float, float, float]:
    """(request bytes, response bytes, broker CPU µs) per fetch over `frames`."""
    sent = received = 0
    cpu0 = cpu_seconds(pid)
    for f in frames:
        sent += len(f)
        received += len(roundtrip(sock, f))
    cpu = cpu_seconds(pid) - cpu0
    n = len(frames)
    return sent / n, received / n, cpu / n * 1e6


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=120).values():
        f.result(180)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (md is not None and md.error is None and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values())):  # fmt: skip
            return
        time.sleep(0.5)
    raise SystemExit(f"topic {topic} has no leader for every partition after 180 s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--fetches", type=int, default=300)
    ap.add_argument("--max-wait-ms", type=int, default=0,
                    help="the fetches' max_wait_ms (0: answered at once; a consumer's "
                    "default 500 makes every idle fetch wait that long)")  # fmt: skip
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-fetch-sessions-"))
    port = free_port()
    log = open(workdir / "broker.log", "wb")
    broker = start_broker(workdir, port, log)
    topic, n, p, wait = "idle", args.fetches, args.partitions, args.max_wait_ms
    try:
        wait_port(port)
        create_topic(f"127.0.0.1:{port}", topic, p)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            full = [frame(fetch_body(topic, p, 0, -1, wait, True), i) for i in range(n)]
            run(sock, broker.pid, full[: min(20, n)])  # warm up
            full_figures = run(sock, broker.pid, full)
            opened = roundtrip(sock, frame(fetch_body(topic, p, 0, 0, wait, True), n))
            _, answer = decode_response(ApiKey.FETCH, VERSION, opened[4:])
            session_id = answer["session_id"]
            if answer["error_code"] or not session_id:
                raise SystemExit(f"no fetch session was opened: {answer['error_code']}")
            incremental = [frame(fetch_body(topic, p, session_id, epoch, wait, False), epoch)
                           for epoch in range(1, n + 1)]  # fmt: skip
            inc_figures = run(sock, broker.pid, incremental)
        print(f"one consumer, {p} idle partitions, Fetch v{VERSION}, max_wait_ms {wait}, "
              f"{n} fetches each, {os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        for name, (req, resp, cpu) in (("full", full_figures), ("incremental", inc_figures)):
            print(f"{name:>12}: request {req:>9,.0f} B, response {resp:>9,.0f} B, "
                  f"broker CPU {cpu:>9,.0f} µs per fetch")  # fmt: skip
        print(f"incremental / full: request bytes {inc_figures[0] / full_figures[0]:.1%}, "
              f"broker CPU {inc_figures[2] / full_figures[2]:.1%}")  # fmt: skip
    finally:
        broker.terminate()
        broker.wait(60)
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
