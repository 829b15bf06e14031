"""Reassignment benchmark: time to move replicas between brokers, unthrottled, against a
plain consumer fetching the same bytes in the same run.

Run: `python bench/reassign_bench.py [--mb 64] [--partitions 4] [--size 10000] [--dir DIR]
[--keep]` (`--mb 1024` moves 1 GiB).

Starts a real ZooKeeper and three `kafpy server` processes (kafpy.tools.local_cluster),
creates a topic whose partitions all have one replica on broker 0, fills it with about
`--mb` MB of values, then moves every partition to broker 1 with AlterPartitionReassignments
(kafpy's admin client), timing from the request until ListPartitionReassignments is empty
(broker 1 fetched everything and broker 0's replicas were deleted). Then a confluent-kafka
consumer reads the same partitions from the beginning, timed until it has every record.
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
from kafpy.common.topic_partition import TopicPartition  # noqa: E402
from kafpy.metadata.zookeeper_server import ZooKeeperServer  # noqa: E402
from kafpy.tools.local_cluster import LocalCluster  # noqa: E402

TOPIC = "moving"


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fill(bootstrap: str, partitions: int, records: int, size: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "1",
                                         "linger.ms": 20, "batch.size": 1048576,
                                         "message.timeout.ms": 300000})  # fmt: skip
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(300):
        raise SystemExit("the topic could not be filled")


async def move(bootstrap: str, partitions: int) -> float:
    """Seconds from AlterPartitionReassignments to no reassignment left."""
    async with AdminClient.connect(bootstrap, request_timeout_ms=60000) as admin:
        start = time.perf_counter()
        errors = await admin.alter_partition_reassignments(
            {TopicPartition(TOPIC, p): [1] for p in range(partitions)}
        )
        if any(e is not None for e in errors.values()):
            raise SystemExit(f"reassignment refused: {errors}")
        while await admin.list_partition_reassignments():
            await asyncio.sleep(0.05)
        return time.perf_counter() - start


def consume(bootstrap: str, partitions: int, records: int) -> float:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                                         "enable.auto.commit": False,
                                         "fetch.max.bytes": 52428800})  # fmt: skip
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(partitions)])  # fmt: skip
    seen = 0
    start = time.perf_counter()
    try:
        while seen < records:
            for msg in consumer.consume(10000, timeout=1.0):
                if not msg.error():
                    seen += 1
        return time.perf_counter() - start
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="MB of values to move (1024: 1 GiB)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--size", type=int, default=10000, help="value size in bytes")
    parser.add_argument("--dir", type=Path, default=None, help="working directory")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    args = parser.parse_args()
    records = args.mb * 1_000_000 // args.size
    megabytes = records * args.size / 1e6

    base = args.dir or Path(tempfile.mkdtemp(prefix="kafpy-reassign-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(base / "zookeeper", tick_time_ms=500)
    cluster: LocalCluster | None = None
    try:
        progress(f"Starting ZooKeeper and 3 brokers in {base}")
        zookeeper.start()
        cluster = LocalCluster(base / "cluster", 3, zookeeper_connect=zookeeper.connect_string)
        cluster.start(lambda m: progress(f"  {m}"))
        bootstrap = cluster.bootstrap_servers

        async def create() -> None:
            async with AdminClient.connect(bootstrap, request_timeout_ms=60000) as admin:
                assignment = {p: [0] for p in range(args.partitions)}
                await admin.create_topics([NewTopic(TOPIC, replica_assignment=assignment)])

        asyncio.run(create())
        time.sleep(2)
        progress(f"Filling {TOPIC} ({args.partitions} partitions on broker 0) with "
                 f"{records} records of {args.size} bytes")  # fmt: skip
        fill(bootstrap, args.partitions, records, args.size)
        progress("Moving every partition to broker 1")
        move_seconds = asyncio.run(move(bootstrap, args.partitions))
        print(f"reassignment: {megabytes:.0f} MB moved in {move_seconds:.2f} s = "
              f"{megabytes / move_seconds:.1f} MB/s")  # fmt: skip
        progress("Consuming the same records from broker 1")
        consumed = consume(bootstrap, args.partitions, records)
        print(f"consumer:     {megabytes:.0f} MB fetched in {consumed:.2f} s = "
              f"{megabytes / consumed:.1f} MB/s")  # fmt: skip
        print(f"reassignment / consumer rate: {100 * consumed / move_seconds:.0f} %")
    finally:
        if cluster is not None:
            cluster.stop(timeout_s=60)
        zookeeper.stop()
        if args.dir is None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
