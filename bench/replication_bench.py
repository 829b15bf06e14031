"""Replication benchmark: produce throughput with RF 3 acks=all versus RF 1 acks=1.

Run: `python bench/replication_bench.py [--records 2000000] [--size 100] [--partitions 3]
[--dir DIR] [--keep]`

Starts a real ZooKeeper (in this process, through ZooKeeperServer) and three `kafpy
server` processes (kafpy.tools.local_cluster), creates two topics with the same number
of partitions (leaders spread over the brokers) — one RF 1, one RF 3 with
min.insync.replicas=2 — and sends the same records to each with one confluent-kafka
producer (acks=1 for RF 1, acks=all for RF 3), timing from the first produce() until
flush() returns (every record acknowledged). Both runs are on the same machine in the
same run; the ratio is what to look at (Kafka's own is about 51 %).
Progress goes to stderr, the figures to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import confluent_kafka  # noqa: E402

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.metadata.zookeeper_server import ZooKeeperServer  # noqa: E402
from kafpy.tools.local_cluster import LocalCluster  # noqa: E402


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


async def create_topic(
    bootstrap: str, topic: str, partitions: int, rf: int, configs: dict[str, str]
) -> None:
    async with AdminClient.connect(bootstrap, request_timeout_ms=60000) as admin:
        await admin.create_topics([NewTopic(topic, partitions, rf, configs=configs)])


def produce(bootstrap: str, topic: str, acks: str, records: int, size: int) -> float:
    """Seconds to send `records` values of `size` bytes and have them all acknowledged."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": 5,
        "batch.size": 262144,
        "queue.buffering.max.messages": 1000000,
        "message.timeout.ms": 300000,
    })  # fmt: skip
    failed = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    # warm up: metadata and connections
    producer.produce(topic, b"warm-up", on_delivery=on_delivery)
    producer.flush(60)
    value = b"x" * size
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    elapsed = time.perf_counter() - start
    if left or failed:
        raise SystemExit(f"{topic}: {left} records not delivered, {failed} failed")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000000)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument(
        "--dir", type=Path, default=None, help="working directory (default: temporary)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    args = parser.parse_args()

    base = args.dir or Path(tempfile.mkdtemp(prefix="kafpy-replication-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(base / "zookeeper", tick_time_ms=500)
    cluster: LocalCluster | None = None
    try:
        progress(f"Starting ZooKeeper and 3 brokers in {base}")
        zookeeper.start()
        cluster = LocalCluster(base / "cluster", 3, zookeeper_connect=zookeeper.connect_string)
        cluster.start(lambda m: progress(f"  {m}"))
        bootstrap = cluster.bootstrap_servers
        asyncio.run(create_topic(bootstrap, "rf1", args.partitions, 1, {}))
        asyncio.run(
            create_topic(bootstrap, "rf3", args.partitions, 3, {"min.insync.replicas": "2"})
        )
        time.sleep(2)  # leaders elected and followers fetching before timing
        results = {}
        for topic, acks in (("rf1", "1"), ("rf3", "all")):
            progress(
                f"Producing {args.records} records of {args.size} bytes to {topic} with acks={acks}"
            )
            seconds = produce(bootstrap, topic, acks, args.records, args.size)
            rate = args.records / seconds
            results[topic] = rate
            print(f"{topic} acks={acks}: {args.records} records in {seconds:.2f} s = {rate:,.0f} records/s "
                  f"({rate * args.size / 1e6:.1f} MB/s of values)")  # fmt: skip
        print(f"RF 3 acks=all / RF 1 acks=1: {100 * results['rf3'] / results['rf1']:.0f} %")
    finally:
        if cluster is not None:
            cluster.stop(timeout_s=60)
        zookeeper.stop()
        if args.dir is None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
