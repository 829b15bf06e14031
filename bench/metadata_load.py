"""Metadata latency of one `kafpy server` under the mixed load of issue 13.

    python bench/metadata_load.py [--quick] [--duration 30] [--partitions 1000]
                                  [--connections 180] [--members 20]

Starts a broker (embedded metadata store) with a topic of --partitions partitions, then,
each in its own process, for --duration seconds (30; --quick 10):
- a group of --members confluent-kafka consumers subscribed to the topic, one member
  leaving and a new one joining every 2 s, so the group keeps rebalancing;
- a confluent-kafka producer writing 2,000 records/s of 100 B spread over all partitions;
- --connections idle clients (kafpy's own client), each refreshing the full Metadata
  every 5 s, as clients do;
- the prober: one connection sending a Metadata request for all topics every 20 ms and
  timing each one to the last byte of its response (the response is not decoded).
Prints the connection count and the prober's p50/p99/p99.9/max, idle (before the load)
and under the load, and the broker's loop-lag summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import exit_with, free_port, read_exact, start_broker, wait_port  # noqa: E402

from kafpy.common.wait import wait_until  # noqa: E402

HERE = Path(__file__).resolve()
TOPIC = "load"
PROBE_INTERVAL_S = 0.020


def percentiles(samples_ms: list[float]) -> str:
    if not samples_ms:
        return "no samples"
    s = sorted(samples_ms)

    def at(q: float) -> float:
        return s[min(len(s) - 1, int(q * len(s)))]

    return (f"p50 {at(0.5):7.2f}  p99 {at(0.99):7.2f}  p99.9 {at(0.999):7.2f}  "
            f"max {s[-1]:7.2f} ms  (n={len(s)})")  # fmt: skip


def metadata_request(correlation_id: int) -> bytes:
    from kafpy.protocol.api_keys import ApiKey
    from kafpy.protocol.headers import RequestHeader, encode_request

    header = RequestHeader(api_key=int(ApiKey.METADATA), api_version=1,
                           correlation_id=correlation_id, client_id="metadata-prober")  # fmt: skip
    return encode_request(header, {"topics": None})


# --- child processes ----------------------------------------------------------------------


def prober(args: argparse.Namespace) -> list[float]:
    """Metadata for all topics every 20 ms; milliseconds to the last byte of each answer."""
    host, port = args.bootstrap.split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = metadata_request(1)
    samples: list[float] = []
    end = time.monotonic() + args.duration
    while time.monotonic() < end:
        start = time.monotonic()
        sock.sendall(request)
        header = read_exact(sock, 4)
        read_exact(sock, struct.unpack(">i", header)[0])
        samples.append((time.monotonic() - start) * 1000)
        time.sleep(max(0.0, start + PROBE_INTERVAL_S - time.monotonic()))
    sock.close()
    return samples


def connections(args: argparse.Namespace) -> list[float]:
    """--connections clients, each refreshing the full Metadata every 5 s."""
    from kafpy.client.connection import BrokerConnection
    from kafpy.common.errors import KafkaError
    from kafpy.protocol.api_keys import ApiKey

    host, port = args.bootstrap.split(":")

    async def client(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 5))
        while time.monotonic() < end:
            conn = BrokerConnection(host, int(port), client_id=f"idle-{i}")
            try:
                await conn.connect()
                while time.monotonic() < end:
                    await conn.send(ApiKey.METADATA, {"topics": None}, version=1)
                    await asyncio.sleep(5)
            except KafkaError:
                await asyncio.sleep(1)  # a broker too slow to answer: reconnect, as clients do
            finally:
                await conn.close()

    async def run() -> None:
        await asyncio.gather(*(client(i) for i in range(args.connections)))

    end = time.monotonic() + args.duration
    asyncio.run(run())
    return []


def group(args: argparse.Namespace) -> list[float]:
    """A group of --members consumers; every 2 s one leaves and a new one joins."""
    from confluent_kafka import Consumer

    def member() -> Consumer:
        c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "churn",
                      "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
                      "enable.auto.commit": True, "auto.offset.reset": "latest"})  # fmt: skip
        c.subscribe([TOPIC])
        return c

    members = [member() for _ in range(args.members)]
    end = time.monotonic() + args.duration
    next_churn = time.monotonic() + 2
    while time.monotonic() < end:
        for c in members:
            c.poll(0)
        if time.monotonic() >= next_churn:
            members.pop(random.randrange(len(members))).close()
            members.append(member())
            next_churn += 2
        time.sleep(0.05)
    for c in members:
        c.close()
    return []


def producer(args: argparse.Namespace) -> list[float]:
    """2,000 records/s of 100 B over all partitions."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 5, "acks": 1})
    value = b"x" * 100
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < start + args.duration:
        for _ in range(int((now - start) * 2000) - sent):
            p.produce(TOPIC, value, partition=sent % args.partitions)
            sent += 1
        p.poll(0.005)
    p.flush(30)
    return []


ROLES = {"prober": prober, "connections": connections, "group": group, "producer": producer}


# --- orchestration ------------------------------------------------------------------------


def child(role: str, args: argparse.Namespace, bootstrap: str, duration: float) -> list[str]:
    return [sys.executable, str(HERE), "--role", role, "--bootstrap", bootstrap,
            "--duration", str(duration), "--partitions", str(args.partitions),
            "--connections", str(args.connections), "--members", str(args.members)]  # fmt: skip


def probe(args: argparse.Namespace, bootstrap: str, duration: float) -> list[float]:
    out = subprocess.run(child("prober", args, bootstrap, duration), stdout=subprocess.PIPE,
                         text=True, check=True, timeout=duration + 120).stdout  # fmt: skip
    return list(json.loads(out))


def connection_count(pid: int) -> int:
    out = subprocess.run(["ss", "-Htnp", "state", "established"], stdout=subprocess.PIPE,
                         text=True, check=False).stdout  # fmt: skip
    return sum(1 for line in out.splitlines() if f"pid={pid}," in line)


def create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, partitions, 1)], operation_timeout=120).values():
        f.result(180)

    def all_led() -> bool:
        md = admin.list_topics(TOPIC, timeout=30).topics.get(TOPIC)
        return bool(
            md
            and md.partitions
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        )

    wait_until(
        all_led,
        180,
        interval_s=0.5,
        on_timeout=exit_with(f"{partitions} partitions have no leader after 180 s"),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="10 s of load")
    ap.add_argument("--duration", type=float, default=None, help="seconds of load (30)")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=180)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--broker-log", type=Path, help="keep the broker's log there")
    args = ap.parse_args()
    args.duration = args.duration or (10.0 if args.quick else 30.0)
    if args.role:
        print(json.dumps(ROLES[args.role](args)))
        return
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-metadata-load-"))
    port = free_port()
    log = open(workdir / "broker.log", "wb")
    broker = start_broker(workdir, port, log)
    load: list[subprocess.Popen[bytes]] = []
    try:
        wait_port(port)
        bootstrap = f"127.0.0.1:{port}"
        started = time.monotonic()
        create_topic(bootstrap, args.partitions)
        print(f"{args.partitions} partitions created in {time.monotonic() - started:.1f} s; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
        print(f"idle        Metadata {percentiles(probe(args, bootstrap, 5))}", flush=True)
        load = [
            subprocess.Popen(
                child(role, args, bootstrap, args.duration + 10),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            for role in ("connections", "group", "producer")
        ]
        time.sleep(5)  # the connections open, the group forms
        print(f"load        {connection_count(broker.pid)} connections, a group of "
              f"{args.members} churning, 2,000 records/s", flush=True)  # fmt: skip
        print(f"under load  Metadata {percentiles(probe(args, bootstrap, args.duration))}",
              flush=True)  # fmt: skip
    finally:
        for p in load:
            p.terminate()
        for p in load:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        broker.terminate()
        broker.wait(120)
        log.close()
        if args.broker_log:
            shutil.copy(workdir / "broker.log", args.broker_log)
        for line in (workdir / "broker.log").read_text(errors="replace").splitlines():
            if "Event loop lag over" in line:
                print(line)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
