"""The kafpy Spark sink exactly once against at least once, for the same streaming query.

    python bench/spark_sink.py [--records 200000] [--size 100] [--partitions 2]
                               [--per-batch 20000] [--rounds 2]

Starts a `kafpy server` with transactions on one broker and
`transaction.two.phase.commit.enable=true` (data in a temporary directory), writes
--records records of --size bytes to a source topic of --partitions partitions, then on a
`local[2]` SparkSession runs the query source -> `concat(value, '!')` -> sink topic with
`trigger(availableNow=True)` and `maxOffsetsPerTrigger` --per-batch, once with the
default (at-least-once, idempotent producers) sink and once with `exactlyOnce=true`, each
into a new sink topic and checkpoint, alternately --rounds times. Prints the best rows/s
of each, the number of micro-batches and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_support import free_port, local_spark, start_broker, wait_port  # noqa: E402

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.client.kafka_client import KafkaClient  # noqa: E402
from kafpy.client.producer import BatchProducer  # noqa: E402

OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "offsets.topic.num.partitions": "4",
    "transaction.two.phase.commit.enable": "true",
}
SEND = 5_000


async def load(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    async with KafkaClient(bootstrap) as client:
        producer = BatchProducer(client, acks=1)
        value = os.urandom(size // 2).hex().encode()[:size]
        for start in range(0, records, SEND):
            n = min(SEND, records - start)
            await producer.send(topic, [(None, value)] * n, partition=(start // SEND) % partitions)


def run_query(spark, bootstrap: str, source: str, tmp: Path, per_batch: int,  # type: ignore[no-untyped-def]
              exactly_once: bool) -> tuple[float, int]:  # fmt: skip
    sink = f"sink-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    query = (
        spark.readStream.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_batch))
        .load()
        .selectExpr("concat(CAST(value AS STRING), '!') AS value")
        .writeStream.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("exactlyOnce", str(exactly_once).lower())
        .option("checkpointLocation", str(tmp / sink))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - start
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    return elapsed, len(query.recentProgress)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--per-batch", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with tempfile.TemporaryDirectory(prefix="kafpy-spark-sink-bench-") as name:
        tmp = Path(name)
        port = free_port()
        with (tmp / "broker.out").open("wb") as log:
            proc = start_broker(tmp, port, log, OVERRIDES)
        try:
            wait_port(port)
            bootstrap = f"127.0.0.1:{port}"
            asyncio.run(load(bootstrap, "bench-in", args.records, args.size, args.partitions))
            spark = local_spark()
            best = {False: float("inf"), True: float("inf")}
            batches = 0
            for _ in range(args.rounds):
                for eos in (False, True):
                    elapsed, batches = run_query(
                        spark, bootstrap, "bench-in", tmp, args.per_batch, eos
                    )
                    best[eos] = min(best[eos], elapsed)
            spark.stop()
        finally:
            proc.terminate()
            proc.wait(30)
    alo, eos = args.records / best[False], args.records / best[True]
    print(f"{args.records:,} records of {args.size} bytes, {batches} micro-batches of "
          f"{args.per_batch:,}, {args.partitions} partitions, best of {args.rounds}")  # fmt: skip
    print(f"at-least-once sink: {alo:,.0f} rows/s ({best[False]:.1f} s)")
    print(f"exactly-once sink:  {eos:,.0f} rows/s ({best[True]:.1f} s)")
    print(f"exactly-once / at-least-once: {eos / alo:.2f}")


if __name__ == "__main__":
    main()
