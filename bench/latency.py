"""Tail latency of kafpy: produce→consume and produce-ack percentiles at fixed rates.

    python bench/latency.py [--quick] [--duration 10] [--sizes 100,1024] [--rates 1000,10000,half]
                            [--no-cluster] [--no-redis] [--fetch-wait-ms 500]

A broker, a producer and a consumer run in separate processes (so no client's GIL is in
the figure). The producer (confluent-kafka, linger.ms=0) sends records at a fixed rate,
each value carrying the CLOCK_MONOTONIC time it was sent; the consumer (confluent-kafka,
fetch.wait.max.ms as given, so a long-poll Fetch must be woken by new data) takes the
time it received each one. Printed per configuration: p50/p99/p99.9/max of produce→consume
and of the produce acknowledgement (delivery report), in ms.

Configurations: every size × every rate, for
- acks=1 on one broker (embedded metadata store), one partition;
- acks=all on a 3-broker cluster coordinating through a real ZooKeeper (replication
  factor 3, min.insync.replicas 2), one partition;
- Redis Streams as the reference (appendonly yes, appendfsync everysec): XADD from the
  producer process, blocking XREAD in the consumer process, the same loop and rates.
`half` is 50 % of the maximum rate measured for that setup and size (the producer flooding
for a moment first). Each run lasts --duration seconds (10; --quick 3). The broker's
loop-lag summary (logged at shutdown) is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_support import exit_with, free_port, wait_port  # noqa: E402

from kafpy.common.wait import wait_until  # noqa: E402

HERE = Path(__file__).resolve()
# value layout: 1 byte (1 timed, 0 warm-up) + 8 bytes send time (monotonic ns), then padding
HEADER = struct.Struct(">BQ")
WARMUP_S = 0.5


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    if not samples_ms:
        return {}
    s = sorted(samples_ms)

    def at(q: float) -> float:
        return s[min(len(s) - 1, int(q * len(s)))]

    return {"n": len(s), "p50": at(0.5), "p99": at(0.99), "p99.9": at(0.999), "max": s[-1]}


def value_of(size: int, timed: bool) -> bytes:
    return HEADER.pack(1 if timed else 0, time.monotonic_ns()) + b"x" * max(0, size - HEADER.size)


class Pacer:
    """Fixed-rate schedule: how many records are due now, and how long until the next."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.start = time.monotonic()
        self.sent = 0

    def due(self) -> int:
        return int((time.monotonic() - self.start) * self.rate) + 1 - self.sent

    def wait_s(self) -> float:
        return max(0.0, self.start + (self.sent + 1) / self.rate - time.monotonic())


# --- child processes ----------------------------------------------------------------------


def kafka_producer(args: argparse.Namespace) -> dict[str, object]:
    from confluent_kafka import Producer

    acks: list[float] = []
    errors = [0]

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors[0] += 1
            return
        kind, sent = HEADER.unpack_from(msg.value())  # type: ignore[attr-defined]
        if kind == 1:
            acks.append((time.monotonic_ns() - sent) / 1e6)

    p = Producer({"bootstrap.servers": args.bootstrap, "acks": args.acks, "linger.ms": 0,
                  "queue.buffering.max.messages": 2_000_000, "enable.idempotence": False})  # fmt: skip
    if args.rate == 0:  # flood: the maximum rate of this producer against this setup
        n, start = 0, time.monotonic()
        value = b"x" * args.size
        while time.monotonic() - start < args.duration:
            try:
                p.produce(args.topic, value)
                n += 1
            except BufferError:
                p.poll(0.001)
            if n % 1000 == 0:
                p.poll(0)
        p.flush(60)  # the rate is of records acknowledged, not of records queued in the client
        return {"max_rate": n / (time.monotonic() - start)}
    for phase, seconds in ((False, WARMUP_S), (True, args.duration)):
        pacer = Pacer(args.rate)
        while time.monotonic() - pacer.start < seconds:
            for _ in range(pacer.due()):
                try:
                    p.produce(args.topic, value_of(args.size, phase), on_delivery=on_delivery)
                except BufferError:  # the client's queue is full: the broker is behind
                    p.poll(0.001)
                    break
                pacer.sent += 1
            # poll takes whole milliseconds: poll(0.0001) is poll(0), and a loop of those
            # spins a core the broker needs; below a millisecond, serve the delivery reports
            # and sleep, as the Redis producer does
            wait = pacer.wait_s()
            if wait >= 0.001:
                p.poll(wait)
            else:
                p.poll(0)
                time.sleep(wait)
    p.produce(args.topic, b"\x02" + b"\0" * 8)  # end marker
    p.flush(60)
    return {"sent": pacer.sent, "errors": errors[0], "ack": percentiles(acks)}


def kafka_consumer(args: argparse.Namespace) -> dict[str, object]:
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "latency",
                  "enable.auto.commit": False, "fetch.wait.max.ms": args.fetch_wait_ms,
                  "fetch.queue.backoff.ms": 0})  # fmt: skip
    c.assign([TopicPartition(args.topic, 0, OFFSET_END)])
    c.consume(1, 1.0)  # connected and positioned
    print("ready", flush=True)
    lat: list[float] = []
    deadline = time.monotonic() + args.duration + 60
    done = False
    while not done and time.monotonic() < deadline:
        # consume(n, t) waits for n records or t; so take what is there, else wait for one
        for m in c.consume(10000, 0) or c.consume(1, 0.5):
            now = time.monotonic_ns()
            if m.error():
                continue
            kind, sent = HEADER.unpack_from(m.value())
            if kind == 2:
                done = True
            elif kind == 1:
                lat.append((now - sent) / 1e6)
    c.close()
    return {"received": len(lat), "e2e": percentiles(lat)}


def redis_producer(args: argparse.Namespace) -> dict[str, object]:
    import redis

    r = redis.Redis(port=int(args.bootstrap))
    acks: list[float] = []
    for phase, seconds in ((False, WARMUP_S), (True, args.duration)):
        pacer = Pacer(args.rate)
        while time.monotonic() - pacer.start < seconds:
            due = pacer.due()
            if due > 0:
                pipe = r.pipeline(transaction=False)
                values = [value_of(args.size, phase) for _ in range(due)]
                for v in values:
                    pipe.xadd(args.topic, {"v": v})
                pipe.execute()
                now = time.monotonic_ns()
                if phase:
                    acks += [(now - HEADER.unpack_from(v)[1]) / 1e6 for v in values]
                pacer.sent += due
            time.sleep(pacer.wait_s())
    r.xadd(args.topic, {"v": b"\x02" + b"\0" * 8})
    return {"sent": pacer.sent, "errors": 0, "ack": percentiles(acks)}


def redis_consumer(args: argparse.Namespace) -> dict[str, object]:
    import redis

    r = redis.Redis(port=int(args.bootstrap))
    last = "$"
    r.xread({args.topic: last}, count=1, block=1)
    print("ready", flush=True)
    lat: list[float] = []
    deadline = time.monotonic() + args.duration + 60
    done = False
    while not done and time.monotonic() < deadline:
        for _, entries in r.xread({args.topic: last}, count=10000, block=500) or []:
            now = time.monotonic_ns()
            for entry_id, fields in entries:
                last = entry_id
                kind, sent = HEADER.unpack_from(fields[b"v"])
                if kind == 2:
                    done = True
                elif kind == 1:
                    lat.append((now - sent) / 1e6)
    return {"received": len(lat), "e2e": percentiles(lat)}


ROLES = {
    "kafka-producer": kafka_producer,
    "kafka-consumer": kafka_consumer,
    "redis-producer": redis_producer,
    "redis-consumer": redis_consumer,
}


# --- orchestration ------------------------------------------------------------------------


def child(role: str, **kw: object) -> list[str]:
    cmd = [sys.executable, str(HERE), "--role", role]
    for k, v in kw.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    return cmd


def run_pair(kind: str, bootstrap: str, topic: str, size: int, rate: float, duration: float,
             acks: str, fetch_wait_ms: int) -> dict[str, object]:  # fmt: skip
    common = {"bootstrap": bootstrap, "topic": topic, "size": size, "duration": duration}
    consumer = subprocess.Popen(
        child(f"{kind}-consumer", fetch_wait_ms=fetch_wait_ms, **common),  # type: ignore[arg-type]
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert consumer.stdout is not None
        if consumer.stdout.readline().strip() != "ready":
            raise SystemExit(f"the {kind} consumer did not start")
        produced = subprocess.run(
            child(f"{kind}-producer", rate=rate, acks=acks, **common),  # type: ignore[arg-type]
            stdout=subprocess.PIPE, text=True, check=True, timeout=duration + 120,
        )  # fmt: skip
        out, _ = consumer.communicate(timeout=120)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    return {**json.loads(produced.stdout), **json.loads(out)}


def max_rate(bootstrap: str, topic: str, size: int, acks: str, seconds: float) -> float:
    out = subprocess.run(
        child("kafka-producer", bootstrap=bootstrap, topic=topic, size=size, rate=0,
              acks=acks, duration=seconds),
        stdout=subprocess.PIPE, text=True, check=True, timeout=seconds + 120,
    ).stdout  # fmt: skip
    return float(json.loads(out)["max_rate"])


def fmt(p: object) -> str:
    if not isinstance(p, dict) or not p:
        return "no samples".rjust(44)
    return (f"{p['p50']:8.2f} {p['p99']:8.2f} {p['p99.9']:8.2f} {p['max']:8.2f}"
            f" (n={p['n']})")  # fmt: skip


def report(label: str, size: int, rate: float, result: dict[str, object]) -> None:
    print(f"{label:<22} {size:>5} B {rate:>8,.0f}/s  e2e {fmt(result.get('e2e'))}", flush=True)
    print(f"{'':<22} {'':>7} {'':>10}  ack {fmt(result.get('ack'))}", flush=True)
    if result.get("errors") or result.get("received") != result.get("sent"):
        print(f"{'':<22} sent {result.get('sent')}, received {result.get('received')}, "
              f"delivery errors {result.get('errors')}", flush=True)  # fmt: skip


def create_topic(bootstrap: str, topic: str, rf: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": "2"} if rf > 1 else {}
    futures = admin.create_topics([NewTopic(topic, 1, rf, config=config)], operation_timeout=30)
    for f in futures.values():
        f.result(60)

    def led_with_full_isr() -> bool:  # leader known everywhere
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        return bool(
            md is not None
            and md.error is None
            and md.partitions
            and md.partitions[0].leader >= 0
            and (rf == 1 or len(md.partitions[0].isrs) == rf)
        )

    wait_until(
        led_with_full_isr,
        60,
        interval_s=0.2,
        on_timeout=exit_with(f"topic {topic} has no leader or full ISR after 60 s"),
    )


def run_kafka(label: str, bootstrap: str, rf: int, acks: str, args: argparse.Namespace,
              sizes: list[int]) -> dict[int, list[float]]:  # fmt: skip
    used: dict[int, list[float]] = {}
    for size in sizes:
        used[size] = []
        for spec in args.rates:
            if spec == "half":  # measured last: the flood leaves the replicas busy a while
                create_topic(bootstrap, f"max-{rf}-{size}", rf)
                m = max_rate(bootstrap, f"max-{rf}-{size}", size, acks, min(3.0, args.duration))
                print(f"{label:<22} {size:>5} B  producer's maximum {m:>10,.0f}/s", flush=True)
            rate = m / 2 if spec == "half" else float(spec)
            used[size].append(rate)
            topic = f"lat-{rf}-{size}-{int(rate)}"
            create_topic(bootstrap, topic, rf)
            res = run_pair("kafka", bootstrap, topic, size, rate, args.duration, acks,
                           args.fetch_wait_ms)  # fmt: skip
            report(label, size, rate, res)
    return used


@contextmanager
def single_broker(workdir: Path) -> Iterator[str]:
    port = free_port()
    log = open(workdir / "broker.log", "wb")
    broker = subprocess.Popen(
        [sys.executable, "-m", "kafpy", "server", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"log.dirs={workdir / 'data'}"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        wait_port(port)
        yield f"127.0.0.1:{port}"
    finally:
        broker.terminate()
        broker.wait(60)
        log.close()


@contextmanager
def zk_cluster(workdir: Path) -> Iterator[str]:
    sys.path.insert(0, str(HERE.parent.parent))
    from kafpy.tools.local_cluster import LocalCluster

    cluster = LocalCluster(workdir / "cluster", 3)
    try:
        cluster.start()
        yield cluster.bootstrap_servers
    finally:
        cluster.stop()


@contextmanager
def redis_server(workdir: Path) -> Iterator[str | None]:
    server = shutil.which("redis-server")
    try:
        import redis  # noqa: F401
    except ImportError:
        server = None
    if server is None:
        yield None
        return
    port = free_port()
    (workdir / "redis").mkdir()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--dir", str(workdir / "redis"), "--appendonly", "yes",
         "--appendfsync", "everysec", "--save", ""],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_port(port)
        yield str(port)
    finally:
        proc.terminate()
        proc.wait()


def loop_lag_lines(workdir: Path) -> list[str]:
    lines = []
    for path in sorted(workdir.rglob("*")):
        if path.name in ("broker.log", "server.out"):
            for line in path.read_text(errors="replace").splitlines():
                if "Event loop lag" in line:
                    lines.append(f"{path.relative_to(workdir)}: {line}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--acks", default="1", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="3 s per configuration")
    ap.add_argument("--duration", type=float, default=None, help="seconds per configuration (10)")
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--rates", default="1000,10000,half",
                    help="records/s, comma-separated; 'half' is 50%% of the measured maximum")  # fmt: skip
    ap.add_argument(
        "--fetch-wait-ms", type=int, default=500, help="the consumer's fetch.wait.max.ms"
    )
    ap.add_argument("--no-cluster", action="store_true", help="skip acks=all on RF 3")
    ap.add_argument("--no-redis", action="store_true", help="skip the Redis Streams reference")
    args = ap.parse_args()
    args.duration = args.duration or (3.0 if args.quick else 10.0)
    if args.role:
        print(json.dumps(ROLES[args.role](args)))
        return
    args.rates = args.rates.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"latency in ms: p50 p99 p99.9 max; {args.duration:g} s per configuration, "
          f"fetch.wait.max.ms={args.fetch_wait_ms}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-latency-"))
    try:
        with single_broker(workdir) as bootstrap:
            used = run_kafka("kafpy acks=1 RF1", bootstrap, 1, "1", args, sizes)
        if not args.no_cluster:
            with zk_cluster(workdir) as bootstrap:
                run_kafka("kafpy acks=all RF3", bootstrap, 3, "all", args, sizes)
        if not args.no_redis:
            with redis_server(workdir) as port:
                if port is None:
                    print("redis  (redis-server or redis-py not installed: no reference)")
                for size in sizes if port else []:
                    for rate in used[size]:
                        res = run_pair("redis", port, f"s-{size}-{int(rate)}", size, rate,
                                       args.duration, "1", args.fetch_wait_ms)  # fmt: skip
                        report("redis streams", size, rate, res)
        for line in loop_lag_lines(workdir):
            print(line)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
