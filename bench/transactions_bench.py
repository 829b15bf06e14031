"""Transactional produce against the idempotent producer alone, on one `kafpy server`.

    python bench/transactions_bench.py [--records 50000] [--size 100] [--single 2000]

Starts a broker on a free port in a temporary directory, then with confluent-kafka sends
`--records` records of `--size` bytes with the idempotent producer (enable.idempotence,
one flush at the end), and the same records with a transactional producer in
transactions of 100 and 10,000 records (begin, produce, commit), and `--single` records
in transactions of 1 record each (one commit round trip per record, so fewer of them).
Prints records/s for each and the ratio to the idempotent rate (issue 15's goal: at least
50 % at 100 records per transaction).

Then, from the broker's own request metrics (kafpy.metrics.listener), where the time of a
one-record transaction goes: the broker's time per transaction in each API it serves
(AddPartitionsToTxn, Produce, EndTxn, and the coordinator's WriteTxnMarkers to the partition
leader) against the wall-clock time of a transaction as the client sees it. What is not the
broker's is the client's own round trips and scheduling, a floor no broker can lower.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_support import free_port, wait_port  # noqa: E402
from confluent_kafka import Producer

COMMON = {"linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.messages": 2_000_000,
          "queue.buffering.max.kbytes": 2_000_000}  # fmt: skip


def produce(p: Producer, topic: str, n: int, value: bytes) -> None:
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.001)


def idempotent_rate(bootstrap: str, topic: str, n: int, value: bytes) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **COMMON})
    produce(p, topic, n, value)  # warm up: connect, producer id, topic, segment, page cache
    p.flush(300)
    start = time.perf_counter()
    produce(p, topic, n, value)
    if p.flush(300) != 0:
        raise SystemExit("idempotent produce did not finish")
    return n / (time.perf_counter() - start)


def transactional_rate(bootstrap: str, topic: str, n: int, per_txn: int, value: bytes) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{per_txn}", **COMMON})
    p.init_transactions(60)
    p.begin_transaction()  # warm up: coordinator, partitions
    produce(p, topic, 10, value)
    p.commit_transaction(60)
    start = time.perf_counter()
    sent = 0
    while sent < n:
        k = min(per_txn, n - sent)
        p.begin_transaction()
        produce(p, topic, k, value)
        p.commit_transaction(60)
        sent += k
    return n / (time.perf_counter() - start)


TXN_APIS = ("AddPartitionsToTxn", "Produce", "EndTxn", "WriteTxnMarkers")


def broker_request_ms(metrics_url: str) -> dict[str, float]:
    """Total milliseconds the broker has spent in each of TXN_APIS so far."""
    with urllib.request.urlopen(metrics_url, timeout=30) as r:
        text = r.read().decode()
    totals = dict.fromkeys(TXN_APIS, 0.0)
    for line in text.splitlines():
        for api in TXN_APIS:
            if line.startswith(f'kafka_network_requestmetrics_totaltimems_sum{{request="{api}"}}'):
                totals[api] = float(line.rsplit(" ", 1)[1])
    return totals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--single", type=int, default=2_000, help="records sent one per transaction")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-bench-"))
    port, metrics_port = free_port(), free_port()
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(workdir / "data"),
                 "kafpy.metrics.listener": f"http://127.0.0.1:{metrics_port}",
                 "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}  # fmt: skip
    command = [sys.executable, "-m", "kafpy", "server"]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    broker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(workdir / "broker.log", "wb"),
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    try:
        wait_port(port)
        wait_port(metrics_port)
        bootstrap = f"127.0.0.1:{port}"
        value = os.urandom(args.size // 2).hex().encode()[: args.size]
        base = idempotent_rate(bootstrap, "bench-idempotent", args.records, value)
        print(f"idempotent              {args.records:>8,} records  {base:>12,.0f} rec/s")
        for per_txn, n in ((1, args.single), (100, args.records), (10_000, args.records)):
            before = broker_request_ms(metrics_url)
            rate = transactional_rate(bootstrap, f"bench-txn-{per_txn}", n, per_txn, value)
            print(f"transactions of {per_txn:>6,}  {n:>8,} records  {rate:>12,.0f} rec/s  "
                  f"{rate / base:>6.1%} of idempotent")  # fmt: skip
            if per_txn == 1:
                after = broker_request_ms(metrics_url)
                # n one-record transactions (+1 warm-up of 10 records)
                spent = {api: (after[api] - before[api]) / (n + 1) for api in TXN_APIS}
                parts = ", ".join(f"{api} {ms:.3f}" for api, ms in spent.items())
                print(
                    f"  one-record transaction: {1000 / rate:.2f} ms as the client sees it, "
                    f"{sum(spent.values()):.2f} ms of it in the broker ({parts} ms)"
                )
    finally:
        broker.terminate()
        broker.wait(60)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
