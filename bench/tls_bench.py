"""TLS cost on one `kafpy server`: confluent-kafka produce and consume over PLAINTEXT vs SSL vs
SASL_SSL.

    python bench/tls_bench.py [--records 200000] [--size 1024] [--rounds 3]

Starts a broker with a PLAINTEXT, an SSL and a SASL_SSL (PLAIN) listener (certificates from
kafpy.security.local_pki in a temporary directory), then for each listener produces N
records of --size bytes with confluent-kafka (acks=1, linger.ms=5, batch.size 1 MiB) and
consumes them back from offset 0. The protocols take turns for --rounds rounds (the
machine may be shared: the best round of each counts), then it prints records/s and MB/s
and SSL and SASL_SSL as shares of PLAINTEXT (goal: SSL at least 50 %).

It also prints the CPU seconds the broker and the client process (its Python thread and
librdkafka's) spent in each best round, and how many of the machine's cores they kept busy
meanwhile: the broker and the client share the machine, so where the busy cores reach the
core count, the rate is bounded by the CPU both sides need, not by the broker's alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench_support import cpu_seconds, free_port, produce_all, wait_port  # noqa: E402
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafpy.security.local_pki import make_test_pki

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def produce(conf: dict[str, str], topic: str, n: int, value: bytes) -> float:
    p = Producer({**conf, "acks": "1", "linger.ms": 5, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 2_000_000,
                  "queue.buffering.max.kbytes": 2_000_000})  # fmt: skip
    return produce_all(p, topic, n, value)


def consume(conf: dict[str, str], topic: str, n: int) -> float:
    c = Consumer({**conf, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 10 << 20,
                  "queued.min.messages": 2_000_000, "queued.max.messages.kbytes": (2 << 20) - 1,
                  "fetch.queue.backoff.ms": 10})  # fmt: skip
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    while got < n:
        for m in c.consume(min(10000, n - got), 1.0):
            if m.error() and m.error().code() != KafkaError._PARTITION_EOF:
                raise SystemExit(str(m.error()))
            if not m.error():
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


@dataclass(frozen=True)
class Run:
    """One timed produce or consume: its rate and the CPU seconds each side spent."""

    rate: float
    seconds: float
    broker_cpu: float
    client_cpu: float

    @property
    def cores_busy(self) -> float:
        return (self.broker_cpu + self.client_cpu) / self.seconds


def timed(run: Callable[[], float], broker_pid: int, n: int) -> Run:
    """Run a produce or consume of `n` records (it returns its seconds), with the CPU the
    broker and this process (the client) spent meanwhile. The client's is process_time: it
    counts librdkafka's threads too, which end with their producer or consumer."""
    broker_before, client_before = cpu_seconds(broker_pid), time.process_time()
    seconds = run()
    broker_cpu = cpu_seconds(broker_pid) - broker_before
    return Run(n / seconds, seconds, broker_cpu, time.process_time() - client_before)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-tls-bench-"))
    pki = make_test_pki(workdir / "pki")
    plain, tls, sasl_ssl = free_port(), free_port(), free_port()
    overrides = {
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls},SASL_SSL://127.0.0.1:{sasl_ssl}"
        ),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "log.dirs": str(workdir / "data"),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.broker.keystore),
    }
    cmd = [sys.executable, "-m", "kafpy", "server"]
    for key, value in overrides.items():
        cmd += ["--override", f"{key}={value}"]
    with open(workdir / "broker.log", "wb") as log:
        broker = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    try:
        wait_port(plain)
        wait_port(tls)
        wait_port(sasl_ssl)
        protocols = {
            "PLAINTEXT": {"bootstrap.servers": f"127.0.0.1:{plain}"},
            "SSL": {"bootstrap.servers": f"127.0.0.1:{tls}", "security.protocol": "SSL",
                    "ssl.ca.location": str(pki.ca_certificate)},
            "SASL_SSL": {"bootstrap.servers": f"127.0.0.1:{sasl_ssl}",
                         "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                         "sasl.username": "alice", "sasl.password": "alice-secret",
                         "ssl.ca.location": str(pki.ca_certificate)},
        }  # fmt: skip
        n, size = args.records, args.size
        value = os.urandom(size // 2).hex().encode()[:size]
        best: dict[tuple[str, str], Run] = {}
        for name, conf in protocols.items():
            produce(conf, f"bench-{name.lower()}-0", 1000, value)  # connect and warm up
        for round_ in range(args.rounds):
            for name, conf in protocols.items():
                topic = f"bench-{name.lower()}-{round_ + 1}"
                for what, run in (
                    ("produce", partial(produce, conf, topic, n, value)),
                    ("consume", partial(consume, conf, topic, n)),
                ):
                    result = timed(run, broker.pid, n)
                    if (name, what) not in best or result.rate > best[name, what].rate:
                        best[name, what] = result
        mb = size / 1e6
        for name in protocols:
            p, c = best[name, "produce"], best[name, "consume"]
            print(f"{name:<9} {size:>5} B  produce {p.rate:>10,.0f} rec/s {p.rate * mb:>7.1f} MB/s   "
                  f"consume {c.rate:>10,.0f} rec/s {c.rate * mb:>7.1f} MB/s  (best of {args.rounds})")  # fmt: skip
        for name in ("SSL", "SASL_SSL"):
            goal = "  (goal: at least 50 %)" if name == "SSL" else ""
            print(f"{name}/PLAINTEXT  "
                  f"produce {best[name, 'produce'].rate / best['PLAINTEXT', 'produce'].rate:.0%}  "
                  f"consume {best[name, 'consume'].rate / best['PLAINTEXT', 'consume'].rate:.0%}"
                  f"{goal}")  # fmt: skip
        print(f"CPU seconds in the best round of {n:,} records "
              f"(broker + client; cores busy of {os.cpu_count()}):")  # fmt: skip
        for name in protocols:
            print(f"{name:<9} " + "   ".join(
                f"{what} {r.broker_cpu:.2f} + {r.client_cpu:.2f} s ({r.cores_busy:.1f} cores)"
                for what in ("produce", "consume") for r in [best[name, what]]
            ))  # fmt: skip
    finally:
        broker.terminate()
        broker.wait(60)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
