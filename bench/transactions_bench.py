"""Transactional produce against the idempotent producer alone, on one `kafpy server`.

    python bench/transactions_bench.py [--records 50000] [--size 100] [--single 2000]
                                       [--timed-records 3000000] [--kafpy-records 100000]
                                       [--rounds 5]

First, issue 32's figure: the same `--size`-byte records sent by an idempotent producer, and
by a transactional producer committing every 100 ms, with confluent-kafka
(`--timed-records` records) and with kafpy's own client (`--kafpy-records` records, driven
as `kafpy producer-perf-test` drives it: batch.size chunks, 5 in flight,
--transaction-duration-ms 100), `--rounds` alternated runs of each, the median shown.
Prints records/s for each and the transactional rate as a share of the idempotent one (the
goal: at least 90 %).

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
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_support import free_port, wait_port  # noqa: E402
from confluent_kafka import Producer

from kafpy.cli.producer_perf_test import producer_settings, run_perf

COMMIT_EVERY_MS = 100

TIMED = {"linger.ms": 5, "batch.size": 1 << 20}
"""confluent-kafka's settings for issue 32's comparison: librdkafka's own queue bounds (100,000
records), as Kafka's published figure keeps the Java producer's buffer.memory default. A queue
of millions would make each commit wait for a drain the idempotent run never waits for."""
COMMON = {**TIMED, "queue.buffering.max.messages": 2_000_000,
          "queue.buffering.max.kbytes": 2_000_000}  # fmt: skip


def produce(p: Producer, topic: str, n: int, value: bytes) -> None:
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.001)


def idempotent_rate(
    bootstrap: str, topic: str, n: int, value: bytes, settings: dict[str, Any] = COMMON
) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **settings})
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


def timed_transactions_rate(bootstrap: str, topic: str, n: int, value: bytes) -> tuple[float, int]:
    """confluent-kafka: `n` records in transactions committed every COMMIT_EVERY_MS
    (records/s, transactions)."""
    p = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-timed-{topic}", **TIMED}
    )
    p.init_transactions(60)
    p.begin_transaction()  # warm up: coordinator, partition, topic
    produce(p, topic, n // 10, value)
    p.commit_transaction(60)
    start = time.perf_counter()
    sent = transactions = 0
    while sent < n:
        p.begin_transaction()
        began = time.perf_counter()
        while sent < n and (time.perf_counter() - began) * 1000 < COMMIT_EVERY_MS:
            k = min(1000, n - sent)
            produce(p, topic, k, value)
            sent += k
        p.commit_transaction(60)
        transactions += 1
    return n / (time.perf_counter() - start), transactions


def kafpy_rate(bootstrap: str, topic: str, n: int, value: bytes, transactional: bool) -> float:
    """kafpy's BatchProducer as producer-perf-test runs it: records/s of `n` records,
    idempotent, or transactional committing every COMMIT_EVERY_MS."""
    props = {"bootstrap.servers": bootstrap, "enable.idempotence": "true"}
    if transactional:
        props["transactional.id"] = f"bench-kafpy-{topic}"
    settings = producer_settings(props, print)
    duration = COMMIT_EVERY_MS if transactional else 0

    async def run(count: int) -> float:
        stats = await run_perf(topic, count, [value], -1, settings, lambda _: None, duration)
        return stats.count / (stats.clock() - stats.start)

    asyncio.run(run(max(1, n // 10)))  # warm up: topic, producer id, page cache
    return asyncio.run(run(n))


def timed_comparison(
    bootstrap: str, confluent_n: int, kafpy_n: int, value: bytes, rounds: int
) -> None:
    print(f"transactions committed every {COMMIT_EVERY_MS} ms against the idempotent producer:")
    bases, rates, txns = [], [], 0
    for i in range(rounds):  # alternated, median taken: the machine's noise hits both alike
        bases.append(
            idempotent_rate(bootstrap, f"bench-c-idempotent-{i}", confluent_n, value, TIMED)
        )
        rate, txns = timed_transactions_rate(bootstrap, f"bench-c-timed-{i}", confluent_n, value)
        rates.append(rate)
    base, rate = statistics.median(bases), statistics.median(rates)
    print(f"  confluent-kafka  idempotent     {confluent_n:>9,} records  {base:>10,.0f} rec/s  "
          f"(median of {rounds}: {', '.join(f'{b:,.0f}' for b in bases)})")  # fmt: skip
    print(f"  confluent-kafka  transactional  {confluent_n:>9,} records  {rate:>10,.0f} rec/s  "
          f"{rate / base:>6.1%} of idempotent ({txns} transactions a run; median of {rounds}: "
          f"{', '.join(f'{r:,.0f}' for r in rates)})")  # fmt: skip
    bases, rates = [], []
    for _ in range(rounds):  # alternated, median taken: the machine's noise hits both alike
        bases.append(
            kafpy_rate(bootstrap, "bench-k-idempotent", kafpy_n, value, transactional=False)
        )
        rates.append(kafpy_rate(bootstrap, "bench-k-timed", kafpy_n, value, transactional=True))
    base, rate = statistics.median(bases), statistics.median(rates)
    print(f"  kafpy            idempotent     {kafpy_n:>9,} records  {base:>10,.0f} rec/s  "
          f"(median of {rounds}: {', '.join(f'{b:,.0f}' for b in bases)})")  # fmt: skip
    print(f"  kafpy            transactional  {kafpy_n:>9,} records  {rate:>10,.0f} rec/s  "
          f"{rate / base:>6.1%} of idempotent (median of {rounds}: "
          f"{', '.join(f'{r:,.0f}' for r in rates)})")  # fmt: skip


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
    ap.add_argument(
        "--timed-records",
        type=int,
        default=3_000_000,
        help="confluent-kafka's records for the commit-every-100-ms comparison",
    )
    ap.add_argument(
        "--kafpy-records",
        type=int,
        default=100_000,
        help="kafpy's client's records for the commit-every-100-ms comparison",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="runs of each producer with each client (alternated; the median is shown)",
    )
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
        timed_comparison(bootstrap, args.timed_records, args.kafpy_records, value, args.rounds)
        print("transactions of a fixed size (confluent-kafka):")
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
