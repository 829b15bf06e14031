"""The cost of a KIP-939 prepared-then-completed transaction against a plain commit.

    python bench/two_phase_commit_bench.py [--transactions 300] [--per-txn 100] [--size 100]

Starts a `kafpy server` with transactions and `transaction.two.phase.commit.enable=true`
(data in a temporary directory), then with kafpy's BatchProducer writes `--transactions`
transactions of `--per-txn` records of `--size` bytes, two ways:
- plain: one producer, begin, send, commit_transaction;
- two-phase, as the exactly-once Spark sink does per task and micro-batch: a producer
  runs init_transactions(enable_2pc=True), begin, send, prepare_transaction; a second
  producer of the same transactional id runs init_transactions(enable_2pc=True,
  keep_prepared_txn=True) and complete_transaction.
Prints transactions/s and ms per transaction of each, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_support import free_port, start_broker, wait_port  # noqa: E402

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.client.kafka_client import KafkaClient  # noqa: E402
from kafpy.client.producer import BatchProducer  # noqa: E402

OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "transaction.two.phase.commit.enable": "true",
}


async def plain(
    client: KafkaClient, topic: str, n: int, records: list[tuple[None, bytes]]
) -> float:
    """Seconds for `n` begin-send-commit transactions of one producer (after one warm-up)."""
    producer = BatchProducer(client, transactional_id=f"bench-plain-{topic}")
    await producer.init_transactions()
    start = 0.0
    for i in range(n + 1):
        if i == 1:
            start = time.perf_counter()
        producer.begin_transaction()
        await producer.send(topic, records, partition=0)
        await producer.commit_transaction()
    return time.perf_counter() - start


async def two_phase(
    client: KafkaClient, topic: str, n: int, records: list[tuple[None, bytes]]
) -> float:
    """Seconds for `n` transactions prepared by one producer and completed by a second."""
    tid = f"bench-2pc-{topic}"
    start = 0.0
    for i in range(n + 1):
        if i == 1:
            start = time.perf_counter()
        task = BatchProducer(client, transactional_id=tid)
        await task.init_transactions(enable_2pc=True)
        task.begin_transaction()
        await task.send(topic, records, partition=0)
        prepared = await task.prepare_transaction()
        driver = BatchProducer(client, transactional_id=tid)
        await driver.init_transactions(enable_2pc=True, keep_prepared_txn=True)
        if not await driver.complete_transaction(prepared):
            raise SystemExit(f"transaction {prepared} was not the one kept")
    return time.perf_counter() - start


async def run(bootstrap: str, n: int, per_txn: int, size: int) -> dict[str, float]:
    async with AdminClient.connect(bootstrap) as admin:
        await admin.create_topics([NewTopic("bench-plain", 1, 1), NewTopic("bench-2pc", 1, 1)])
    value = os.urandom(size // 2).hex().encode()[:size]
    records: list[tuple[None, bytes]] = [(None, value)] * per_txn
    async with KafkaClient(bootstrap) as client:
        return {
            "commit_transaction": await plain(client, "bench-plain", n, records),
            "prepare + complete": await two_phase(client, "bench-2pc", n, records),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--per-txn", type=int, default=100)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafpy-2pc-bench-") as name:
        tmp = Path(name)
        port = free_port()
        with (tmp / "broker.out").open("wb") as log:
            proc = start_broker(tmp, port, log, OVERRIDES)
        try:
            wait_port(port)
            took = asyncio.run(run(f"127.0.0.1:{port}", args.transactions, args.per_txn, args.size))
        finally:
            proc.terminate()
            proc.wait(30)
    n = args.transactions
    print(f"{n} transactions of {args.per_txn} records of {args.size} bytes, one partition")
    for how, seconds in took.items():
        print(f"{how:<20} {n / seconds:>8,.1f} transactions/s  {seconds / n * 1000:>7.2f} ms each")
    base, tpc = took["commit_transaction"], took["prepare + complete"]
    print(f"prepare + complete / commit_transaction: {tpc / base:.2f}x the time")


if __name__ == "__main__":
    main()
